"""The regression gate of `idsbench compare BASE NEW --fail-on "ndr_pps:-5%,sensor_us_per_pkt:+5%"`.

A condition `metric:-X%` fails when the metric went down by X% or more, judged with the effect-size
rules of analysis.effect with X as the smallest effect: the CI of the effect excludes 0 and the
effect reaches −X%. `+X%` is the same upwards; `X%` (no sign) either way. A change inside the noise
(CI across 0) or below X never fails; an inconclusive one is reported as a note.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from idsbench.analysis.compare import MetricDelta, compare_tables
from idsbench.analysis.effect import LEVEL
from idsbench.errors import SpecError
from idsbench.metrics import REGISTRY, metric
from idsbench.store.schema import CASE_METRICS, CaseResult

_CONDITION = re.compile(r"^\s*([a-z0-9_]+)\s*:\s*([+-]?)\s*(\d+(?:\.\d+)?)\s*%?\s*$")
GATED = frozenset(REGISTRY) | frozenset(CASE_METRICS)  # what a condition can name
FIX = ('write conditions as METRIC:[+|-]PERCENT%, comma-separated, e.g. --fail-on "ndr_pps:-5%,'
       'sensor_us_per_pkt:+5%" (-: fail when it fell by that much, +: when it rose, no sign: either).')


@dataclass(frozen=True)
class Condition:
    metric: str
    threshold_pct: float                          # > 0
    direction: Literal["higher", "lower", "either"]

    @property
    def threshold(self) -> str:
        return {"higher": "+", "lower": "-", "either": "±"}[self.direction] + f"{self.threshold_pct:g}%"

    def __str__(self) -> str:
        return f"{self.metric}:{self.threshold}"

    def fails(self, verdict: str) -> bool:
        return verdict in ("higher", "lower") and self.direction in (verdict, "either")


def parse_conditions(text: str) -> list[Condition]:
    """The conditions of --fail-on; SpecError naming the bad one."""
    out = []
    for part in (p for p in text.split(",") if p.strip()):
        match = _CONDITION.match(part)
        if not match:
            raise SpecError(f"--fail-on condition {part.strip()!r} is not METRIC:[+|-]PERCENT%.", fix=FIX)
        name, sign, value = match.groups()
        if name not in GATED:
            near = difflib.get_close_matches(name, sorted(GATED), n=1)
            raise SpecError(f"--fail-on condition {part.strip()!r}: {name} is no metric of the results"
                            + (f" (did you mean {near[0]}?)." if near else "."),
                            fix="name a metric of `idsbench results --format json`, e.g. sensor_us_per_pkt, "
                                "sensor_cpu_pct, drop_ratio, ndr_pps (when both campaigns were searched).")
        threshold = float(value)
        if threshold <= 0:
            raise SpecError(f"--fail-on condition {part.strip()!r} has a threshold of 0%.", fix=FIX)
        direction: Literal["higher", "lower", "either"] = {"+": "higher", "-": "lower"}.get(sign, "either")  # type: ignore[assignment]
        out.append(Condition(name, threshold, direction))
    if not out:
        raise SpecError("--fail-on is empty.", fix=FIX)
    return out


@dataclass(frozen=True)
class GateResult:
    failures: tuple[str, ...]   # one line per failed condition and case
    notes: tuple[str, ...]      # inconclusive conditions (never a failure)
    checked: int                # condition × case pairs judged


def _value(key: str, value: float | None, ci: tuple[float, float] | None) -> str:
    m = metric(key)
    return f"{m.with_ci(value, ci)} {m.unit}".rstrip()


def failure_line(cond: Condition, case: str, d: MetricDelta, base_label: str = "base",
                 new_label: str = "new") -> str:
    """'FAIL metric (case): base V [CI] → new V [CI]: lower by X% [lo%, hi%] (95% CI), threshold -5%'."""
    eff = f"{d.verdict}"
    if d.effect_pct is not None:
        eff += f" by {abs(d.effect_pct):.1f}%"
    if d.effect_ci:
        eff += f" [{d.effect_ci[0]:+.1f}%, {d.effect_ci[1]:+.1f}%] ({d.level:.0%} CI)"
    return (f"FAIL {cond.metric} ({case}): {base_label} {_value(cond.metric, d.base, d.base_ci)} → {new_label} "
            f"{_value(cond.metric, d.contender, d.contender_ci)}: {eff}, threshold {cond.threshold}")


def check(base: str, b_rows: Sequence[CaseResult], new: str, c_rows: Sequence[CaseResult],
          conditions: Sequence[Condition], level: float = LEVEL) -> GateResult:
    """Judge every condition on every matched case; SpecError when a condition's metric has no value
    on either side of any matched case (a misspelt metric must not pass silently)."""
    failures: list[str] = []
    notes: list[str] = []
    checked = 0
    for cond in conditions:
        cmp = compare_tables(base, b_rows, new, c_rows, (cond.metric,), min_effect_pct=cond.threshold_pct,
                             level=level)
        judged = [(row, row.metrics[cond.metric]) for row in cmp.rows
                  if row.metrics[cond.metric].base is not None and row.metrics[cond.metric].contender is not None]
        if not judged:
            raise SpecError(f"--fail-on {cond}: no matched case has {cond.metric} on both sides.",
                            fix="name a metric of `idsbench results --format json` (e.g. sensor_cpu_pct, "
                                "drop_ratio, ndr_pps when both campaigns were searched).")
        for row, d in judged:
            checked += 1
            title = ", ".join(f"{k}={v}" for k, v in row.params.items()) or row.base_case
            if cond.fails(d.verdict):
                failures.append(failure_line(cond, title, d))
            elif d.verdict == "inconclusive":
                short = f" (the samples reach a {d.level:.0%} CI, below the {level:.0%} asked)" if d.level < level else ""
                notes.append(f"note: {cond.metric} ({title}): inconclusive at {cond}{short}; about {d.samples_needed} "
                             "samples per side would settle it")
    return GateResult(tuple(failures), tuple(notes), checked)
