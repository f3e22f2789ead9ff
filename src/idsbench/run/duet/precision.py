"""Precision asked, not hoped for (`[duet] precision`, `budget_s`): how many duet samples of what length
give every pair's cost ratio a CI half-width within the precision, and whether the budget allows it (pure:
unit-tested; run/duet/campaign.py runs the plan and adds samples while a pair is short of it).

The model. A duet's per-sample ratio b/a scatters around its median by an absolute amount of CPU time per
side and sample — the host's housekeeping, the drain's edges, the tick — so its relative SD falls as the
CPU time each side spends per sample grows: sd = K / c (c: CPU-s per side per sample). Measured here
(issue 42: A/A, bundled rules, 6 × 8-s samples): 2.1 CPU-s per side → ratios within ±0.8%, 0.4 CPU-s →
±4%, both K ≈ 0.013 CPU-s as an SD (a half-range of 6 samples is ≈ 1.28 SD). With two sides of different
cost, sd = K/√2 · √(1/c_a² + 1/c_b²); a floor (`NOISE_FLOOR`) keeps a very long sample from promising
more than the method resolves. The order-statistic CI of the median of n samples, [x(k), x(n+1−k)]
(`stats.ci_rank`), has a half-width of about sd · Φ⁻¹((n+1−k − 0.375)/(n + 0.25)) (Blom's score of that
order statistic): `half_width_factor`.

Lengthening a sample raises c in proportion and costs only the replay's seconds, adding a sample costs
its fixed part (setup, the sensors' start, drain, stop: `overhead_s`) too, and the half-width falls as
1/c but only as ~1/√n: the plan (`plan_pairs`) tries every n from the spec's `samples` up and lengthens
each pair's samples to what that n needs, and takes the n of least time. The CPU rate per replay second
and the fixed part come from one calibration sample per pair at the spec's length (not counted).

K is this host's at the time it was measured, not a constant: on 2026-12-04, with other work keeping half
of the host busy, an A/A duet at 8k pps with 28-s samples (~1.6 CPU-s per side) scattered ±10% sample to
sample where K promised ±0.8%, and the 50k-pps A/A ±1.5% where it promised ±0.8%. So the plan is a lower
bound of the time: the campaign checks each pair's CI after the planned samples, says at once how far
it is and what would settle it, and adds rounds while budget_s lasts (run/duet/campaign.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from idsbench.analysis.stats import ci_rank

PRIOR_NOISE_CPU_S = 0.013   # K: the per-sample ratio's SD × CPU-s per side per sample (see above)
NOISE_FLOOR = 0.001         # the ratio's SD however long the sample (what the method resolves at best)
DEFAULT_BUDGET_S = 1800.0   # [duet] budget_s unset
MAX_SAMPLES = 60            # the plan tries n up to this
MAX_REPLAY_S = 600.0        # a sample's replay at most this long


def half_width_factor(n: int, level: float = 0.95) -> float:
    """The expected half-width of the median's order-statistic CI of n samples, in SDs."""
    k = ci_rank(n, level)
    upper = n + 1 - k
    return NormalDist().inv_cdf((upper - 0.375) / (n + 0.25)) if upper > (n + 1) / 2 else 0.0


def ratio_sd(cpu_a_s: float, cpu_b_s: float, noise_cpu_s: float = PRIOR_NOISE_CPU_S) -> float:
    """The per-sample ratio's expected SD when each side spends these CPU seconds per sample."""
    if cpu_a_s <= 0 or cpu_b_s <= 0:
        return math.inf
    spread = noise_cpu_s / math.sqrt(2) * math.sqrt(1 / cpu_a_s ** 2 + 1 / cpu_b_s ** 2)
    return math.hypot(spread, NOISE_FLOOR)


@dataclass(frozen=True)
class PairRate:
    """A pair's calibration: each side's CPU seconds per second of replay, the sample's fixed wall time
    beyond the replay, and the spec's replay length."""

    pair_id: str
    cpu_per_s: tuple[float, float]
    overhead_s: float
    base_replay_s: float

    def sd(self, replay_s: float, noise_cpu_s: float = PRIOR_NOISE_CPU_S) -> float:
        return ratio_sd(self.cpu_per_s[0] * replay_s, self.cpu_per_s[1] * replay_s, noise_cpu_s)

    def replay_for(self, sd: float, noise_cpu_s: float = PRIOR_NOISE_CPU_S) -> float | None:
        """The shortest replay (≥ the spec's, whole seconds) whose ratio SD is at most `sd`; None: none is."""
        if sd <= NOISE_FLOOR or min(self.cpu_per_s) <= 0:
            return None
        spread = math.sqrt(sd ** 2 - NOISE_FLOOR ** 2)
        k_eff = noise_cpu_s / math.sqrt(2) * math.sqrt(sum(1 / c ** 2 for c in self.cpu_per_s))
        needed = max(self.base_replay_s, math.ceil(k_eff / spread))
        return float(needed) if needed <= MAX_REPLAY_S else None


@dataclass(frozen=True)
class PairPlan:
    pair_id: str
    replay_s: float
    expected_half_width: float      # relative (0.01 = ±1%)


@dataclass(frozen=True)
class DuetPlan:
    """The samples every pair runs (`samples`, in rounds) and each pair's replay length; `total_s` the
    expected wall time; `feasible`: the precision is expected within the budget."""

    precision: float
    budget_s: float
    samples: int
    pairs: tuple[PairPlan, ...]
    total_s: float
    feasible: bool
    best_s: float | None            # the time the precision needs (None: no plan reaches it)

    def describe(self) -> list[str]:
        """The lines the campaign prints at its start."""
        lines = [f"duet plan: ~{self.samples} samples of {p.replay_s:g} s for ±{self.precision:.2%} "
                 f"at this load ({p.pair_id}: expected ±{p.expected_half_width:.2%})" for p in self.pairs]
        if self.feasible:
            lines.append(f"duet plan: ~{self.total_s:.0f} s in all (budget {self.budget_s:.0f} s)")
        else:
            need = f"~{self.best_s:.0f} s" if self.best_s is not None else "more than any plan this host allows"
            worst = max((p.expected_half_width for p in self.pairs), default=math.inf)
            lines.append(f"duet plan: the budget cannot: ±{self.precision:.2%} needs {need}, the budget is "
                         f"{self.budget_s:.0f} s; within it ~±{worst:.2%} is expected (~{self.total_s:.0f} s); "
                         "raise [duet] budget_s, or ask a wider precision")
        return lines


def _time(n: int, rates: Sequence[PairRate], replays: Sequence[float]) -> float:
    return n * sum(r.overhead_s + s for r, s in zip(rates, replays))


def plan_pairs(rates: Sequence[PairRate], precision: float, budget_s: float, min_samples: int,
               noise_cpu_s: float = PRIOR_NOISE_CPU_S) -> DuetPlan:
    """The least-time plan reaching `precision` for every pair, or, when none fits `budget_s`, the plan
    of best expected precision within it."""
    best: tuple[float, int, list[float]] | None = None
    for n in range(max(2, min_samples), MAX_SAMPLES + 1):
        factor = half_width_factor(n)
        if factor <= 0:
            continue
        replays = [r.replay_for(precision / factor, noise_cpu_s) for r in rates]
        if any(s is None for s in replays):
            continue
        lengths = [float(s) for s in replays if s is not None]
        total = _time(n, rates, lengths)
        if best is None or total < best[0]:
            best = (total, n, lengths)
    if best is not None and best[0] <= budget_s:
        total, n, lengths = best
        return DuetPlan(precision, budget_s, n, _pair_plans(rates, n, lengths, noise_cpu_s), total, True, total)
    n, lengths = _within_budget(rates, budget_s, min_samples, noise_cpu_s)
    return DuetPlan(precision, budget_s, n, _pair_plans(rates, n, lengths, noise_cpu_s), _time(n, rates, lengths),
                    False, best[0] if best is not None else None)


def _pair_plans(rates: Sequence[PairRate], n: int, lengths: Sequence[float], noise_cpu_s: float) -> tuple[PairPlan, ...]:
    factor = half_width_factor(n)
    return tuple(PairPlan(r.pair_id, s, factor * r.sd(s, noise_cpu_s)) for r, s in zip(rates, lengths))


def _within_budget(rates: Sequence[PairRate], budget_s: float, min_samples: int,
                   noise_cpu_s: float) -> tuple[int, list[float]]:
    """The n and common replay length (each pair at least its spec length) that fill the budget with the
    best worst-pair precision."""
    best: tuple[float, int, list[float]] | None = None
    for n in range(max(2, min_samples), MAX_SAMPLES + 1):
        per_round = budget_s / n - sum(r.overhead_s for r in rates)
        base = [r.base_replay_s for r in rates]
        if per_round < sum(base):
            lengths = base
        else:  # one common length x ≥ each spec length: Σ max(L_p, x) = per_round
            lo, hi = 0.0, MAX_REPLAY_S
            for _ in range(50):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if sum(max(b, mid) for b in base) <= per_round else (lo, mid)
            lengths = [float(max(b, math.floor(lo))) for b in base]
        worst = half_width_factor(n) * max(r.sd(s, noise_cpu_s) for r, s in zip(rates, lengths))
        if best is None or worst < best[0]:
            best = (worst, n, lengths)
        if per_round < sum(base):
            break
    assert best is not None
    return best[1], best[2]


def samples_to_settle(n: int, half_width: float, precision: float) -> int:
    """The samples (at the same length) whose CI would be within `precision`: n·(half-width/precision)²."""
    if half_width <= precision:
        return n
    return math.ceil(n * (half_width / precision) ** 2)
