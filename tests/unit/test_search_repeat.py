"""A warm trial that fell behind while the host slowed the sensor down (it needed markedly more CPU per
packet than in the search's lossless trials) is not judged and its load is tried again; a sensor
that falls behind at its usual cost is at capacity, and that failure stands."""

from __future__ import annotations

from collections import Counter

import pytest

from idsbench.search.axis import Axis
from idsbench.search.run import MAX_RETRIES, CaseSearch, _host_slowed
from idsbench.spec import Search
from idsbench.store.schema import TrialRecord, WaterfallRecord

CAPACITY = 100_000.0   # pps on its allocation of 0.3 core: 3 µs a packet
COST = 0.3 / CAPACITY
AXIS = Axis("rate", "pps", case=None, low=1_000.0, high=400_000.0)  # type: ignore[arg-type]


def run_search(slow_trials: set[int]) -> tuple[CaseSearch, Counter[float]]:
    """A sensor that keeps CAPACITY pps: above it, it falls behind by the excess (no loss within its
    ring) up to 40%, then loses it. During the trials numbered in `slow_trials` the host makes each
    packet cost 25% more."""
    search = object.__new__(CaseSearch)
    search.cfg = Search(precision=0.02, max_trials=20)
    search.trials, search.notes, search.warm = [], [], True
    tried: Counter[float] = Counter()

    def trial(value: float | None) -> TrialRecord:
        assert value is not None
        tried[value] += 1
        slow = len(search.trials) in slow_trials
        cost = COST * (1.25 if slow else 1.0)
        excess = max(0.0, value * cost / 0.3 - 1)
        sent = int(value * 2)
        loss = 0.0 if excess <= 0.4 else excess / (1 + excess)
        record = TrialRecord(index=len(search.trials), mode="warm", value=value, offered_pps=value,
                             achieved_pps=value, duration_s=2.0, sent_pkts=sent, backlog_fraction=excess,
                             fell_behind=excess > 0.05, sensor_cpus_used=value * cost,
                             waterfall=WaterfallRecord(sent=sent, loss_capture_pkts=int(sent * loss),
                                                       decoded_pkts=sent - int(sent * loss), loss_ratio=loss))
        search.trials.append(record)
        return record

    search._search(AXIS, trial)
    return search, tried


def test_trials_on_a_slowed_host_are_tried_again():
    clean, _ = run_search(set())
    (expected,) = clean._results(AXIS)
    assert not clean.notes
    slowed = {i for i in range(len(clean.trials)) if clean.trials[i].waterfall.loss_ratio == 0}  # type: ignore[union-attr]
    search, tried = run_search(slowed_after_two := {i for i in slowed if i >= 4})
    (ndr,) = search._results(AXIS)
    retried = [n for n in search.notes if "the host slowed it" in n]
    assert 1 <= len(retried) <= MAX_RETRIES, (search.notes, slowed_after_two)
    assert "25% more CPU per packet" in retried[0]
    assert ndr.value == expected.value  # the slow trials decided nothing while retries lasted
    assert max(tried.values()) >= 2


def test_falling_behind_at_the_usual_cost_is_a_failure_that_stands():
    search, tried = run_search(set())
    (ndr,) = search._results(AXIS)
    assert ndr.value is not None and 0.98 * CAPACITY <= ndr.value <= CAPACITY * 1.05, (ndr, search.notes)
    assert not search.notes and max(tried.values()) == 1
    assert any(t.fell_behind and t.waterfall.loss_ratio == 0 for t in search.trials)  # type: ignore[union-attr]


def record(index: int, pps: float, cost_us: float, behind: bool) -> TrialRecord:
    sent = int(pps * 2)
    return TrialRecord(index=index, mode="warm", value=pps, offered_pps=pps, achieved_pps=pps, duration_s=2.0,
                       sent_pkts=sent, fell_behind=behind, sensor_cpus_used=pps * cost_us / 1e6,
                       waterfall=WaterfallRecord(sent=sent, decoded_pkts=sent))


def test_slowed_means_well_above_the_usual_cost_of_the_lossless_trials_before():
    # a CI search: 10,696 pps fell behind at 30.2 µs a packet; the lossless trials before it ran at
    # 24.5 and 26.3 µs
    usual = [record(2, 8_384, 24.5, behind=False), record(3, 8_816, 26.3, behind=False)]
    slow = record(4, 10_696, 30.2, behind=True)
    assert _host_slowed(slow, usual[:1]) is None  # one lossless trial: the usual cost is not known yet
    assert _host_slowed(slow, usual) == pytest.approx(30.2 / 25.4 - 1)
    # at its usual cost a trial that fell behind is at capacity: it stands
    assert _host_slowed(record(5, 10_752, 27.0, behind=True), usual) is None
    assert _host_slowed(record(6, 9_000, 31.0, behind=False), usual) is None  # it kept up: a pass


def test_a_slowed_load_is_tried_again_at_once():
    clean, _ = run_search(set())
    search, _ = run_search({i for i, t in enumerate(clean.trials) if i >= 4 and t.waterfall.loss_ratio == 0})  # type: ignore[union-attr]
    slowed = [int(n.split()[1]) for n in search.notes if "the host slowed it" in n]
    assert slowed, search.notes
    for index in slowed:  # the trial right after it is at the same load
        assert search.trials[index + 1].value == search.trials[index].value, (index, search.notes)


def test_a_ceiling_trial_the_sensor_never_finished_counting_is_judged_not_repeated():
    search = object.__new__(CaseSearch)
    search.cfg = Search(precision=0.05, max_trials=12)
    search.trials, search.notes, search.warm = [], [], True
    axis = Axis("rate", "pps", case=None, low=1_000.0, high=1_000_000.0, needs_ceiling=True)  # type: ignore[arg-type]

    def trial(value: float | None) -> TrialRecord:
        load = 540_000.0 if value is None else value
        sent = int(load * 2)
        uncounted = int(sent * 0.75) if value is None else 0  # the top speed: most never counted
        lost = max(0.0, 1 - CAPACITY / load) if value is not None else 0.0
        record = TrialRecord(index=len(search.trials), mode="warm", value=load, offered_pps=value, achieved_pps=load,
                             duration_s=2.0, sent_pkts=sent,
                             waterfall=WaterfallRecord(sent=sent, loss_capture_pkts=int(sent * lost),
                                                       unaccounted_pkts=uncounted,
                                                       loss_ratio=lost + uncounted / sent))
        search.trials.append(record)
        return record

    search._search(axis, trial)
    (ndr,) = search._results(search.axis)
    assert [t.value for t in search.trials].count(540_000.0) == 1, [t.value for t in search.trials]
    assert any("judged all the same" in n for n in search.notes)
    assert ndr.value is not None and 0.95 * CAPACITY <= ndr.value <= CAPACITY, ndr
