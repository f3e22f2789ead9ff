"""A campaign written by the code before campaign.json schema 3 (tests/data/campaigns/main-0c08791: main at
0c08791, real Suricata and the native replayer, 2 cases x 2 samples of a generated web trace whose every
flow carries a marker, with the marker rules; eve.json, logs and configs left out) reads through the migration and gives exactly what that
code gave: the `results --format json` rows (plus the new `alerts_by_sid`), the report's inputs and every
case's key. expected.json was recorded with that code (tests/data/campaigns/record_expected.py)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from idsbench.cli.main import main
from idsbench.report.html import _environment, _meta
from idsbench.store.casekey import case_key
from idsbench.store.reader import load_campaign, probe_or_none

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "campaigns" / "main-0c08791"


@pytest.fixture(scope="module")
def expected() -> dict[str, object]:
    doc: dict[str, object] = json.loads((FIXTURE / "expected.json").read_text())
    return doc


@pytest.fixture
def root(tmp_path: Path) -> Path:
    copy = tmp_path / "main-0c08791"
    shutil.copytree(FIXTURE, copy, ignore=shutil.ignore_patterns("expected.json"))
    return copy


# Keys added to the results row since main 0c08791 (each null for a campaign written before it): the
# worker count the sensor ran, a VM's host-side memory, the CPU per packet net of idle (issue 41),
# the host-speed witness (issue 42 item 7).
ADDED_ROW_KEYS = {"sensor_threads", "host_mem_bytes", "host_mem_bytes_ci", "host_mem_locked_bytes",
                  "host_mem_locked_bytes_ci", "sensor_us_per_pkt_net", "sensor_us_per_pkt_net_ci",
                  "host_speed", "host_speed_ci", "sensor_us_per_pkt_norm", "sensor_us_per_pkt_norm_ci"}


# Spec keys removed since main 0c08791: sensor.capture_method folded into sensor.capture (idsbench.legacy: its
# "afpacket", the nodetect engine's default reader, reads as no capture asked).
REMOVED_SPEC_KEYS = {"sensor": ("capture_method",)}


def _without_removed(old: dict[str, object]) -> dict[str, object]:
    spec = dict(old["spec"])  # type: ignore[call-overload]
    for section, keys in REMOVED_SPEC_KEYS.items():
        spec[section] = {k: v for k, v in spec[section].items() if k not in keys}
    return {**old, "spec": spec}


def _without_added(new: object, old: object) -> object:
    """`new` with the keys `old` does not have removed: what a newer spec or planned case adds to a stored
    one (read with its default, as the model gives it)."""
    if isinstance(new, dict) and isinstance(old, dict):
        for key in [k for k in new if k not in old]:
            new.pop(key)
        return {k: _without_added(v, old[k]) for k, v in new.items()}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [_without_added(n, o) for n, o in zip(new, old)]
    return new


def _results(root: Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["results", str(root), "--format", "json"]) == 0
    return out.getvalue()


def test_the_stored_campaign_is_schema_2(root: Path) -> None:
    doc = json.loads((root / "campaign.json").read_text())
    assert doc["schema"] == 2 and "suricata" in doc["environment"] and "engines" not in doc["environment"]
    assert sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) < 300_000


def test_results_rows_are_those_of_the_code_that_wrote_it(root: Path, expected: dict[str, object]) -> None:
    rows = json.loads(_results(root))
    old = expected["rows"]
    assert isinstance(old, list) and len(rows) == len(old) == 2
    for row, before, keys in zip(rows, old, expected["row_keys"], strict=True):  # type: ignore[call-overload]
        alerts = row.pop("alerts_by_sid")
        for key in ADDED_ROW_KEYS:  # main's samples did not record these (the sensor's log is left out)
            assert row.pop(key) is None, key
        # nor their capture method (issue 30): none asked, none recorded
        assert (row.pop("capture"), row.pop("capture_options"), row.pop("waterfall_capture")) == (None, {}, {})
        # nor a bypass (issue 30 item 3): off, nothing bypassed
        assert (row.pop("bypass"), row.pop("bypass_settings"), row.pop("bypassed_pkts"),
                row.pop("bypassed_pkts_ci")) == ("off", {}, 0, [0, 0])
        assert row == before
        assert list(row) == keys                                # the same keys in the same order
        # the marker rules' alerts per signature (medians over the 2 ok samples): what they raise offline
        truth = json.loads((root / "truth" / f"{row['case']}.json").read_text())["alerts_by_sid"]
        assert alerts == truth and sum(alerts.values()) == row["alerts"] == 10 * row["replayers"]


def test_the_report_reads_the_same_inputs(root: Path, expected: dict[str, object]) -> None:
    campaign = load_campaign(root)
    assert [list(e) for e in _environment(campaign)] == expected["environment"]
    assert {k: v for k, v in _meta(campaign).items() if k != "root"} == expected["meta"]
    dumped = campaign.doc.model_dump(mode="json", include={"spec", "inputs", "cases"})
    # newer spec keys and case parameters (sensor.threads, setup.vfio_device …) read as their defaults
    before = _without_removed(expected["spec_json"])  # type: ignore[arg-type]
    assert _without_added(dumped, before) == before
    assert list(campaign.warnings) == expected["warnings"]
    assert campaign.doc.spec_problem is None and campaign.doc.environment.engines["suricata"].version


def test_case_keys_are_unchanged(root: Path, expected: dict[str, object]) -> None:
    campaign = load_campaign(root)
    probe = probe_or_none(root)
    assert probe is not None
    keys = {c.case_id: case_key(campaign.doc, c.params, probe, "fixture").fields() for c in campaign.cases}
    assert keys == expected["case_keys"]


def test_case_ids_are_unchanged(root: Path) -> None:
    """The stored spec, read by this version (older names renamed: idsbench.legacy), plans the case ids the
    campaign ran: a Suricata campaign's ids do not change, so it reads and resumes as it ran."""
    from idsbench.plan import plan

    campaign = load_campaign(root)
    planned = [c.case_id for c in plan(campaign.doc.spec)]
    assert planned == [c.case_id for c in campaign.doc.cases] and len(planned) == 2
    assert sorted(planned) == sorted(p.name for p in (root / "cases").iterdir())


def test_the_index_returns_the_same_rows(root: Path) -> None:
    """The index (schema 5) stores the typed CaseResult and gives back the same rows, alerts_by_sid too."""
    from idsbench.analysis.publish import index_campaign
    from idsbench.store.index_query import query_cases

    rows = json.loads(_results(root))
    index_campaign(root)
    assert [r.to_row() for _, r in query_cases(root.parent)] == rows
