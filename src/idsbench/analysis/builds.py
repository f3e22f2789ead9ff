"""Engines/builds of one campaign compared case by case (`suricata` vs `suricata@8.0.6`): the same case
parameters but the engine, each metric's median difference with its effect size, CI and verdict.

The per-metric rule is the comparison code's (`analysis.compare.metric_delta`), called through `_delta`
only: a rewrite of compare.py (effect sizes, a metric registry) replaces that one seam.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from idsbench.analysis import compare
from idsbench.store.schema import CaseResult

BUILD_METRICS = ("sensor_us_per_pkt", "sensor_cpu_pct", "dropped_pkts", "drop_ratio", "alerts", "decoded_pkts")


def _delta(base: CaseResult, contender: CaseResult, metric: str) -> compare.MetricDelta:
    """The seam to the comparison code."""
    return compare.metric_delta(base, contender, metric)


@dataclass(frozen=True)
class BuildComparison:
    base: CaseResult
    contender: CaseResult
    deltas: dict[str, compare.MetricDelta]

    @property
    def engines(self) -> tuple[str, str]:
        return self.base.params.engine, self.contender.params.engine


def _others(r: CaseResult) -> tuple[object, ...]:
    p = r.params.model_dump()
    p.pop("engine")
    return tuple(sorted(p.items()))


def compare_builds(rows: Sequence[CaseResult], metrics: Sequence[str] = BUILD_METRICS) -> list[BuildComparison]:
    """Each case of the first engine (in the spec's order) against the same case of every other engine."""
    groups: dict[tuple[object, ...], list[CaseResult]] = defaultdict(list)
    for r in rows:
        groups[_others(r)].append(r)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        base, *contenders = members
        out += [BuildComparison(base, c, {m: _delta(base, c, m) for m in metrics}) for c in contenders]
    return out
