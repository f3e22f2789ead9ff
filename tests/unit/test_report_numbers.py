"""Report and results table (issue 41 item 6): the run's warnings in the report's Warnings section, no Python
None in it, the right words when every case is bare metal, a duet's two sides told apart, and the CPU per
packet with its CI (and net of the sensor's idle housekeeping) in the text table, the JSON and the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from idsbench.cli.main import main
from idsbench.probemodel import CpuInfo, HostProbe, NoiseProbe
from idsbench.report import tables, write_report
from idsbench.store.schema import CaseParams, CaseResult
from tests.fakecampaign import FakeCase, write_campaign

# 20,000 packets over a 10-s span: 0.2 CPU s = 10 µs/pkt; idle 0.004 cores × 10 s = 0.04 s: 8 µs/pkt net
COSTED = dict(samples=2, cpu_s=[0.2, 0.21], idle_cores=0.004)


def _visible(html: str) -> str:
    """The page's text without embedded figures and the spec's JSON (which may say null, never None)."""
    html = re.sub(r'data:[^"\')]+', "", html)
    html = re.sub(r"<pre[^>]*>.*?</pre>", "", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def test_cpu_per_packet_and_its_net_in_the_table_and_the_json(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = write_campaign(tmp_path, [FakeCase(**COSTED)], per_second=False)  # type: ignore[arg-type]
    assert main(["results", str(root), "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["sensor_us_per_pkt"] == pytest.approx(10.25) and row["sensor_us_per_pkt_ci"] == [10.0, 10.5]
    assert row["sensor_us_per_pkt_net"] == pytest.approx(8.25) and row["sensor_us_per_pkt_net_ci"] == [8.0, 8.5]
    assert row["ci_level"] == 0.5
    assert main(["results", str(root)]) == 0
    text = capsys.readouterr().out
    assert "sensor µs/pkt" in text and "sensor µs/pkt net of idle" in text
    assert "10.25 [10.00–10.50]" in text and "8.25 [8.00–8.50]" in text
    assert "its idle housekeeping over that span is included" in text and "net of idle: the same minus" in text


def test_without_an_idle_window_there_is_no_net_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_campaign(tmp_path, [FakeCase(samples=2, cpu_s=0.2)], per_second=False)
    assert main(["results", str(root), "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["sensor_us_per_pkt"] == 10.0 and row["sensor_us_per_pkt_net"] is None


def test_the_report_carries_the_runs_warnings_and_no_none(tmp_path: Path) -> None:
    root = write_campaign(tmp_path, [FakeCase(replayers=1, **COSTED), FakeCase(replayers=2, **COSTED)],  # type: ignore[arg-type]
                          per_second=False)
    probe = HostProbe(cpu=CpuInfo(model="Fake CPU", count=2),
                      noise=NoiseProbe(steal_pct=0.0, loop_cv=0.2, piece_s=2.0, cpus=(1,)))
    (root / "probe.json").write_text(probe.model_dump_json(by_alias=True))
    html = write_report(root).read_text()
    warnings = html[html.index('id="warnings"'):html.index('id="figures"')]
    assert "samples = 2: the confidence intervals of the medians cover 50%, not 95%" in warnings
    assert "the host is noisier than the precision asked" in warnings
    text = _visible(html)
    assert not re.search(r"\bNone\b", text), re.findall(r".{60}\bNone\b.{60}", text)
    assert "every case runs on baremetal" in text and "no baremetal cases" not in text
    assert "sensor µs/pkt" in text and "net of idle" in text


def _side(side: str, rules: str) -> CaseResult:
    params = CaseParams(trace="x.pcap", replayers=1, rate="recorded", rules=rules, duet_side=side)
    return CaseResult(case=f"c-{side}", params=params, samples=2, duet_side=side, duet_pair="p0", sensor_threads=1)


def test_a_duets_two_sides_read_apart_in_the_results_table() -> None:
    table = tables.results_table([_side("a", "base"), _side("b", "more")])
    notes = [r.cells[0].note for r in table.rows]  # type: ignore[union-attr]
    assert notes == ["duet side a: rules=base, 1 worker", "duet side b: rules=more, 1 worker"]
    aa = tables.results_table([_side("a", "base"), _side("b", "base")])
    assert [r.cells[0].note for r in aa.rows] == ["duet side a: A/A, 1 worker", "duet side b: A/A, 1 worker"]  # type: ignore[union-attr]
