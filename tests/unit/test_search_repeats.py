"""`search.repeats`: the median result of whole searches and the row's CI of the median over them."""

from __future__ import annotations

import pytest

from idsbench.analysis.search import repeat_fields
from idsbench.search.run import median_results
from idsbench.store.schema import SearchGoals, SearchRepeat, SearchResult, ToleranceResult


def repeat(i: int, lower: float, upper: float) -> SearchRepeat:
    r = ToleranceResult(tolerance=0.0, value=lower, value_pps=lower, bracket=(lower, upper), relevant_lower=lower,
                        relevant_upper=upper, conditional_pps=lower * 0.999)
    return SearchRepeat(index=i, results=(r,), trials=9, elapsed_s=60.0, ndr_pps=lower)


def test_three_repeats_report_their_median_bounds_and_its_ci():
    reps = [repeat(0, 10_000.0, 10_500.0), repeat(1, 9_000.0, 9_400.0), repeat(2, 11_000.0, 11_600.0)]
    (ndr,) = median_results(reps)
    assert ndr.value == 10_000.0 and ndr.bracket == (10_000.0, 10_500.0)
    assert ndr.conditional_pps == pytest.approx(9_990.0)
    result = SearchResult(case_id="c", axis="rate", unit="pps", precision=0.05, mode="warm", results=(ndr,),
                          repeats=tuple(reps), allocation_cpus=0.3,
                          goals=SearchGoals(tolerances=(0.0,), exceed_ratio=0.5, relative_width=0.05,
                                            initial_trial_s=1, final_trial_s=2, duration_sum_s=6))
    f = repeat_fields(result).model_dump(mode="json")
    assert f["search_repeats"] == 3 and f["ndr_repeats"] == [10_000.0, 9_000.0, 11_000.0]
    # the median's CI reaches from the lowest repeat's NDR to the highest repeat's first failing load
    assert f["ndr_ci"] == [9_000.0, 11_600.0] and f["ndr_ci_level"] == pytest.approx(0.75)
    assert f["goals"] == {"0": {"conditional_pps": pytest.approx(9_990.0), "lower_pps": 10_000.0,
                                "upper_pps": 10_500.0}}
    assert f["search_goals"]["exceed_ratio"] == 0.5


def test_a_repeat_without_a_result_leaves_the_median_empty():
    empty = SearchRepeat(index=1, results=(ToleranceResult(tolerance=0.0, value=None),))
    (ndr,) = median_results([repeat(0, 10_000.0, 10_500.0), empty])
    assert ndr.value is None


def test_repeats_on_one_grid_point_report_the_grid_step_not_a_point():
    """Three searches that found the same NDR (a shared sender ceiling gives them one load grid) still
    only know it within their bounds: the CI is [NDR, lowest failing load], never [x, x]."""
    reps = [repeat(i, 11_839.0, 12_430.0) for i in range(3)]
    result = SearchResult(case_id="c", axis="rate", unit="pps", precision=0.05, mode="warm",
                          results=median_results(reps), repeats=tuple(reps))
    assert repeat_fields(result).ndr_ci == (11_839.0, 12_430.0)
    top = SearchRepeat(index=3, results=(ToleranceResult(tolerance=0.0, value=9e5, value_pps=9e5, relevant_lower=9e5),),
                       ndr_pps=9e5)  # the top passed: no upper bound, the NDR itself
    one = SearchResult(case_id="c", axis="rate", unit="pps", precision=0.05, mode="warm", repeats=(top,) * 3)
    assert repeat_fields(one).ndr_ci == (9e5, 9e5)


def test_the_rounded_ci_still_holds_the_unrounded_median():
    """The row rounds the CI to 3 decimals; a grid point like 15,204.4125 pps rounded to the nearest
    would lie below its own CI's low end (seen: ci[0] 15,204.413 > median 15,204.41251). Rounded outward."""
    low, high = 15_204.412509772612, 16_886.303642522755
    reps = [repeat(i, low, high) for i in range(3)]
    result = SearchResult(case_id="c", axis="rate", unit="pps", precision=0.1, mode="warm",
                          results=median_results(reps), repeats=tuple(reps))
    ci = repeat_fields(result).ndr_ci
    assert ci == (15_204.412, 16_886.304)
    assert ci is not None and ci[0] <= low < high <= ci[1]
