"""The report of any mix of verdicts renders: all failed, all oom, all invalid, mixed, zero samples
(issue 24). Fake campaigns from tests/fakecampaign.py; hypothesis picks the mixes."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idsbench.cli import report as report_cli
from idsbench.report import write_report
from tests.fakecampaign import FakeCase, write_campaign
from tests.unit.test_report import _cli

STATUSES = ("ok", "failed", "oom", "invalid", "incomplete")
NO_OK = "No sample of this campaign is ok"


def _cases(mix: list[list[str]]) -> list[FakeCase]:
    """One case per entry (setups alternate so cases differ), its samples' statuses as given;
    an empty entry is a case whose only sample left no summary (it never finished)."""
    setups = ("baremetal", "container", "vm")
    out = []
    for i, statuses in enumerate(mix):
        out.append(FakeCase(setup=setups[i % 3], replayers=1 + i // 3, samples=max(len(statuses), 1),
                            statuses=statuses, incomplete=[0] if not statuses else ()))
    return out


def _check(root: Path, mix: list[list[str]]) -> str:
    html = write_report(root).read_text()
    assert (root / "tables" / "cases.json").is_file() and (root / "tables" / "cases.csv").is_file()
    drawn = set(re.findall(r'data-figure="([^"]+)"', html))
    any_ok = any(s == "ok" for statuses in mix for s in statuses)
    if not any_ok:
        assert NO_OK in html, "the report must say what is missing"
        assert not drawn & {"sensor_cpu_time", "packets_cumulative", "drop_ratio_load"}, drawn
    for statuses in mix:  # every non-ok verdict is listed with its reason
        for k, s in enumerate(statuses):
            if s != "ok":
                assert f"{s}: sensor {s} in sample {k}" in html
    return html


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(STATUSES), min_size=0, max_size=3), min_size=1, max_size=4))
def test_report_renders_for_any_mix_of_verdicts(mix: list[list[str]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = write_campaign(Path(d) / "c", _cases(mix), per_second=False)
        _check(root, mix)


def test_report_of_all_oom_and_all_failed_and_all_invalid(tmp_path: Path) -> None:
    for status in ("oom", "failed", "invalid"):
        mix = [[status, status], [status]]
        root = write_campaign(tmp_path / status, _cases(mix))
        html = _check(root, mix)
        assert f"{status}: sensor {status} in sample 1" in html  # every sample's reason, not the first only


def test_report_cli_on_a_campaign_without_ok_sample_exits_0(tmp_path: Path) -> None:
    root = write_campaign(tmp_path / "c", _cases([["oom"]]))
    code, out = _cli(report_cli, ["report", str(root), "--no-index"])
    assert code == 0 and out.strip() == str(root / "report.html")


def test_report_of_a_campaign_with_zero_samples(tmp_path: Path) -> None:
    """A campaign that ended before its first sample finished: only campaign.json and empty dirs."""
    mix: list[list[str]] = [[]]
    root = write_campaign(tmp_path / "c", _cases(mix))
    for summary in root.glob("cases/*/s*/summary.json"):
        summary.unlink()
    html = write_report(root).read_text()
    assert NO_OK in html
