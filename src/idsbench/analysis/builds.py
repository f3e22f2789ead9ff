"""Cases of one campaign compared along one axis: engines/builds (`suricata` vs `suricata@8.0.6`) or
rulesets (`et-open` vs `et-open-minus-x`): the same case parameters but that one, each metric's median
difference with its effect size, CI and verdict.

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


COMPARED_AXES = ("engine", "rules", "capture", "bypass")  # the case parameters the report compares along
# capture methods (issue 30): CPU per packet, drops, and each method's NDR when the cases were searched
CAPTURE_METRICS = ("sensor_us_per_pkt", "sensor_cpu_pct", "dropped_pkts", "drop_ratio", "decoded_pkts")
# flow bypass (issue 30 item 3): what it saves (CPU per packet) and what it costs (alert recall)
BYPASS_METRICS = ("sensor_us_per_pkt", "sensor_cpu_pct", "bypassed_pkts", "dropped_pkts", "alert_recall")
AXIS_METRICS: dict[str, tuple[str, ...]] = {"capture": CAPTURE_METRICS, "bypass": BYPASS_METRICS}


@dataclass(frozen=True)
class AxisComparison:
    axis: str  # the case parameter that differs: "engine", "rules" or "capture"
    base: CaseResult
    contender: CaseResult
    deltas: dict[str, compare.MetricDelta]

    @property
    def values(self) -> tuple[str, str]:
        return str(getattr(self.base.params, self.axis)), str(getattr(self.contender.params, self.axis))

    @property
    def engines(self) -> tuple[str, str]:
        return self.base.params.engine, self.contender.params.engine


def _others(r: CaseResult, axis: str) -> tuple[object, ...]:
    p = r.params.model_dump()
    p.pop(axis)
    return tuple(sorted(p.items()))


def compare_along(rows: Sequence[CaseResult], axis: str,
                  metrics: Sequence[str] | None = None) -> list[AxisComparison]:
    """Each case of the axis' first value (in the spec's order) against the same case with every other value
    (`metrics`: the axis' own, AXIS_METRICS, else BUILD_METRICS; NDR and PDR added when both were searched)."""
    metrics = tuple(metrics if metrics is not None else AXIS_METRICS.get(axis, BUILD_METRICS))
    groups: dict[tuple[object, ...], list[CaseResult]] = defaultdict(list)
    for r in rows:
        groups[_others(r, axis)].append(r)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        base, *contenders = members
        for c in contenders:
            searched = tuple(k for k in ("ndr_pps",) if base.search is not None and c.search is not None
                             and k not in metrics)
            out.append(AxisComparison(axis, base, c, {m: _delta(base, c, m) for m in (*metrics, *searched)}))
    return out
