"""The MLRsearch controller driven through idsbench's measurer glue against a fake sensor of known
capacity (pure logic): the relevant bounds bracket the capacity to the precision asked, a trial whose
accounting does not close is repeated and never counted as a pass, and the cpus axis finds the
smallest allocation."""

from __future__ import annotations

import pytest

from idsbench.search import mlr

GOALS = mlr.Goals(tolerances=(0.0, 0.01), exceed_ratio=0.5, relative_width=0.05, initial_trial_s=1.0,
                  final_trial_s=2.0, duration_sum_s=6.0, max_search_s=600.0)


def sensor(capacity_pps: float):
    """A sensor that forwards up to its capacity and loses the rest."""
    def trial(duration_s: float, load: float) -> mlr.TrialCount:
        sent = int(load * duration_s)
        return mlr.TrialCount(sent, min(sent, int(capacity_pps * duration_s)), duration_s)
    return trial


@pytest.mark.parametrize("capacity", [3_000.0, 12_345.0, 450_000.0])
def test_the_relevant_bounds_bracket_a_known_capacity_to_the_precision(capacity):
    notes: list[str] = []
    ndr, pdr = mlr.run_controller(GOALS, mlr.LoadMap("rate", 2_000.0, 600_000.0), sensor(capacity),
                                  max_trials=80, note=notes.append)
    assert ndr.tolerance == 0 and pdr.tolerance == 0.01
    assert ndr.lower is not None and ndr.upper is not None, notes
    assert ndr.lower <= capacity < ndr.upper
    assert ndr.upper / ndr.lower - 1 <= 0.05 * 1.5   # MLRsearch's width is in its rounded log grid
    assert pdr.lower is not None and pdr.lower >= ndr.lower and pdr.lower <= capacity * 1.01 * 1.001
    assert ndr.kept == pytest.approx(1.0)


def test_a_top_the_sensor_takes_has_no_upper_bound():
    ndr, _ = mlr.run_controller(GOALS, mlr.LoadMap("rate", 1_000.0, 50_000.0), sensor(80_000.0),
                                max_trials=40, note=lambda _m: None)
    assert ndr.upper is None and ndr.lower == pytest.approx(50_000.0)


def test_a_trial_that_does_not_add_up_is_repeated_and_never_a_pass():
    calls: list[float] = []
    notes: list[str] = []
    honest = sensor(10_000.0)

    def flaky(duration_s: float, load: float) -> mlr.TrialCount:
        calls.append(load)
        if len(calls) % 3 == 1:  # every third trial's counters lag: it "forwarded" everything, unaccounted
            sent = int(load * duration_s)
            return mlr.TrialCount(sent, sent, duration_s, accounted=False, why="counters lagged")
        return honest(duration_s, load)

    ndr, _ = mlr.run_controller(GOALS, mlr.LoadMap("rate", 1_000.0, 100_000.0), flaky, max_trials=80,
                                note=notes.append)
    assert any("did not add up" in n for n in notes)
    assert ndr.lower is not None and ndr.lower <= 10_000.0 * (1 + 1e-9)  # the lagging trials never passed a load above it


def test_a_trial_that_never_adds_up_is_judged_with_its_unaccounted_packets_lost():
    m = mlr.Measurer(lambda d, v: mlr.TrialCount(1000, 900, d, accounted=False, why="x"),
                     mlr.LoadMap("rate", 1.0, 10.0), max_trials=10, note=lambda _m: None)
    r = m.measure(1.0, 5.0)
    assert m.trials == mlr.ACCOUNTING_RETRIES + 1 and r.loss_ratio == pytest.approx(0.1)


def test_the_trial_budget_stops_the_search_with_its_bounds_so_far():
    notes: list[str] = []
    out = mlr.run_controller(GOALS, mlr.LoadMap("rate", 1_000.0, 600_000.0), sensor(20_000.0), max_trials=4,
                             note=notes.append)
    assert any("stopped early" in n for n in notes) and len(out) == 2


def test_the_cpus_axis_finds_the_smallest_allocation():
    def trial(duration_s: float, cpus: float) -> mlr.TrialCount:
        sent = int(10_000 * duration_s)
        return mlr.TrialCount(sent, sent if cpus >= 0.37 else int(sent * cpus / 0.37), duration_s)

    ndr, _ = mlr.run_controller(GOALS, mlr.LoadMap("cpus", 0.05, 1.0), trial, max_trials=60, note=lambda _m: None)
    assert ndr.lower is not None and ndr.upper is not None
    assert ndr.upper < 0.37 <= ndr.lower <= 0.37 * 1.08


def test_behind_packets_count_only_the_work_beyond_the_allowance():
    assert mlr.behind_packets(0.01, 1.0, 100_000, allowance_s=0.02) == 0
    assert mlr.behind_packets(0.12, 0.88, 100_000, allowance_s=0.02) == 10_000
    assert mlr.forwarded(1000, 10, 5, 20) == 965


def test_a_sender_that_fell_short_did_not_offer_the_load():
    m = mlr.Measurer(lambda d, v: mlr.TrialCount(700_000, 700_000, d, intended=1_000_000),
                     mlr.LoadMap("rate", 1.0, 600_000.0), max_trials=10, note=lambda _m: None)
    assert m.measure(2.0, 500_000.0).loss_ratio == pytest.approx(0.3)
