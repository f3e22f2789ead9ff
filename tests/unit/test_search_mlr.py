"""The MLRsearch controller driven through idsbench's measurer against a fake sensor of known capacity
(pure logic: the Measurer with its `trial` replaced by a formula): the relevant bounds bracket the
capacity to the precision asked, a trial whose accounting does not close is repeated and never counted
as a pass, the cpus axis finds the smallest allocation, and the bounds of a search stopped early are
computed from the measurer's own record exactly as the controller computes them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from idsbench.campaign_settings import campaign_settings
from idsbench.run.context import CampaignContext
from idsbench.run.session import SampleDeps
from idsbench.search import mlr
from idsbench.search.axis import Axis
from idsbench.search.measure import Measurement, Measurer, Trial
from idsbench.spec import Spec
from idsbench.store.layout import CampaignDir
from idsbench.store.schema import TrialRecord

GOALS = mlr.Goals(tolerances=(0.0, 0.01), exceed_ratio=0.5, relative_width=0.05, initial_trial_s=1.0,
                  final_trial_s=2.0, duration_sum_s=6.0, max_search_s=600.0)
Formula = Callable[[float, float], mlr.TrialCount]   # (duration s, axis value) -> counts


class FormulaSensor(Measurer):
    """The real Measurer (load → value, retries, budget, its record) whose trials are a formula."""

    def __init__(self, loads: mlr.LoadMap, formula: Formula, max_trials: int, note: Callable[[str], None]):
        spec = Spec(name="t", search={"max_trials": max_trials})
        ctx = CampaignContext(settings=campaign_settings(spec), layout=CampaignDir(Path("/nonexistent")), state_dir=Path("/nonexistent"),
                              cache_dir=Path("/nonexistent"), engines={}, engine_versions={}, options={})
        axis = Axis(loads.axis, "x", case=None, low=loads.low, high=loads.high)  # type: ignore[arg-type]
        super().__init__(ctx, None, SampleDeps(), axis, Path("/nonexistent"), warm=False, note=note)  # type: ignore[arg-type]
        self.formula = formula

    def trial(self, trial: Trial) -> Measurement:
        assert trial.value is not None
        count = self.formula(trial.duration_s, trial.value)
        record = TrialRecord(index=self.next_index, mode="cold", value=trial.value, offered_pps=None,
                             achieved_pps=0.0, duration_s=trial.duration_s, sent_pkts=count.offered)
        self.records.append(record)
        return Measurement(record, count)


def run(loads: mlr.LoadMap, formula: Formula, max_trials: int, note: Callable[[str], None] = lambda _m: None):
    return mlr.run_controller(GOALS, FormulaSensor(loads, formula, max_trials, note), note=note)


def sensor(capacity_pps: float) -> Formula:
    """A sensor that forwards up to its capacity and loses the rest."""
    def trial(duration_s: float, load: float) -> mlr.TrialCount:
        sent = int(load * duration_s)
        return mlr.TrialCount(sent, min(sent, int(capacity_pps * duration_s)), duration_s)
    return trial


@pytest.mark.parametrize("capacity", [3_000.0, 12_345.0, 450_000.0])
def test_the_relevant_bounds_bracket_a_known_capacity_to_the_precision(capacity):
    notes: list[str] = []
    ndr, pdr = run(mlr.LoadMap("rate", 2_000.0, 600_000.0), sensor(capacity), 80, notes.append)
    assert ndr.tolerance == 0 and pdr.tolerance == 0.01
    assert ndr.lower is not None and ndr.upper is not None, notes
    assert ndr.lower <= capacity < ndr.upper
    assert ndr.upper / ndr.lower - 1 <= 0.05 * 1.5   # MLRsearch's width is in its rounded log grid
    assert pdr.lower is not None and pdr.lower >= ndr.lower and pdr.lower <= capacity * 1.01 * 1.001
    assert ndr.kept == pytest.approx(1.0)


def test_a_top_the_sensor_takes_has_no_upper_bound():
    ndr, _ = run(mlr.LoadMap("rate", 1_000.0, 50_000.0), sensor(80_000.0), 40)
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

    ndr, _ = run(mlr.LoadMap("rate", 1_000.0, 100_000.0), flaky, 80, notes.append)
    assert any("did not add up" in n for n in notes)
    assert ndr.lower is not None and ndr.lower <= 10_000.0 * (1 + 1e-9)  # the lagging trials never passed a load above it


def test_a_trial_that_never_adds_up_is_judged_with_its_unaccounted_packets_lost():
    m = FormulaSensor(mlr.LoadMap("rate", 1.0, 10.0), lambda d, v: mlr.TrialCount(1000, 900, d, accounted=False, why="x"),
                      10, lambda _m: None)
    r = m.measure(1.0, 5.0)
    assert m.trials_run == mlr.ACCOUNTING_RETRIES + 1 and r.loss_ratio == pytest.approx(0.1)
    assert len(m.records) == 3 and m.measured == [r]  # every trial recorded, one measurement given


def test_the_trial_budget_stops_the_search_with_its_bounds_so_far():
    notes: list[str] = []
    out = run(mlr.LoadMap("rate", 1_000.0, 600_000.0), sensor(20_000.0), 4, notes.append)
    assert any("stopped early" in n for n in notes) and len(out) == 2


def test_the_cpus_axis_finds_the_smallest_allocation():
    def trial(duration_s: float, cpus: float) -> mlr.TrialCount:
        sent = int(10_000 * duration_s)
        return mlr.TrialCount(sent, sent if cpus >= 0.37 else int(sent * cpus / 0.37), duration_s)

    ndr, _ = run(mlr.LoadMap("cpus", 0.05, 1.0), trial, 60)
    assert ndr.lower is not None and ndr.upper is not None
    assert ndr.upper < 0.37 <= ndr.lower <= 0.37 * 1.08


def test_behind_packets_count_only_the_work_beyond_the_allowance():
    assert mlr.behind_packets(0.01, 1.0, 100_000, allowance_s=0.02) == 0
    assert mlr.behind_packets(0.12, 0.88, 100_000, allowance_s=0.02) == 10_000
    assert mlr.forwarded(1000, 10, 5, 20) == 965


def test_a_sender_that_fell_short_did_not_offer_the_load():
    m = FormulaSensor(mlr.LoadMap("rate", 1.0, 600_000.0),
                      lambda d, v: mlr.TrialCount(700_000, 700_000, d, intended=1_000_000), 10, lambda _m: None)
    assert m.measure(2.0, 500_000.0).loss_ratio == pytest.approx(0.3)


@pytest.mark.parametrize("capacity", [3_000.0, 12_345.0, 450_000.0])
def test_the_bounds_from_the_measurers_record_are_the_controllers(capacity):
    """A finished search: `bounds_of` over the measurer's own record gives exactly what the controller
    returned (the same classes, the same measurements; nothing of the controller is read)."""
    from MLRsearch import MultipleLossRatioSearch

    loads = mlr.LoadMap("rate", 2_000.0, 600_000.0)
    m = FormulaSensor(loads, sensor(capacity), 80, lambda _m: None)
    config = mlr.controller_config(GOALS, loads)
    results = MultipleLossRatioSearch(config=config).search(measurer=m, debug=lambda _m: None)
    theirs = [(g.loss_ratio, r.relevant_lower_bound, r.relevant_upper_bound, r.conditional_throughput)
              for g, r in results.items()]
    ours = mlr.bounds_of(config, m.measured)
    assert [(t, float(lo), float(hi), float(c)) for t, lo, hi, c in ours] == \
        [(t, float(lo), float(hi), float(c)) for t, lo, hi, c in theirs]  # type: ignore[arg-type]
    # and stopped early, the bounds are those of the measurements it had then
    early = mlr.bounds_of(config, m.measured[:6])
    assert early != ours and all(lo is None or float(lo) <= capacity * 1.001 for _, lo, _, _ in early)  # type: ignore[arg-type]


def test_a_warm_sensor_that_died_fails_every_later_trial_without_running_it():
    ran: list[float] = []

    def formula(d: float, v: float) -> mlr.TrialCount:
        ran.append(v)
        return mlr.TrialCount(1000, 1000, d)

    m = FormulaSensor(mlr.LoadMap("rate", 1.0, 10.0), formula, 10, lambda _m: None)
    m.carry = dataclasses.replace(m.carry, gone="the sensor died during the trial")
    r = m.measure(1.0, 5.0)
    assert ran == [] and r.forwarding_count == 0 and m.trials_run == 1
