"""Small, dependency-light statistics: median, order-statistic CI of the median, CV, bootstrap.

The CI of the median uses order statistics: with n sorted values x(1)..x(n), [x(k), x(n+1-k)] covers
the population median with probability 1 - 2·P(Binomial(n, ½) < k). We take the largest k that keeps
that coverage >= the requested level. With up to 8 samples that is k=1, i.e. the interval is min..max;
with fewer than 6 samples even min..max covers less than 95% (coverage 1 - 2^(1-n): 94% at n=5,
88% at n=4, 75% at n=3, 50% at n=2) and `ci_coverage` says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Interval = tuple[float, float]
LARGE_N = 300
_NORMAL_Z = {0.9: 1.644854, 0.95: 1.959964, 0.99: 2.575829}


def _clean(values: Sequence[float | None]) -> list[float]:
    return sorted(float(v) for v in values if v is not None and not math.isnan(float(v)))


def median(values: Sequence[float | None]) -> float | None:
    vals = _clean(values)
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def ci_rank(n: int, level: float = 0.95) -> int:
    """1-based rank k of the lower bound: the CI is [x(k), x(n+1-k)]; 1 when n is too small."""
    alpha = 1.0 - level
    if n > LARGE_N:  # the binomial is normal enough; exact sums of n-bit integers get slow (trends, 1000s)
        z = _NORMAL_Z.get(round(level, 4)) or 1.959964
        return max(1, math.floor(n / 2 - z * math.sqrt(n) / 2))
    best = 1
    cdf = 0.0  # P(B < k)
    for k in range(1, n // 2 + 1):
        cdf += math.comb(n, k - 1) / 2**n
        if 2 * cdf <= alpha:
            best = k
        else:
            break
    return best


def ci_coverage(n: int, level: float = 0.95) -> float:
    """Actual coverage of the order-statistic interval chosen for n values."""
    if n < 1:
        return 0.0
    k = ci_rank(n, level)
    below = sum(math.comb(n, j) for j in range(k)) / 2**n
    return float(1.0 - 2.0 * below)


def median_ci(values: Sequence[float | None], level: float = 0.95) -> Interval | None:
    vals = _clean(values)
    if not vals:
        return None
    k = ci_rank(len(vals), level)
    return vals[k - 1], vals[len(vals) - k]


def cv(values: Sequence[float | None]) -> float | None:
    """Coefficient of variation (sample stdev / |mean|); None with < 2 values or a zero mean."""
    vals = _clean(values)
    if len(vals) < 2:
        return None
    mean = sum(vals) / len(vals)
    if mean == 0:
        return None
    var = sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)
    return math.sqrt(var) / abs(mean)


def bootstrap_diff(base: Sequence[float | None], contender: Sequence[float | None], *,
                   relative: bool = False, level: float = 0.95, rounds: int = 2000,
                   seed: int = 0) -> Interval | None:
    """Percentile-bootstrap CI of median(contender) - median(base) (or of that / median(base) × 100).

    Deterministic (fixed seed). None when a side is empty or, if relative, the base median is 0.
    """
    b, c = np.asarray(_clean(base)), np.asarray(_clean(contender))
    if not len(b) or not len(c):
        return None
    rng = np.random.default_rng(seed)
    mb = np.median(rng.choice(b, size=(rounds, len(b))), axis=1)
    mc = np.median(rng.choice(c, size=(rounds, len(c))), axis=1)
    diff = mc - mb
    if relative:
        ok = mb != 0
        if not ok.any():
            return None
        diff = diff[ok] / np.abs(mb[ok]) * 100.0
    lo, hi = np.percentile(diff, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(lo), float(hi)
