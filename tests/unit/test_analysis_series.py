"""Alignment on seconds since replay start, resampling to the stats interval, per-checkpoint stats."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from idsbench.analysis import aligned
from idsbench.analysis.series import combine, resample
from idsbench.store.reader import load_campaign
from tests.fakecampaign import FakeCase, expected_counter, write_campaign


def test_resample_interpolates_on_the_grid():
    t = np.array([0.3, 1.3, 2.3, 3.3])
    s = resample(t, np.array([3.0, 13.0, 23.0, 33.0]), 1.0)
    assert list(s.index) == [0.0, 1.0, 2.0, 3.0]  # 0.0 is within half an interval of 0.3
    assert s[1.0] == pytest.approx(10.0) and s[3.0] == pytest.approx(30.0)
    assert s[0.0] == 3.0  # edge value, not extrapolated


def test_offset_and_drifting_clocks_land_on_the_right_checkpoint(tmp_path: Path):
    # three samples whose stats clocks tick at different phases and rates vs the replay start
    case = FakeCase(samples=3, duration_s=20.0, clock_offset_s=[0.0, 0.45, 0.8],
                    clock_drift=[0.0, 0.07, -0.05])
    c = load_campaign(write_campaign(tmp_path, [case], seed=7))
    frame = aligned(c, case.case_id, "counters", "decoded_pkts")
    by_t = frame.set_index("t_s")
    for t in (3.0, 7.0, 12.0, 16.0):
        truth = expected_counter(case, 0, "decoded_pkts", t)
        assert by_t.loc[t, "median"] == pytest.approx(truth, rel=0.01)
        assert by_t.loc[t, "n"] == 3
        # every sample agrees at this checkpoint, so the CI is tight around the truth
        assert by_t.loc[t, "hi"] - by_t.loc[t, "lo"] < 0.02 * truth
    # aligning by row number instead of time would be far off for the drifting sample
    raw = pd.read_csv(tmp_path / "cases" / case.case_id / "s1" / "counters.csv")
    naive_at_16 = raw["decoded_pkts"].iloc[4 + 16]
    assert abs(naive_at_16 - expected_counter(case, 1, "decoded_pkts", 16.0)) > 0.03 * case.sent_pkts


def test_checkpoints_are_multiples_of_the_stats_interval(tmp_path: Path):
    case = FakeCase(samples=2, duration_s=20.0, clock_offset_s=[0.3, 1.1])
    c = load_campaign(write_campaign(tmp_path, [case], stats_interval_s=2))
    frame = aligned(c, case.case_id, "monitor", "sensor_cpu_pct")
    assert len(frame) > 5
    assert all(abs(t / 2 - round(t / 2)) < 1e-9 for t in frame["t_s"])
    mid = frame[(frame["t_s"] >= 4) & (frame["t_s"] <= 16)]
    assert list(mid["median"]) == pytest.approx([40.0] * len(mid))


def test_missing_counter_column_counts_as_zero_and_missing_monitor_column_is_absent(tmp_path: Path):
    case = FakeCase(missing_counters=("alerts",))
    c = load_campaign(write_campaign(tmp_path, [case]))
    alerts = aligned(c, case.case_id, "counters", "alerts")
    assert len(alerts) and (alerts["median"] == 0).all()
    assert aligned(c, case.case_id, "monitor", "no_such_column").empty
    with pytest.raises(ValueError):
        aligned(c, case.case_id, "eve", "x")


def test_combine_counts_samples_per_checkpoint():
    a = pd.Series([1.0, 2.0, 3.0], index=[0.0, 1.0, 2.0])
    b = pd.Series([5.0, 6.0], index=[1.0, 2.0])
    frame = combine([a, b]).set_index("t_s")
    assert frame.loc[0.0, "n"] == 1 and frame.loc[1.0, "n"] == 2
    assert frame.loc[2.0, "median"] == 4.5 and (frame.loc[2.0, "lo"], frame.loc[2.0, "hi"]) == (3.0, 6.0)


def test_per_second_rate_of_a_cumulative_counter(tmp_path: Path):
    case = FakeCase(samples=3, duration_s=20.0, clock_offset_s=[0.0, 0.5, 0.9], clock_drift=[0.0, 0.04, -0.03])
    c = load_campaign(write_campaign(tmp_path, [case]))
    rate = aligned(c, case.case_id, "monitor", "sender_tx_pkts", per_second=True).set_index("t_s")
    expected = case.sent_pkts / case.duration_s  # 1000 pps during the replay
    for t in (3.0, 10.0, 17.0):
        assert rate.loc[t, "median"] == pytest.approx(expected, rel=0.02)
    assert rate.loc[-2.0, "median"] == 0
