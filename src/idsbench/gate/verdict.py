"""The gate's verdicts and its stopping rule (pure).

Per trace the duet gives one cost ratio head/base per sample (CPU per packet, both sides on the same
packets at the same time, analysis/duet.py). Their median and its order-statistic CI (`stats.median_ci`)
decide, with m = the threshold in percent and [lo, hi] the CI as effects (ratio − 1, in %):
- `same`: the CI lies inside ±m;
- `regression`: the CI lies clear above +m; `improvement`: clear below −m;
- `unknown`: anything else (the CI straddles ±m), or fewer than MIN_SAMPLES samples; `samples_needed` is
  how many samples in all would settle it if the spread holds (a CI's half-width shrinks as 1/√n: to
  m − |effect| for `same`, below |effect| − m for a difference).
Samples are added round by round until every trace is settled or the budget ends (`plan.py`); a settled
trace gets no more samples. The A/A arm (base against base, in the same rounds) is judged by the same
rule: its CI half-width is the noise floor; when its CI lies clear of ±m the method shows a difference
between identical sides on this host, and no trace's difference is believed (overall `unknown`).

The overall verdict: `unknown` when the A/A arm is clear of ±m; else `regression` when any trace regressed;
else `unknown` when any trace is; else `improvement` when any trace improved; else `same`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from idsbench.analysis.stats import ci_coverage, median, median_ci

GateVerdict = Literal["regression", "improvement", "same", "unknown"]
VERDICTS: tuple[GateVerdict, ...] = ("regression", "improvement", "same", "unknown")
MIN_SAMPLES = 6          # the order-statistic CI of a median reaches 95% coverage from 6 samples (min..max)
LEVEL = 0.95
MAX_SAMPLES_NEEDED = 10_000


@dataclass(frozen=True)
class Judgement:
    """One set of paired ratios judged: the median ratio, its CI (as ratios), the verdict."""

    ratio: float | None
    ratio_ci: tuple[float, float] | None
    ci_level: float
    verdict: GateVerdict
    samples: int
    samples_needed: int | None      # unknown: the samples in all that would settle it
    reason: str

    @property
    def effect_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1.0) * 100.0

    @property
    def ci_pct(self) -> tuple[float, float] | None:
        return None if self.ratio_ci is None else ((self.ratio_ci[0] - 1) * 100.0, (self.ratio_ci[1] - 1) * 100.0)

    @property
    def half_width_pct(self) -> float | None:
        ci = self.ci_pct
        return None if ci is None else (ci[1] - ci[0]) / 2.0

    @property
    def settled(self) -> bool:
        return self.verdict != "unknown"


def clean(ratios: Sequence[float | None]) -> list[float]:
    return [float(r) for r in ratios if r is not None and math.isfinite(r) and r > 0]


def judge(ratios: Sequence[float | None], threshold_pct: float, *, level: float = LEVEL,
          min_samples: int = MIN_SAMPLES) -> Judgement:
    """The verdict on per-sample ratios head/base at ±threshold_pct (module doc)."""
    vals = clean(ratios)
    n = len(vals)
    mid = median(vals)
    if mid is None:
        return Judgement(None, None, 0.0, "unknown", 0, min_samples, "no sample with both sides ok")
    ci = median_ci(vals, level) if n >= 2 else None
    coverage = ci_coverage(n) if n >= 2 else 0.0
    if n < min_samples or ci is None:
        return Judgement(mid, ci, coverage, "unknown", n, min_samples,
                         f"{n} sample{'s' if n != 1 else ''}; a verdict needs at least {min_samples}")
    m = threshold_pct
    lo, hi = (ci[0] - 1) * 100.0, (ci[1] - 1) * 100.0
    point = (mid - 1) * 100.0
    if -m <= lo and hi <= m:
        return Judgement(mid, ci, coverage, "same", n, None, f"the CI lies inside ±{m:g}%")
    if lo > m:
        return Judgement(mid, ci, coverage, "regression", n, None, f"the CI lies above +{m:g}%")
    if hi < -m:
        return Judgement(mid, ci, coverage, "improvement", n, None, f"the CI lies below -{m:g}%")
    target = abs(m - abs(point))
    half = (hi - lo) / 2.0
    need = MAX_SAMPLES_NEEDED if target <= 1e-9 else math.ceil(n * (half / target) ** 2)
    need = int(min(MAX_SAMPLES_NEEDED, max(need, n + 1)))
    return Judgement(mid, ci, coverage, "unknown", n, need,
                     f"the CI [{lo:+.2f}%, {hi:+.2f}%] straddles ±{m:g}%")


def overall(traces: Sequence[Judgement], aa: Judgement | None) -> tuple[GateVerdict, str]:
    """The gate's verdict over its traces, and why (module doc)."""
    if aa is not None and aa.verdict in ("regression", "improvement"):
        return "unknown", ("the A/A arm (base against base) differs beyond the threshold: the method cannot "
                           "resolve it on this host now")
    verdicts = [t.verdict for t in traces]
    if not verdicts:
        return "unknown", "no trace was measured"
    if "regression" in verdicts:
        return "regression", f"{verdicts.count('regression')} of {len(verdicts)} trace(s) regressed"
    if "unknown" in verdicts:
        return "unknown", f"{verdicts.count('unknown')} of {len(verdicts)} trace(s) not settled"
    if "improvement" in verdicts:
        return "improvement", f"{verdicts.count('improvement')} of {len(verdicts)} trace(s) improved"
    return "same", f"all {len(verdicts)} trace(s) within the threshold"


def exit_status(verdict: GateVerdict, alerts_changed: bool, *, allow_alert_changes: bool = False) -> int:
    """0 = same or improvement, 1 = regression or (unless allowed) any alert difference, 2 = unknown."""
    if verdict == "regression" or (alerts_changed and not allow_alert_changes):
        return 1
    if verdict == "unknown":
        return 2
    return 0


@dataclass(frozen=True)
class RoundDecision:
    go: bool
    traces: tuple[str, ...]         # the traces that get samples in the next round
    reason: str


def side_of_value(ci: tuple[float, float], value: float) -> int:
    """-1 when the CI lies wholly below `value`, +1 wholly above, 0 when it holds it."""
    return -1 if ci[1] < value else (1 if ci[0] > value else 0)


def placed(j: Judgement, effect_pct: float | None) -> bool:
    """Whether a judgement's CI lies wholly on one side of `effect_pct` (a bisect step against half of BAD's
    effect, gate/bisect.py), with the samples a verdict needs; False without such an effect."""
    ci = j.ci_pct
    return effect_pct is not None and ci is not None and j.samples >= MIN_SAMPLES and \
        side_of_value(ci, effect_pct) != 0


def next_round(judged: dict[str, Judgement], rounds_done: int, *, min_rounds: int, max_rounds: int,
               elapsed_s: float, budget_s: float, round_s: float | None,
               decide_at_pct: float | None = None) -> RoundDecision:
    """Whether another round runs, and for which traces: every trace until `min_rounds`, then the
    unsettled ones (`decide_at_pct`: also settled once `placed` against it); none when all are settled,
    `max_rounds` ran, or the next round (as long as the last, `round_s`) would end after the budget."""
    pending = tuple(t for t, j in judged.items()
                    if rounds_done < min_rounds or not (j.settled or placed(j, decide_at_pct)))
    if not pending:
        return RoundDecision(False, (), "every trace is settled")
    if rounds_done >= max_rounds:
        return RoundDecision(False, (), f"{max_rounds} rounds ran (the most a gate runs)")
    if rounds_done and round_s is not None:
        share = len(pending) / max(1, len(judged))
        if elapsed_s + round_s * max(share, 0.5) > budget_s:
            return RoundDecision(False, (), f"the budget of {budget_s:g} s would end during the next round")
    return RoundDecision(True, pending, f"{len(pending)} trace(s) not settled" if rounds_done >= min_rounds
                         else f"round {rounds_done + 1} of at least {min_rounds}")
