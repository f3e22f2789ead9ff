"""analysis: loading, per-case medians and CIs, warnings, incomplete/corrupt samples (fake campaigns)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from idsbench.analysis import case_table as _case_table
from idsbench.analysis.sample import METRICS
from idsbench.errors import InputError
from idsbench.store.reader import load_campaign
from tests.fakecampaign import FakeCase, standard_campaign, write_campaign

DESIGN_KEYS = ("case", "setup", "trace", "replayers", "rate", "samples", "trace_pkts", "sent_pkts",
               "captured_pkts", "dropped_pkts", "decoded_pkts", "decoded_bytes", "alerts", "drop_ratio",
               "sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct", "flows", "stable_after_s")


def case_table(campaign, **options):
    """The results contract rows (what `idsbench results --format json` prints)."""
    return [r.to_row() for r in _case_table(campaign, **options)]


def _row(rows, case):
    return next(r for r in rows if r["case"] == case.case_id)


def test_case_table_has_design_keys_medians_and_cis(tmp_path: Path):
    cpu = [50.0, 40.0, 70.0, 45.0, 55.0]
    case = FakeCase(samples=5, sensor_cpu=cpu, replayers=2, rss_bytes=[3e8, 1e8, 2e8, 5e8, 4e8],
                    drop_fraction=[0.0, 0.1, 0.2, 0.0, 0.0])
    c = load_campaign(write_campaign(tmp_path, [case]))
    (row,) = case_table(c)
    for key in DESIGN_KEYS + ("status", "labels", "warnings"):
        assert key in row, key
    for key in METRICS:
        assert f"{key}_ci" in row
    assert row["samples"] == 5 and row["replayers"] == 2 and row["status"] == "ok"
    assert row["ci_level"] == 0.9375  # 5 samples: min..max covers 1 - 2^(1-5)
    assert row["sensor_cpu_pct"] == statistics.median(cpu) == 50
    assert row["sensor_cpu_pct_ci"] == [40, 70]  # 5 samples: the CI is min..max
    assert row["sensor_rss_peak_bytes"] == 300_000_000
    assert row["sent_pkts"] == row["captured_pkts"] == 2 * case.trace_pkts
    drops = sorted(round(f * 40_000) for f in (0.0, 0.1, 0.2, 0.0, 0.0))
    assert row["dropped_pkts"] == drops[2] == 0 and row["dropped_pkts_ci"] == [0, 8000]
    assert row["decoded_pkts"] == 40_000
    assert row["drop_ratio_ci"] == [0, 0.2]


def test_ci_narrows_with_many_samples(tmp_path: Path):
    cpu = [float(v) for v in range(10, 30)]  # 20 samples
    c = load_campaign(write_campaign(tmp_path, [FakeCase(samples=20, sensor_cpu=cpu)]))
    (row,) = case_table(c)
    lo, hi = row["sensor_cpu_pct_ci"]
    assert 10 < lo < row["sensor_cpu_pct"] < hi < 29  # strictly inside min..max
    assert (lo, hi) == (15, 24)  # ranks 6 and 15 of 20 (order-statistic 95% CI)


def test_missing_counters_count_as_zero(tmp_path: Path):
    case = FakeCase(missing_counters=("alerts", "flows", "dropped_pkts"))
    (row,) = case_table(load_campaign(write_campaign(tmp_path, [case])))
    assert row["alerts"] == 0 and row["flows"] == 0 and row["dropped_pkts"] == 0
    assert row["decoded_pkts"] == case.sent_pkts


def test_disagreeing_samples_warn_naming_case_and_fix(tmp_path: Path):
    calm = FakeCase(setup="baremetal", sensor_cpu=[40.0, 41.0, 40.5])
    noisy = FakeCase(setup="container", sensor_cpu=[20.0, 40.0, 60.0])
    rows = case_table(load_campaign(write_campaign(tmp_path, [calm, noisy])))
    assert not [w for w in _row(rows, calm)["warnings"] if "disagree" in w]
    (w,) = [w for w in _row(rows, noisy)["warnings"] if "disagree" in w]
    assert noisy.case_id in w and "sensor_cpu_pct" in w and "more samples" in w
    # a looser threshold silences it
    rows = case_table(load_campaign(tmp_path), cv_threshold=0.6)
    assert not [w for w in _row(rows, noisy)["warnings"] if "disagree" in w]


def test_failed_samples_give_status_and_ok_medians(tmp_path: Path):
    case = FakeCase(samples=3, statuses=["ok", "oom", "ok"], sensor_cpu=[10.0, 99.0, 30.0])
    dead = FakeCase(setup="container", samples=2, statuses=["oom", "oom"])
    rows = case_table(load_campaign(write_campaign(tmp_path, [case, dead])))
    row = _row(rows, case)
    assert row["status"] == "ok" and row["samples"] == 2 and row["sensor_cpu_pct"] == 20
    assert row["status_counts"] == {"ok": 2, "oom": 1} and row["samples_failed"] == 1
    assert any("1 sample(s) not ok (oom:" in w for w in row["warnings"])
    dead_row = _row(rows, dead)  # no ok sample: no medians, the verdict names why
    assert dead_row["status"] == "oom" and dead_row["samples"] == 0 and dead_row["sensor_cpu_pct"] is None
    assert dead_row["status_counts"] == {"oom": 2}


def test_labels_are_the_union(tmp_path: Path):
    case = FakeCase(labels=["emulated"])
    (row,) = case_table(load_campaign(write_campaign(tmp_path, [case])))
    assert row["labels"] == ["emulated"]


def test_incomplete_and_corrupt_samples_are_reported(tmp_path: Path):
    case = FakeCase(samples=4, incomplete=[1], corrupt=[2], sensor_cpu=[10.0, 50.0, 50.0, 30.0])
    c = load_campaign(write_campaign(tmp_path, [case]))
    reasons = {s.index: s.reason for s in c.incomplete}
    assert set(reasons) == {1, 2}
    assert "no summary.json" in reasons[1] and "corrupt summary.json" in reasons[2]
    corrupt_file = tmp_path / "cases" / case.case_id / "s2" / "summary.json"
    assert any(str(corrupt_file) in w and "corrupt" in w for w in c.warnings)
    (row,) = case_table(c)
    assert row["samples"] == 2 and row["sensor_cpu_pct"] == 20 and row["samples_incomplete"] == 2
    assert any("2 sample(s) incomplete" in w for w in row["warnings"])


def test_planned_but_never_run_case_is_listed(tmp_path: Path):
    ran = FakeCase()
    write_campaign(tmp_path, [ran])
    doc = json.loads((tmp_path / "campaign.json").read_text())
    doc["cases"].append({**doc["cases"][0], "case_id": "never-run-abc123", "replayers": 8})
    (tmp_path / "campaign.json").write_text(json.dumps(doc))
    c = load_campaign(tmp_path)
    rows = case_table(c)
    never = next(r for r in rows if r["case"] == "never-run-abc123")
    assert never["samples"] == 0 and never["status"] == "incomplete" and never["sensor_cpu_pct"] is None
    assert len([i for i in c.incomplete if i.case_id == "never-run-abc123"]) == 3


def test_bad_directories_raise_input_error_naming_dir(tmp_path: Path):
    with pytest.raises(InputError, match=str(tmp_path / "nope")):
        load_campaign(tmp_path / "nope")
    with pytest.raises(InputError, match="not an idsbench campaign") as exc:
        load_campaign(tmp_path)
    assert exc.value.fix and "idsbench run --out" in exc.value.fix
    (tmp_path / "campaign.json").write_text("{broken")
    with pytest.raises(InputError, match="campaign.json"):
        load_campaign(tmp_path)


def test_standard_campaign_orders_and_directions(tmp_path: Path):
    root, cases = standard_campaign(tmp_path, samples=5)
    rows = case_table(load_campaign(root))
    assert [r["case"] for r in rows] == [c.case_id for c in cases]
    bm4 = next(r for r in rows if r["setup"] == "baremetal" and r["replayers"] == 4)
    ct4 = next(r for r in rows if r["setup"] == "container" and r["replayers"] == 4)
    assert bm4["dropped_pkts"] == 0 and ct4["dropped_pkts"] > 0
    assert ct4["decoded_pkts"] + ct4["dropped_pkts"] == ct4["captured_pkts"]
    assert ct4["labels"] == ["emulated"] and bm4["labels"] == []


def test_sensor_threads_is_what_the_sensor_ran_and_the_report_shows_it(tmp_path: Path):
    from idsbench.report.html import write_report

    cases = [FakeCase(cpus=1.0, workers=1, threads=(1, 1, 1)),
             FakeCase(cpus=0.5, workers=2, threads=(1, 1, 1)),    # asked 2, the engine ran 1: said so
             FakeCase(cpus=None, memory=None)]                   # a campaign from before: unknown
    root = tmp_path / "c"
    write_campaign(root, cases)
    rows = {r.case: r for r in _case_table(load_campaign(root))}
    one, asked_two, old = (rows[c.case_id] for c in cases)
    assert one.to_row()["sensor_threads"] == 1 and not any("worker" in w for w in one.warnings)
    assert asked_two.sensor_threads == 1 and any("ran 1 worker thread(s), 2 were asked" in w for w in asked_two.warnings)
    assert old.to_row()["sensor_threads"] is None
    html = write_report(root).read_text()
    assert "1 CPU, 2g mem, 1 worker" in html


def test_a_long_failure_reason_is_clipped_visibly():
    from idsbench.analysis.cases import REASON_CHARS, _clip

    reason = "invalid: the sensor received none of the 199 packets sent: " + "x" * 400
    clipped = _clip(reason, REASON_CHARS)
    assert len(clipped) == REASON_CHARS and clipped.endswith("…") and reason.startswith(clipped[:-1])
    assert _clip("oom: sensor oom in sample 0", REASON_CHARS) == "oom: sensor oom in sample 0"
