"""The host-side profile per case: the monitor's figure over the profiled window, medians, the results
row keys and the report's table (fake campaigns; the real run is in tests/integration/test_vm.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idsbench.analysis import case_table
from idsbench.analysis.hostside import case_host_side, monitor_cpu_s
from idsbench.report import write_report
from idsbench.report.hostside import host_side_view
from idsbench.store.reader import load_campaign
from idsbench.store.schema import HOST_SIDE_CATEGORIES

from ..fakecampaign import FakeCase, write_campaign

SHARES = {"guest": 0.5, "emulation": 0.3, "io": 0.05, "irq_timers": 0.05, "polling": 0.04, "other": 0.06}


def test_monitor_cpu_over_a_window_counts_the_part_of_each_row_inside():
    rows = [(0.0, None), (1.0, 50.0), (2.0, 100.0), (3.0, 20.0), (4.0, None)]
    assert monitor_cpu_s(rows, 1.0, 3.0) == pytest.approx(1.0 + 0.2)
    assert monitor_cpu_s(rows, 0.5, 2.5) == pytest.approx(0.25 + 1.0 + 0.1)   # rows straddling both edges
    assert monitor_cpu_s(rows, 3.5, 4.0) is None                             # only an empty cell
    assert monitor_cpu_s([], 0.0, 1.0) is None


def _vm_campaign(root: Path, host_cpu: list[float], *, split: str = "perf") -> Path:
    case = FakeCase(setup="vm", labels=["emulated"], sensor_cpu=80.0, duration_s=10.0, samples=len(host_cpu))
    write_campaign(root, [case])
    for k, cpu in enumerate(host_cpu):
        path = root / "cases" / case.case_id / f"s{k}" / "summary.json"
        s = json.loads(path.read_text())
        t0 = s["replay"]["start_unix"] + 1.0
        s["profile"] = {
            "view": "qemu", "window_s": 8.0, "recorded": split == "perf", "start_unix": t0, "end_unix": t0 + 8.0,
            "host": {"subject": "qemu", "processes": ["qemu-system-x86[4242]"], "accel": "tcg", "emulated": True,
                     "split": split, "cpu_s": cpu, "measured_cpu_s": cpu + 0.01,
                     "measured_by": "the sensor's cgroup (qemu)", "monitor_column": "sensor_cpu_pct",
                     "categories": [{"name": n, "cpu_s": cpu * SHARES[n], "share": SHARES[n]}
                                    for n in HOST_SIDE_CATEGORIES],
                     "threads": [{"name": "CPU 0/TCG", "role": "vcpu", "cpu_s": cpu * 0.85, "perf_samples": 90},
                                 {"name": "qemu-system-x86", "role": "main", "cpu_s": cpu * 0.15, "perf_samples": 9}],
                     "perf_samples": 99}}
        path.write_text(json.dumps(s))
    return root


def test_case_figures_compare_the_categories_with_the_monitor(tmp_path: Path):
    root = _vm_campaign(tmp_path / "c", [6.2, 6.4, 6.5])
    campaign = load_campaign(root)
    h = case_host_side(campaign, campaign.cases[0].case_id)
    assert h is not None and h.emulated and h.accel == "tcg" and h.split == "perf" and h.used == 3
    assert h.cpu_s == 6.4 and h.window_s == 8.0
    assert [c.name for c in h.categories] == list(HOST_SIDE_CATEGORIES)
    assert {c.name: c.share for c in h.categories} == SHARES
    # fakecampaign's monitor: 80% of a core throughout the replay -> 6.4 s over the 8-s window
    assert h.monitor_cpu_s == pytest.approx(6.4, abs=0.02)
    assert h.worst_gap == pytest.approx(-0.2 / 6.4, abs=0.005)
    assert h.threads[0] == ("CPU 0/TCG", "vcpu", pytest.approx(6.4 * 0.85, abs=1e-3))
    row = case_table(campaign)[0].to_row()
    assert row["host_side_of"] == "qemu" and row["host_side_cpu_s"] == 6.4
    assert row["host_side_guest_share"] == 0.5 and row["host_side_other_share"] == 0.06
    assert row["host_side_gap"] == pytest.approx(-0.0312, abs=0.005)
    assert "emulated" in row["labels"]


def test_the_report_shows_the_host_side_beside_the_profile(tmp_path: Path):
    root = _vm_campaign(tmp_path / "c", [6.2, 6.4, 6.5])
    html = write_report(root).read_text()
    assert 'id="profile"' in html and "Host side: qemu" in html and "emulated (TCG)" in html
    for title in ("guest execution", "emulation and exits", "virtio/vhost I/O", "interrupts and timers",
                  "polling", "other"):
        assert f"<td>{title}</td>" in html
    assert "<code>sensor_cpu_pct</code>" in html and "-3.1%" in html and "50.0%" in html


def test_samples_split_by_thread_role_only_are_named_so(tmp_path: Path):
    campaign = load_campaign(_vm_campaign(tmp_path / "c", [5.0], split="threads"))
    h = case_host_side(campaign, campaign.cases[0].case_id)
    assert h is not None and h.split == "threads"
    view = host_side_view(campaign, campaign.cases[0].case_id)
    assert view is not None and view["split"].startswith("by thread role only") and view["total"] == "5.00"


def test_cases_without_a_host_side_profile_carry_no_host_side_keys(tmp_path: Path):
    root = write_campaign(tmp_path / "c", [FakeCase()])
    row = case_table(load_campaign(root))[0].to_row()
    assert not [k for k in row if k.startswith("host_side")]
