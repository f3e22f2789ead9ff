"""Effect sizes that can say "no difference": the ratio of two medians with its bootstrap CI, judged
against a smallest effect worth reporting (`min_effect_pct`, default 2%).

Method (docs/compare.md, "Effect sizes"): the effect is median(contender) / median(base) − 1, in
percent; its CI is the percentile bootstrap of that ratio (each side resampled with replacement,
`ROUNDS` rounds, a fixed seed: the same samples always give the same CI; a side of more than
`stats.LARGE_N` values draws its medians from their normal approximation instead). Verdicts, with m =
min_effect_pct and [lo, hi] the CI:
- "same": the whole CI lies inside ±m (no difference beyond m, at this confidence);
- "higher" / "lower": the CI excludes 0 and the effect itself is at least m in that direction;
- "inconclusive": anything else; `samples_needed` then estimates how many samples per side would
  settle it, from the observed spread (a CI's width shrinks as 1/√n): enough to shrink the CI to
  m − |effect| when the effect is below m ("same"), or below |effect| when it is above ("higher"/
  "lower"). It assumes the spread and the effect hold; capped at MAX_SAMPLES_NEEDED.
The level: a verdict needs each side to have the samples whose median's distribution-free CI reaches the
level asked (`samples_for(level)`: 6 at 95%; `stats.ci_coverage`). With fewer, the bootstrap CI is computed
at the level the smaller side reaches (50% at 2 samples, 75% at 3, `Effect.level`: the level printed is the
level computed) and the verdict is "inconclusive", with `samples_needed` at least `samples_for(level)`.
A side with fewer than 2 values has no spread: inconclusive, `samples_needed` = 6 (what a 95% CI of a
median needs). When the base median is 0 (e.g. no drops) a ratio does not exist: the effect is null
and the verdict rests on the bootstrap CI of the difference of the medians (both all zero: "same").

Paired (`paired_effect`): when the two sides ran round by round (`rounds`: sample k of each side ran
next to each other, and the rounds one after another), the effect is the median of the per-round
ratios contender_k / base_k − 1 and its CI the percentile bootstrap over rounds (rounds resampled
whole): drift the rounds share cancels in each ratio instead of widening the CI (RMIT, Abedi & Brecht,
ICPE 2017). `samples_needed` then counts rounds (and a verdict needs `samples_for(level)` of them). A base
of 0 in any round: the median of the per-round differences instead. Same verdict rules; `Effect.paired`
says which was used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from idsbench.analysis.stats import LARGE_N, ci_coverage, median_ci

Verdict = Literal["higher", "lower", "same", "inconclusive", "n/a"]
VERDICTS: tuple[Verdict, ...] = ("higher", "lower", "same", "inconclusive", "n/a")
DEFAULT_MIN_EFFECT_PCT = 2.0
LEVEL = 0.95
ROUNDS = 4000
SEED = 20220  # fixed: the CI of the same samples never moves
MIN_SAMPLES_FOR_95 = 6
MAX_SAMPLES_NEEDED = 10_000
MIN_ROUNDS = 3  # fewer paired rounds than this: the unpaired effect (a bootstrap over 2 rounds says nothing)


def samples_for(level: float = LEVEL) -> int:
    """The fewest samples whose order-statistic CI of the median covers `level` (6 at 95%, 8 at 99%)."""
    n = 1
    while ci_coverage(n, level) < level:
        n += 1
    return n


def reached_level(level: float, *counts: int) -> float:
    """The level a CI from sides of `counts` values can claim: `level` when every side has
    `samples_for(level)`, else the coverage the smallest side's median CI reaches."""
    smallest = min(counts) if counts else 0
    return level if smallest >= samples_for(level) else ci_coverage(smallest, level)


@dataclass(frozen=True)
class Effect:
    effect_pct: float | None                  # (median(contender) / median(base) − 1) × 100
    effect_ci: tuple[float, float] | None     # its bootstrap CI at `level`, in percent
    verdict: Verdict
    samples_needed: int | None = None         # per side, when inconclusive
    diff_ci: tuple[float, float] | None = None  # bootstrap CI of median(contender) − median(base)
    level: float = LEVEL                      # the level effect_ci/diff_ci were computed at (reached_level)
    min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT
    paired: bool = False                      # from per-round ratios (paired_effect), not from two samples


def _clean(values: Sequence[float | None]) -> np.ndarray:
    return np.asarray([float(v) for v in values if v is not None and not math.isnan(float(v))], dtype=float)


def _boot_medians(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if len(values) == 1:
        return np.full(ROUNDS, values[0])
    if len(values) > LARGE_N:
        # many values (a long trend segment): the median's sampling distribution is normal; its SE from
        # the distribution-free 95% interval of the median (resampling thousands of values is slow)
        lo, hi = median_ci(values.tolist()) or (0.0, 0.0)
        return rng.normal(float(np.median(values)), (hi - lo) / (2 * 1.959964), ROUNDS)
    picks = rng.integers(0, len(values), size=(ROUNDS, len(values)))
    return np.asarray(np.median(values[picks], axis=1))


def _needed(n_b: int, n_c: int, half_width: float, target: float) -> int:
    if target <= 0:
        return MAX_SAMPLES_NEEDED
    n_eff = 2.0 / (1.0 / n_b + 1.0 / n_c)  # both sides grown alike: width ∝ √(1/n_b + 1/n_c)
    need = math.ceil(n_eff * (half_width / target) ** 2)
    return int(min(MAX_SAMPLES_NEEDED, max(need, max(n_b, n_c) + 1)))


def effect(base: Sequence[float | None], contender: Sequence[float | None], *,
           min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT, level: float = LEVEL) -> Effect:
    """The effect of going from `base` to `contender` samples, with its CI and verdict."""
    b, c = _clean(base), _clean(contender)
    if not len(b) or not len(c):
        return Effect(None, None, "n/a", level=level, min_effect_pct=min_effect_pct)
    mb, mc = float(np.median(b)), float(np.median(c))
    point = (mc - mb) / abs(mb) * 100.0 if mb else None
    if len(b) < 2 or len(c) < 2:
        return Effect(point, None, "inconclusive", samples_for(level), level=reached_level(level, len(b), len(c)),
                      min_effect_pct=min_effect_pct)
    at = reached_level(level, len(b), len(c))
    rng = np.random.default_rng(SEED)
    boot_b, boot_c = _boot_medians(b, rng), _boot_medians(c, rng)
    tails = [(1 - at) / 2 * 100, (1 + at) / 2 * 100]
    d_lo, d_hi = (float(x) for x in np.percentile(boot_c - boot_b, tails))
    diff_ci = (d_lo, d_hi)
    m = min_effect_pct
    if point is None or not np.all(boot_b != 0):
        # no ratio: judge the difference of the medians
        if not b.any() and not c.any():  # all zero: "same" once the samples reach the level
            return Effect(None, None, "same", None, diff_ci, at, m) if at >= level else \
                Effect(None, None, "inconclusive", samples_for(level), diff_ci, at, m)
        return judged(None, None, diff_ci, at, level, m, _needed(len(b), len(c), (d_hi - d_lo) / 2, abs(mc - mb)))
    lo, hi = (float(x) for x in np.percentile((boot_c - boot_b) / np.abs(boot_b) * 100.0, tails))
    ci = (min(lo, point), max(hi, point))  # the point estimate always lies inside its interval
    target = m - abs(point) if abs(point) < m else abs(point)
    return judged(point, ci, diff_ci, at, level, m, _needed(len(b), len(c), (ci[1] - ci[0]) / 2, target))


def judged(point: float | None, ci: tuple[float, float] | None, diff_ci: tuple[float, float] | None, at: float,
            level: float, m: float, needed: int, paired: bool = False) -> Effect:
    """The verdict on an effect (`point`, its CI in %; None: no ratio, judge `diff_ci`) computed at level `at`:
    none below the `level` asked (inconclusive, `samples_for(level)` at least)."""
    if at < level:
        return Effect(point, ci, "inconclusive", max(needed, samples_for(level)), diff_ci, at, m, paired)
    verdict: Verdict = "inconclusive"
    if ci is None or point is None:
        if diff_ci is not None and (diff_ci[0] > 0 or diff_ci[1] < 0):
            verdict = "higher" if diff_ci[0] > 0 else "lower"
    elif -m <= ci[0] and ci[1] <= m:
        verdict = "same"
    elif ci[0] > 0 and point >= m:
        verdict = "higher"
    elif ci[1] < 0 and point <= -m:
        verdict = "lower"
    return Effect(point, ci, verdict, needed if verdict == "inconclusive" else None, diff_ci, at, m, paired)


def rounds(base: Sequence[tuple[int, float]], contender: Sequence[tuple[int, float]]) -> list[tuple[int, int]] | None:
    """Whether two sides' samples ran round by round, from (sample index, start time) per value: the
    positions (i in base, j in contender) of each round, or None. A round is the two samples of one
    index; the sides ran round by round when no other sample of either side started between the two
    samples of any round (so the rounds follow one another) and at least MIN_ROUNDS rounds exist. Case
    by case (every base sample, then every contender sample) fails at the first round."""
    b_at = {k: i for i, (k, _) in enumerate(base)}
    c_at = {k: j for j, (k, _) in enumerate(contender)}
    common = sorted(set(b_at) & set(c_at))
    if len(common) < MIN_ROUNDS:
        return None
    starts = sorted(t for _, t in (*base, *contender))
    for k in common:
        lo, hi = sorted((base[b_at[k]][1], contender[c_at[k]][1]))
        if any(lo < t < hi for t in starts):
            return None
    return [(b_at[k], c_at[k]) for k in common]


def paired_effect(base: Sequence[float | None], contender: Sequence[float | None], *,
                  min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT, level: float = LEVEL) -> Effect:
    """The effect from per-round pairs (base[k], contender[k]); a round with a missing value is left out;
    fewer than MIN_ROUNDS complete rounds: the unpaired effect."""
    pairs = [(float(b), float(c)) for b, c in zip(base, contender, strict=True)
             if b is not None and c is not None and not math.isnan(float(b)) and not math.isnan(float(c))]
    if len(pairs) < MIN_ROUNDS:
        return effect(base, contender, min_effect_pct=min_effect_pct, level=level)
    b = np.asarray([p[0] for p in pairs])
    c = np.asarray([p[1] for p in pairs])
    n, m = len(pairs), min_effect_pct
    at = reached_level(level, n)
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, n, size=(ROUNDS, n))
    tails = [(1 - at) / 2 * 100, (1 + at) / 2 * 100]
    diffs = c - b
    d_lo, d_hi = (float(x) for x in np.percentile(np.median(diffs[picks], axis=1), tails))
    diff_ci = (d_lo, d_hi)
    if not np.all(b != 0):  # no ratio in some round: judge the per-round differences
        if not b.any() and not c.any():
            return Effect(None, None, "same", None, diff_ci, at, m, paired=True) if at >= level else \
                Effect(None, None, "inconclusive", samples_for(level), diff_ci, at, m, paired=True)
        return judged(None, None, diff_ci, at, level, m, _needed(n, n, (d_hi - d_lo) / 2,
                                                                  abs(float(np.median(diffs)))), paired=True)
    ratios = np.round((c / b - 1.0) * 100.0 * np.sign(b), 9)  # per-round effects in %, float noise cut
    point = float(np.median(ratios))
    lo, hi = (float(x) for x in np.percentile(np.median(ratios[picks], axis=1), tails))
    ci = (min(lo, point), max(hi, point))
    target = m - abs(point) if abs(point) < m else abs(point)
    return judged(point, ci, diff_ci, at, level, m, _needed(n, n, (ci[1] - ci[0]) / 2, target), paired=True)


def describe(e: Effect, better: str | None = None) -> str:
    """One phrase: 'higher by 12.3% [10.1, 14.0] (worse)', 'same (within ±2%)', 'inconclusive: about
    N samples per side would settle it'."""
    if e.verdict == "n/a":
        return "n/a"
    if e.verdict == "same":
        return f"same (no difference beyond ±{e.min_effect_pct:g}%)"
    ci = f" [{e.effect_ci[0]:+.1f}%, {e.effect_ci[1]:+.1f}%]" if e.effect_ci else ""
    size = f" by {abs(e.effect_pct):.1f}%{ci}" if e.effect_pct is not None else " (from 0)"
    if e.verdict == "inconclusive":
        measured = f"{e.effect_pct:+.1f}%{ci} ({e.level:.0%} CI), " if e.effect_pct is not None else ""
        return f"inconclusive ({measured}about {e.samples_needed} samples per side would settle it)"
    return f"{e.verdict}{size} ({e.level:.0%} CI)" + (f" ({better})" if better else "")
