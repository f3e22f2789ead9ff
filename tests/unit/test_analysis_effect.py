"""analysis.effect: the effect size, its seeded bootstrap CI and the verdicts on synthetic samples."""

from __future__ import annotations

import random

import pytest

from idsbench.analysis.effect import MAX_SAMPLES_NEEDED, MIN_SAMPLES_FOR_95, describe, effect


def _noisy(center: float, rel_sd: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, rel_sd)) for _ in range(n)]


def test_identical_samples_are_the_same():
    values = [100.0, 101.0, 99.5, 100.5, 99.0, 100.2]
    e = effect(values, list(values))
    assert e.verdict == "same" and e.effect_pct == 0
    assert e.effect_ci is not None and -2 <= e.effect_ci[0] <= 0 <= e.effect_ci[1] <= 2
    assert e.samples_needed is None and "same" in describe(e)


def test_a_tight_ten_percent_shift_is_higher_and_lower_with_a_ci_excluding_zero():
    base, slower = _noisy(100, 0.005, 6, 1), _noisy(110, 0.005, 6, 2)
    up = effect(base, slower)
    assert up.verdict == "higher" and up.effect_pct == pytest.approx(10, abs=1.5)
    assert up.effect_ci is not None and 7 < up.effect_ci[0] <= up.effect_pct <= up.effect_ci[1] < 13
    down = effect(slower, base)
    assert down.verdict == "lower" and down.effect_ci is not None and down.effect_ci[1] < 0
    assert "higher by 10." in describe(up, "worse") and "(worse)" in describe(up, "worse")


def test_a_wide_spread_is_inconclusive_with_samples_needed():
    base, other = _noisy(100, 0.15, 6, 3), _noisy(104, 0.15, 6, 4)
    e = effect(base, other)
    assert e.verdict == "inconclusive"
    assert e.samples_needed is not None and 6 < e.samples_needed <= MAX_SAMPLES_NEEDED
    assert "samples per side" in describe(e)
    # a wider spread needs more samples; many more samples narrow the CI
    wider = effect(_noisy(100, 0.30, 6, 3), _noisy(104, 0.30, 6, 4))
    assert wider.verdict == "inconclusive" and wider.samples_needed is not None and wider.samples_needed > e.samples_needed
    n = 8 * e.samples_needed
    more = effect(_noisy(100, 0.15, n, 5), _noisy(104, 0.15, n, 6))
    assert more.effect_ci is not None and e.effect_ci is not None
    assert more.effect_ci[1] - more.effect_ci[0] < e.effect_ci[1] - e.effect_ci[0]


def test_a_small_real_shift_within_min_effect_is_the_same():
    base, other = _noisy(100, 0.002, 8, 7), _noisy(101, 0.002, 8, 8)
    e = effect(base, other)
    assert e.verdict == "same" and 0 < e.effect_pct < 2
    assert effect(base, other, min_effect_pct=0.5).verdict == "higher"


def test_deterministic():
    base, other = _noisy(100, 0.05, 6, 9), _noisy(103, 0.05, 6, 10)
    assert effect(base, other) == effect(base, other)


def test_zero_base_uses_the_difference():
    assert effect([0] * 6, [0] * 6).verdict == "same"
    e = effect([0] * 6, [50, 60, 55, 58, 52, 57])
    assert e.verdict == "higher" and e.effect_pct is None and e.diff_ci is not None and e.diff_ci[0] > 0
    assert effect([0, 0, 5, 0, 0, 0], [0, 7, 0, 0, 0, 0]).verdict == "inconclusive"
    # with 3 or 4 samples a side the CI of a median covers 75% or 88%: no verdict (issue 41)
    assert effect([0, 0, 0], [0, 0, 0]).verdict == "inconclusive"
    assert effect([0, 0, 0, 0], [50, 60, 55, 58]).verdict == "inconclusive"


def test_too_few_samples_are_inconclusive():
    e = effect([100.0], [150.0])
    assert e.verdict == "inconclusive" and e.samples_needed == MIN_SAMPLES_FOR_95 and e.effect_pct == 50
    assert effect([], [1.0]).verdict == "n/a"
    assert effect([None, 1.0, 2.0], [1.0, 2.0, float("nan")]).verdict == "inconclusive"
