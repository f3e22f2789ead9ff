"""The duet's arithmetic: the verdict on paired ratios, the per-second ratios from the pair's monitor,
the position effect the swaps cancel, and each side's view of the pair's monitor.csv."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from idsbench.analysis.duet import DuetSampleFigures, per_second_ratios, position_effect, ratio_effect
from idsbench.store.duet import project_monitor


def test_ratios_within_the_min_effect_are_same():
    e = ratio_effect([0.995, 1.004, 1.0, 0.998, 1.006, 1.001])
    assert e.verdict == "same" and e.effect_ci == pytest.approx((-0.5, 0.6))
    assert e.effect_pct == pytest.approx(0.05)


def test_a_clear_difference_is_higher_or_lower():
    up = ratio_effect([1.07, 1.065, 1.08, 1.072, 1.069, 1.075])
    assert up.verdict == "higher" and up.effect_ci is not None and up.effect_ci[0] > 0
    down = ratio_effect([0.93, 0.94, 0.92, 0.935, 0.93, 0.925])
    assert down.verdict == "lower" and down.effect_ci is not None and down.effect_ci[1] < 0


def test_a_ci_across_the_bounds_is_inconclusive_with_samples_needed():
    e = ratio_effect([0.97, 1.04, 1.01, 0.99, 1.03, 1.0])
    assert e.verdict == "inconclusive" and e.samples_needed is not None and e.samples_needed > 6
    # a difference below the min effect with a CI that excludes 1 is not "higher"
    small = ratio_effect([1.011, 1.012, 1.013, 1.012, 1.011, 1.025], min_effect_pct=2.0)
    assert small.verdict == "inconclusive"  # CI excludes 1 but the effect (1.2%) is below 2%
    assert ratio_effect([1.011, 1.012, 1.013, 1.012, 1.011, 1.025], min_effect_pct=1.0).verdict == "higher"


def test_too_few_ratios():
    assert ratio_effect([]).verdict == "n/a"
    one = ratio_effect([1.05])
    assert one.verdict == "inconclusive" and one.samples_needed == 6 and one.effect_pct == pytest.approx(5.0)
    assert ratio_effect([None, float("nan"), 0.0]).verdict == "n/a"


def _row(t: float, a_cpu: float, b_cpu: float, a_rx: float, b_rx: float) -> dict[str, float | None]:
    return {"t_unix": t, "a_sensor_cpu_pct": a_cpu, "b_sensor_cpu_pct": b_cpu,
            "a_sensor_rx_pkts": a_rx, "b_sensor_rx_pkts": b_rx}


def test_per_second_ratios_inside_the_replay_only():
    rows = [_row(99.0, 1, 1, 0, 0), _row(100.0, 1, 1, 0, 0),          # before the replay
            _row(101.0, 40, 44, 1000, 1000), _row(102.0, 40, 42, 2000, 2000),
            _row(102.2, 8, 9, 2200, 2200),                              # a short interval: left out
            _row(103.0, 20, 22, 3000, 4000),                            # b received 1800, a 800
            _row(103.5, 30, 30, 3100, 4100),                            # after the replay
            ]
    got = per_second_ratios(rows, 100.0, 103.0)
    assert got == pytest.approx([1.1, 1.05, (22 / 1800) / (20 / 800)])


def test_per_second_edges_with_few_packets_are_left_out():
    rows = [_row(0.0, 0, 0, 0, 0), _row(1.0, 2, 5, 10, 10), _row(2.0, 40, 44, 1000, 1000),
            _row(3.0, 40, 40, 2000, 2000), _row(4.0, 40, 42, 3000, 3000)]
    assert per_second_ratios(rows, 0.0, 4.0) == pytest.approx([1.1, 1.0, 1.05])


def _fig(index: int, ratio: float) -> DuetSampleFigures:
    return DuetSampleFigures(index, index % 2 == 1, "ok", True, 1.0, ratio, ratio, (), None, None)


def test_position_effect_from_swapped_and_unswapped_samples():
    # true b/a = 1.05, slot 1 costs 2% more than slot 0: unswapped ratio 1.05*1.02, swapped 1.05/1.02
    figs = [_fig(k, 1.05 * 1.02 if k % 2 == 0 else 1.05 / 1.02) for k in range(6)]
    assert position_effect(figs) == pytest.approx(1.02)
    assert position_effect([_fig(0, 1.0)]) is None
    # the median ratio of the six samples lands between the two, the swaps cancelling the slot effect
    ratios = sorted(f.ratio for f in figs if f.ratio)
    assert math.isclose((ratios[2] * ratios[3]) ** 0.5, 1.05)


def test_each_side_sees_its_own_columns_renamed(tmp_path: Path):
    pair = tmp_path / "pair.csv"
    pair.write_text("t_unix,host_cpu_pct,a_sensor_cpu_pct,b_sensor_cpu_pct,sender_tx_pkts,a_sensor_rx_pkts,"
                    "b_sensor_rx_pkts,a_isolation_cpu_pct,b_isolation_cpu_pct\n"
                    "1.0,50,10,11,100,100,100,1,2\n2.0,60,,13,200,200,200,1,2\n")
    project_monitor(pair, "b", tmp_path / "b.csv")
    lines = (tmp_path / "b.csv").read_text().splitlines()
    assert lines[0] == "t_unix,host_cpu_pct,sensor_cpu_pct,sender_tx_pkts,sensor_rx_pkts,isolation_cpu_pct"
    assert lines[1:] == ["1.0,50,11,100,100,2", "2.0,60,13,200,200,2"]
    project_monitor(pair, "a", tmp_path / "a.csv")
    assert (tmp_path / "a.csv").read_text().splitlines()[2] == "2.0,60,,200,200,1"
