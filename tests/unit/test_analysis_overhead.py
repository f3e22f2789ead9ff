"""Overhead vs a baseline setup per load level: signs, percentages and CIs."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.analysis import overhead
from idsbench.store.reader import load_campaign
from tests.fakecampaign import FakeCase, standard_campaign, write_campaign


def test_overhead_signs_per_load(tmp_path: Path):
    root, _ = standard_campaign(tmp_path, samples=5)
    rows = overhead(load_campaign(root))
    assert [(r.setup, r.contender.replayers) for r in rows] == [("container", 1), ("container", 2), ("container", 4)]
    for r in rows:
        host = r.metrics["host_cpu_pct"]
        assert host.diff == pytest.approx(8.0) and host.pct == pytest.approx(800 / (12 * r.contender.replayers))
        assert host.diff_ci is not None
        lo, hi = host.diff_ci
        assert 0 < lo <= 8.0 <= hi
        assert r.metrics["sensor_rss_peak_bytes"].diff == pytest.approx(80e6)
    r4 = rows[-1].metrics
    assert r4["dropped_pkts"].diff == 4000 and r4["drop_ratio"].diff == pytest.approx(0.05)
    assert r4["decode_ratio"].diff == pytest.approx(-0.05) and r4["decode_ratio"].pct == pytest.approx(-5.0)
    assert r4["decode_ratio"].pct_ci is not None and r4["decode_ratio"].pct_ci[1] < 0
    assert rows[0].metrics["dropped_pkts"].diff == 0 and rows[0].metrics["dropped_pkts"].pct is None


def test_no_baseline_means_no_overhead(tmp_path: Path):
    root = write_campaign(tmp_path, [FakeCase(setup="container"), FakeCase(setup="vm")])
    assert overhead(load_campaign(root)) == []
    assert len(overhead(load_campaign(root), baseline="container")) == 1
