"""The duet search's pure logic: trials shared by the two sides' MLRsearch controllers, each side's
results, the verification load, and the refusals (search/duet.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from idsbench.analysis.duet import search_figures, search_row
from idsbench.errors import SpecError
from idsbench.run.duet.place import place
from idsbench.search import mlr
from idsbench.search.duet import (
    SharedTrials,
    SideFeed,
    check_duet_search,
    side_outcomes,
    slot_allocation,
    verification_load,
)
from idsbench.search.measure import Trial
from idsbench.search.run import median_results
from idsbench.spec import spec_from_dict
from idsbench.store.schema import SearchRepeat, SearchResult, ToleranceResult

GOALS = mlr.Goals((0.0,), 0.5, 0.05, 0.5, 1.0, 1.0, 600.0)
LOADS = mlr.LoadMap("rate", 500.0, 100_000.0)


class FakePair:
    """Duet trials: side s forwards everything up to caps[s] pps, 10% less above it."""

    def __init__(self, caps: dict[str, float], unaccounted: dict[str, int] | None = None):
        self.caps, self.unaccounted = caps, unaccounted or {}
        self.trials: list[Trial] = []

    def __call__(self, trial: Trial) -> dict[str, mlr.TrialCount]:
        self.trials.append(trial)
        assert trial.value is not None
        offered = round(trial.value * trial.duration_s)
        out = {}
        for side, cap in self.caps.items():
            bad = self.unaccounted.get(side, 0) > 0
            if bad:
                self.unaccounted[side] -= 1
            forwarded = offered if trial.value <= cap else round(offered * 0.9)
            out[side] = mlr.TrialCount(offered=offered, forwarded=forwarded, duration_s=trial.duration_s,
                                       accounted=not bad, why="test" if bad else "")
        return out


def _ndr(outcomes: list[mlr.GoalOutcome]) -> float:
    (o,) = outcomes
    assert o.lower is not None
    return o.lower


def test_an_aa_duet_shares_every_trial():
    pair = FakePair({"a": 20_000.0, "b": 20_000.0})
    shared = SharedTrials(pair, max_trials=200)
    out = side_outcomes(GOALS, shared, LOADS, lambda _m: None)
    assert _ndr(out["a"]) == _ndr(out["b"])
    assert 20_000 * 0.95 <= _ndr(out["a"]) <= 20_000
    # b's controller asked exactly a's loads: every one of its requests was a trial a's asked for
    assert shared.trials_run == len(pair.trials) and shared.shared == shared.trials_run


def test_sides_that_part_get_their_own_trials_and_their_own_ndr():
    pair = FakePair({"a": 20_000.0, "b": 18_000.0})
    shared = SharedTrials(pair, max_trials=200)
    out = side_outcomes(GOALS, shared, LOADS, lambda _m: None)
    a, b = _ndr(out["a"]), _ndr(out["b"])
    assert 20_000 * 0.95 <= a <= 20_000 and 18_000 * 0.95 <= b <= 18_000
    assert 0 < shared.shared < shared.trials_run  # early loads shared, b's own bounds its own trials
    # each side's controller got each trial result at most once: b's requests = shared + b's own trials
    alone = FakePair({"a": 18_000.0, "b": 18_000.0})  # side a's controller here: a search of b alone
    lone = side_outcomes(GOALS, SharedTrials(alone, max_trials=200), LOADS, lambda _m: None)
    assert _ndr(lone["a"]) == b  # the same decisions as a search of b alone


class SkewedPair(FakePair):
    """Two sides of one capacity whose first trial (the top of the axis, both lossy) lost differently."""

    def __call__(self, trial: Trial) -> dict[str, mlr.TrialCount]:
        first = not self.trials
        out = super().__call__(trial)
        if first:
            b = out["b"]
            out["b"] = mlr.TrialCount(offered=b.offered, forwarded=round(b.offered * 0.5), duration_s=b.duration_s)
        return out


def test_sides_judging_alike_share_every_trial_though_their_counts_differ():
    """MLRsearch's initial loads follow each trial's forwarding rate: an A/A pair whose lossy first trial
    forwarded 90% on a and 50% on b would ask different second loads. Both controllers take them from the
    side that forwarded least (`SideFeed.hint`), so they never part; each side's bounds are its own counts."""
    pair = SkewedPair({"a": 20_000.0, "b": 20_000.0})
    shared = SharedTrials(pair, max_trials=200)
    out = side_outcomes(GOALS, shared, LOADS, lambda _m: None)
    assert shared.parting() is None and shared.given["a"] == shared.given["b"]
    assert shared.trials_run == len(shared.given["a"]) and _ndr(out["a"]) == _ndr(out["b"])
    # without the shared hint a's controller asks its second load from its own 90%, b's from 50%: they part
    unhinted = SharedTrials(SkewedPair({"a": 20_000.0, "b": 20_000.0}), max_trials=200)
    for side in ("a", "b"):
        mlr.run_controller(GOALS, SideFeed(side, unhinted, LOADS, lambda _m: None), note=lambda _m: None)
    parting = unhinted.parting()
    assert parting is not None and "after 1 shared trial(s)" in parting, parting
    assert "a forwarded 45,000 and b 25,000 of 50,000" in parting, parting


def test_sides_that_part_say_where_and_why():
    """Sides that judge a trial differently part there, and the note names that trial's counts."""
    pair = FakePair({"a": 20_000.0, "b": 12_000.0})
    shared = SharedTrials(pair, max_trials=200)
    side_outcomes(GOALS, shared, LOADS, lambda _m: None)
    parting = shared.parting()
    assert parting is not None and "shared trial(s)" in parting and " forwarded " in parting, parting
    assert shared.given["a"] != shared.given["b"] and shared.trials_run > len(shared.given["a"])


def test_a_result_that_did_not_add_up_is_not_queued_for_the_other_side():
    pair = FakePair({"a": 20_000.0, "b": 20_000.0}, unaccounted={"b": 1})
    shared = SharedTrials(pair, max_trials=200)
    out = side_outcomes(GOALS, shared, LOADS, lambda _m: None)
    assert _ndr(out["a"]) == _ndr(out["b"])
    # b used every trial of a's but the one whose count of b did not add up: that one it ran again
    a_trials = shared.trials_run - 1
    assert shared.shared == a_trials - 1


def test_the_trial_budget_stops_both_controllers_with_their_bounds_so_far():
    pair = FakePair({"a": 20_000.0, "b": 18_000.0})
    notes: list[str] = []
    shared = SharedTrials(pair, max_trials=6)
    out = side_outcomes(GOALS, shared, LOADS, notes.append)
    assert shared.trials_run == 6 and len(pair.trials) == 6
    assert any("side a: the search stopped early" in n for n in notes)
    assert any("side b: the search stopped early" in n for n in notes)
    assert set(out) == {"a", "b"}


def test_a_queued_result_answers_only_its_own_duration_and_load():
    pair = FakePair({"a": 1e9, "b": 1e9})
    shared = SharedTrials(pair, max_trials=10)
    shared.count("a", (1.0, 1000.0), Trial(1000.0, 1.0))
    shared.count("b", (0.5, 1000.0), Trial(1000.0, 0.5))     # another duration: a new trial
    assert shared.trials_run == 2 and shared.shared == 0
    shared.count("b", (1.0, 1000.0), Trial(1000.0, 1.0))     # a's trial, once
    shared.count("b", (1.0, 1000.0), Trial(1000.0, 1.0))     # used up: a new trial
    assert shared.trials_run == 3 and shared.shared == 1


def test_verification_load_is_the_lower_ndr():
    r = {"a": [ToleranceResult(tolerance=0.0, value=20_000.0)], "b": [ToleranceResult(tolerance=0.0, value=18_000.0),
                                                                          ToleranceResult(tolerance=0.01, value=19_000.0)]}
    assert verification_load(r) == 18_000.0
    assert verification_load({"a": [ToleranceResult(tolerance=0.0, value=None)], "b": []}) is None


def _duet_spec(search: dict[str, object]):
    return spec_from_dict({"name": "d", "mode": "duet", "traffic": {"traces": ["x.pcap"], "rate": {"pps": 1000}},
                           "search": search})


@pytest.mark.parametrize(("search", "words"), [
    ({"axis": "cpus"}, "search.axis = 'cpus'"),
    ({"warm": False}, "warm trials only"),
])
def test_a_duet_search_the_duet_cannot_run_is_refused_naming_the_fix(search: dict[str, object], words: str):
    with pytest.raises(SpecError) as err:
        check_duet_search(_duet_spec(search))
    assert words in str(err.value) and err.value.fix


def test_rate_and_replayers_duet_searches_pass_the_check():
    check_duet_search(_duet_spec({"axis": "rate"}))
    check_duet_search(_duet_spec({"axis": "replayers", "max_replayers": 4}))


def _searched(case: str, repeats: list[tuple[float, float, float]]) -> SearchResult:
    """A rate search whose repeats found (lower, upper, conditional) pps; `results` their medians."""
    reps = [SearchRepeat(index=k, ndr_pps=lo, results=(ToleranceResult(
        tolerance=0.0, value=lo, value_pps=lo, relevant_lower=lo, relevant_upper=hi, conditional_pps=c),))
        for k, (lo, hi, c) in enumerate(repeats)]
    return SearchResult(case_id=case, axis="rate", unit="pps", precision=0.05, mode="warm", repeats=tuple(reps),
                        results=tuple(median_results(reps)))


def test_the_ndr_ratio_over_repeats_and_its_ci():
    a = _searched("a", [(10_000, 10_400, 9_990), (10_200, 10_600, 10_190), (10_100, 10_500, 10_090)])
    b = _searched("b", [(11_000, 11_400, 10_990), (11_200, 11_600, 11_190), (11_000, 11_500, 10_990)])
    f = search_figures(a, b)
    assert f is not None and f.ci_kind == "repeats" and f.ratios == pytest.approx((1.1, 11_200 / 10_200, 11_000 / 10_100))
    assert f.ratio == pytest.approx(11_200 / 10_200) and f.ratio_ci == (min(f.ratios), max(f.ratios))  # type: ignore[type-var]
    assert f.ci_level == pytest.approx(0.75) and f.a_ndr_pps == 10_100 and f.b_ndr_pps == 11_000
    assert f.a_conditional_ci == (9_990, 10_190) and f.conditional_ratio == pytest.approx(10_990 / 10_090)
    row = search_row(f)
    assert row["duet_ndr_ratio_ci"] == [round(min(f.ratios), 6), round(max(f.ratios), 6)]  # type: ignore[type-var]
    assert row["duet_ndr_ratio"] == round(f.ratio, 6)


def test_one_repeat_gives_the_range_its_bounds_allow():
    f = search_figures(_searched("a", [(10_000, 10_500, 10_000)]), _searched("b", [(10_000, 10_500, 10_000)]))
    assert f is not None and f.ratio == 1.0 and f.ci_kind == "bounds" and f.ci_level is None
    assert f.ratio_ci == pytest.approx((10_000 / 10_500, 10_500 / 10_000))
    assert search_figures(None, _searched("b", [(1, 2, 1)])) is None


def test_idsbench_search_refuses_a_cpus_duet_before_anything_starts(tmp_path, capsys, monkeypatch):
    from idsbench.cli.main import main

    def never(*_a: object, **_k: object) -> None:
        raise AssertionError("the campaign started")

    monkeypatch.setattr("idsbench.search.duet.prepare_campaign", never)
    spec = tmp_path / "d.toml"
    spec.write_text('name = "d"\nmode = "duet"\n[traffic]\ntraces = ["x.pcap"]\nrate = { pps = 1000 }\n'
                    '[search]\naxis = "cpus"\n')
    assert main(["search", str(spec), "--out", str(tmp_path / "out"), "--no-report"]) != 0
    err = capsys.readouterr().err
    assert "search.axis = 'cpus'" in err and "mode = \"single\"" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("cpus", "available", "kind", "cores", "quota"), [
    (0.3, [0, 1], "shared", 0.3, True),     # each slot's quota, both on CPU 1
    (None, [0, 1], "shared", 0.5, False),   # no quota on one shared CPU: half of it each when both are busy
    (0.8, [0, 1], "shared", 0.5, True),     # quotas above the shared CPU: its half
    (None, [0, 1, 2], "split", 1.0, False),  # a CPU each
])
def test_a_sides_allocation_is_its_slots_share_of_the_cpus_when_both_are_busy(cpus, available, kind, cores, quota):
    placement = place(available, cpus, kind=kind)
    session = SimpleNamespace(sides=[SimpleNamespace(name=n, slot=placement.slots[i]) for i, n in enumerate("ab")],
                              deps=SimpleNamespace(sample=SimpleNamespace(available_cpus=lambda: available)))
    for side in "ab":
        a = slot_allocation(session, side)  # type: ignore[arg-type]
        assert (a.cores, a.quota) == (pytest.approx(cores), quota)
