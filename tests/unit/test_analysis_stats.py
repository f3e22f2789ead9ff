"""analysis.stats: median, order-statistic CI of the median, CV, bootstrap CI of a difference."""

from __future__ import annotations

import math

from idsbench.analysis.stats import bootstrap_diff, ci_coverage, ci_rank, cv, median, median_ci


def test_median_ignores_missing():
    assert median([3, None, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    assert median([]) is None and median([None, float("nan")]) is None


def test_ci_rank_matches_binomial_tables():
    # classic table of the rank for a 95% CI of the median
    assert [ci_rank(n) for n in (5, 6, 8, 9, 10, 12, 15, 20, 30)] == [1, 1, 1, 2, 2, 3, 4, 6, 10]
    assert math.isclose(ci_coverage(5), 1 - 2 / 32)
    assert all(ci_coverage(n) >= 0.95 for n in range(6, 60))


def test_median_ci_bounds():
    assert median_ci([5, 1, 3]) == (1, 5)
    assert median_ci([7]) == (7, 7)
    values = list(range(1, 21))
    assert median_ci(values) == (6, 15)


def test_cv():
    assert cv([10, 10, 10]) == 0
    assert math.isclose(cv([8, 10, 12]), 2 / 10)
    assert cv([1]) is None and cv([0, 0]) is None


def test_bootstrap_diff_sign_and_determinism():
    base, contender = [10, 11, 9, 10, 10.5], [15, 16, 14, 15, 15.5]
    lo, hi = bootstrap_diff(base, contender)
    assert 0 < lo <= 5 <= hi
    assert bootstrap_diff(base, contender) == (lo, hi)  # fixed seed
    plo, phi = bootstrap_diff(base, contender, relative=True)
    assert 30 < plo <= 50 <= phi < 80
    assert bootstrap_diff([], contender) is None


def test_run_warns_when_the_samples_cannot_reach_95_percent():
    from idsbench.cli.run import ci_warning

    assert "75%" in (ci_warning(3) or "") and "samples = 6" in (ci_warning(3) or "")
    assert ci_warning(6) is None and ci_warning(20) is None
