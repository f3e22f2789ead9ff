"""The verification of a search's result against a cold sensor whose capacity is known: where it
holds, where the warm trials overestimated it (step back, then narrow to the precision), where nothing
holds; the NDR's sample s0 is always the one at the value reported."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from idsbench.search.axis import Axis
from idsbench.search.run import VERIFY_STEPS, CaseSearch
from idsbench.spec import Search
from idsbench.store.layout import CampaignDir
from idsbench.store.schema import ToleranceResult, TrialRecord, WaterfallRecord


def fake_search(root: Path, capacity: float, precision: float = 0.05) -> tuple[CaseSearch, list[float]]:
    """A CaseSearch whose verification runs a sensor that keeps `capacity` pps; it records every
    load verified, in order, and each NDR verification writes the case's sample s0 (its value)."""
    search = object.__new__(CaseSearch)
    search.cfg = Search(precision=precision)
    search.trials, search.notes, search.phase = [], [], lambda _p: None
    search.ctx = SimpleNamespace(layout=CampaignDir(root))  # type: ignore[assignment]
    search.case = SimpleNamespace(case_id="case")  # type: ignore[assignment]
    search.dir = root / "search" / "case"
    search.dir.mkdir(parents=True)
    tried: list[float] = []

    def verify_at(axis: Axis, value: float, tolerance_index: int, index: int) -> TrialRecord:
        tried.append(value)
        write_s0(search, value)
        loss = max(0.0, 1 - capacity / value)
        sent = 100_000
        return TrialRecord(index=index, mode="cold", value=value, offered_pps=value, achieved_pps=value,
                           duration_s=5.0, sent_pkts=sent,
                           waterfall=WaterfallRecord(sent=sent, loss_capture_pkts=int(sent * loss),
                                                     decoded_pkts=sent - int(sent * loss), loss_ratio=loss))

    search._verify_at = verify_at  # type: ignore[method-assign]
    return search, tried


def write_s0(search: CaseSearch, value: float) -> None:
    """What a sample run does to the case's s0: a fresh directory with its result."""
    s0 = search.ctx.layout.fresh_sample_dir("case", 0)
    (s0 / "value").write_text(repr(value))


def s0_value(search: CaseSearch) -> float:
    assert not (search.dir / "held-s0").exists()  # nothing left aside
    return float((search.ctx.layout.sample_dir("case", 0) / "value").read_text())


AXIS = Axis("rate", "pps", case=None, low=1_000.0, high=1_000_000.0)  # type: ignore[arg-type]


def ndr(value: float, bracket: tuple[float, float]) -> ToleranceResult:
    return ToleranceResult(tolerance=0.0, value=value, value_pps=value, bracket=bracket)


def test_a_result_that_holds_is_verified_once_with_the_searchs_bracket(tmp_path):
    search, tried = fake_search(tmp_path, capacity=100_000)
    (r,) = results = [ndr(98_000, (98_000, 102_000))]
    records = search._verify(AXIS, results)
    assert tried == [98_000] and len(records) == 1 and s0_value(search) == 98_000
    assert results[0].verified is True and results[0].value == 98_000 and results[0].bracket == (98_000, 102_000)


def test_an_overestimate_steps_back_then_narrows_to_the_precision_and_s0_is_the_value_reported(tmp_path):
    # the warm trials said 120k; a cold sensor keeps 100k
    search, tried = fake_search(tmp_path, capacity=100_000)
    results = [ndr(120_000, (120_000, 125_000))]
    search._verify(AXIS, results)
    r = results[0]
    assert r.verified is True and r.value is not None and r.value <= 100_000 and r.bracket is not None
    lo, hi = r.bracket
    assert lo == r.value and hi > 100_000 and hi / lo - 1 <= 0.05 + 1e-9, (r, tried)
    assert tried[0] == 120_000 and tried[1] < 120_000 / 1.05  # the loss took it further than one step
    assert s0_value(search) == r.value  # the case's s0 is the sample that held at the value reported
    assert len(tried) <= VERIFY_STEPS


def test_nothing_that_holds_leaves_no_result_and_says_so(tmp_path):
    search, tried = fake_search(tmp_path, capacity=10_000)
    results = [ndr(120_000, (120_000, 125_000))]
    search._verify(AXIS, results)
    assert results[0].value is None and results[0].verified is False
    assert len(tried) == VERIFY_STEPS and "no value held" in search.notes[0]


def test_a_min_cpus_result_is_narrowed_towards_fewer_cpus(tmp_path):
    search, tried = fake_search(tmp_path, capacity=0.0)  # replaced below: needs >= 0.1 core

    def verify_at(axis: Axis, value: float, tolerance_index: int, index: int) -> TrialRecord:
        tried.append(value)
        write_s0(search, value)
        loss = 0.0 if value >= 0.1 else 1 - value / 0.1
        return TrialRecord(index=index, mode="cold", value=value, offered_pps=40_000, achieved_pps=40_000,
                           duration_s=5.0, sent_pkts=1000,
                           waterfall=WaterfallRecord(sent=1000, decoded_pkts=1000, loss_ratio=loss))

    search._verify_at = verify_at  # type: ignore[method-assign]
    axis = Axis("cpus", "cpus", case=None, low=0.02, high=1.0, direction="min")  # type: ignore[arg-type]
    results = [ToleranceResult(tolerance=0.0, value=0.08, bracket=(0.075, 0.08))]
    search._verify(axis, results)
    r = results[0]
    assert r.verified is True and r.value is not None and r.value >= 0.1 and r.bracket is not None
    lo, hi = r.bracket
    assert hi == r.value and lo < 0.1 and hi / lo - 1 <= 0.05 + 1e-9, (r, tried)
    assert s0_value(search) == r.value


def test_a_marginal_failure_is_run_once_more_and_holds_when_that_one_passes(tmp_path):
    search, tried = fake_search(tmp_path, capacity=1e9)
    outcomes = iter([2e-6, 0.0])  # one pause of the host cost a few packets, then clean

    def verify_at(axis: Axis, value: float, tolerance_index: int, index: int) -> TrialRecord:
        tried.append(value)
        write_s0(search, value)
        loss = next(outcomes)
        return TrialRecord(index=index, mode="cold", value=value, offered_pps=value, achieved_pps=value,
                           duration_s=5.0, sent_pkts=10**6,
                           waterfall=WaterfallRecord(sent=10**6, loss_capture_pkts=int(loss * 1e6),
                                                     decoded_pkts=10**6 - int(loss * 1e6), loss_ratio=loss))

    search._verify_at = verify_at  # type: ignore[method-assign]
    results = [ndr(98_000, (98_000, 102_000))]
    search._verify(AXIS, results)
    assert tried == [98_000, 98_000] and results[0].verified is True and results[0].value == 98_000
    assert results[0].bracket == (98_000, 102_000) and "run once more" in search.notes[0]


def test_a_marginal_failure_twice_steps_back(tmp_path):
    search, tried = fake_search(tmp_path, capacity=97_995)  # 98k loses 5e-5: marginal both times
    results = [ndr(98_000, (98_000, 102_000))]
    search._verify(AXIS, results)
    assert tried[:2] == [98_000, 98_000] and tried[2] < 98_000 and results[0].value == tried[-1]
    assert results[0].verified is True


def test_s0_is_the_sample_that_held_not_a_later_narrowing_sample_that_broke(tmp_path):
    # stepping back from 110k holds at 97k; narrowing then tries 103k (breaks) and 100.1k (breaks):
    # the last sample run is a lossy one, the case's s0 must be the one at 97k
    search, tried = fake_search(tmp_path, capacity=100_000)
    results = [ndr(110_000, (110_000, 114_000))]
    search._verify(AXIS, results)
    r = results[0]
    assert r.verified is True and r.value == 97_000 and tried[-1] != r.value, (r, tried)
    assert s0_value(search) == 97_000
