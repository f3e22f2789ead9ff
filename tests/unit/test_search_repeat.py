"""A warm trial that fell behind while the host slowed the sensor down (it needed markedly more CPU per
packet than in the search's lossless trials) is not judged and its load is tried again; a sensor
that falls behind at its usual cost is at capacity, and that failure stands."""

from __future__ import annotations

from collections import Counter

from idsbench.search.axis import Axis
from idsbench.search.run import MAX_RETRIES, CaseSearch
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
