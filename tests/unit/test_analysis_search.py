"""A searched case's results-row fields and the sensor's cost per packet near its NDR."""

from __future__ import annotations

import pytest

from idsbench.analysis.search import search_fields, sensor_cost
from idsbench.store.schema import SearchResult, ToleranceResult, TrialRecord
from idsbench.store.waterfall import Waterfall


def trial(index: int, pps: float, cpus: float | None, *, loss: float = 0.0, behind: bool = False,
          mode: str = "warm") -> TrialRecord:
    sent = int(pps * 2)
    return TrialRecord(index=index, mode=mode, value=pps, offered_pps=pps, achieved_pps=pps, duration_s=2.0,
                       sent_pkts=sent, sensor_cpus_used=cpus, fell_behind=behind,
                       waterfall=Waterfall(sent=sent, loss_capture_pkts=int(sent * loss)))


def search(*trials: TrialRecord, verification: tuple[TrialRecord, ...] = (), ndr: float = 10_000.0) -> SearchResult:
    return SearchResult(case_id="c", axis="rate", unit="pps", precision=0.05, mode="warm", avg_frame_bytes=500.0,
                        results=(ToleranceResult(tolerance=0.0, value=ndr, value_pps=ndr, bracket=(ndr, ndr * 1.04),
                                                 verified=True),),
                        trials=trials, verification=verification)


def test_cost_is_the_median_over_lossless_kept_up_trials_near_the_ndr():
    result = search(
        trial(0, 600_000, 1.2, loss=0.87, behind=True),   # lossy: not a cost of keeping up
        trial(1, 17_000, 0.40, behind=True),             # fell behind
        trial(2, 4_000, 0.12),                           # far below the NDR (idle overhead weighs)
        trial(3, 8_000, 0.20),                           # 25 µs
        trial(4, 9_000, 0.216),                          # 24 µs
        verification=(trial(5, 10_000, 0.26, mode="cold"),))  # 26 µs
    cost = sensor_cost(result)
    assert cost is not None
    assert cost.trials == 3
    assert cost.median_us == pytest.approx(25.0)
    assert (cost.low_us, cost.high_us) == (pytest.approx(24.0), pytest.approx(26.0))
    assert cost.spread == pytest.approx(26 / 24 - 1)
    figures = search_fields(result)
    assert figures is not None
    fields = figures.row()
    assert fields["ndr_sensor_us_per_pkt"] == 25.0
    assert fields["ndr_pps"] == 10_000.0 and fields["ndr_bracket"] == [10_000.0, 10_400.0]
    assert fields["ndr_mbps"] == pytest.approx(40.0)


def test_an_even_count_takes_the_middle_two():
    cost = sensor_cost(search(trial(0, 8_000, 0.16), trial(1, 9_000, 0.27)))  # 20 and 30 µs
    assert cost is not None and cost.median_us == pytest.approx(25.0)


def test_no_cost_without_cpu_time_or_a_qualifying_trial():
    assert sensor_cost(search(trial(0, 9_000, None))) is None
    assert sensor_cost(search(trial(0, 9_000, 0.2, loss=0.01))) is None
    figures = search_fields(search(trial(0, 9_000, None)))
    assert figures is not None and figures.ndr is not None and figures.ndr.ndr_sensor_us_per_pkt is None
    no_result = search(trial(0, 9_000, 0.2)).model_copy(update={"results": ()})
    assert sensor_cost(no_result) is None
