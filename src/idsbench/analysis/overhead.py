"""Overhead of each setup vs a baseline setup (default baremetal) at the same trace, rate, load, limits.

For each metric: baseline and contender medians, their difference (contender - baseline) and that
difference in percent of the baseline median, each with a percentile-bootstrap CI (fixed seed) at the level
the samples reach (95% with 6 or more per side, else what the smaller side's median CI covers:
`analysis.effect.reached_level`, `MetricOverhead.level`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from idsbench.analysis.cases import CaseSamples, case_samples
from idsbench.analysis.effect import LEVEL, reached_level
from idsbench.analysis.stats import bootstrap_diff, median
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseParams

# metric key -> what its difference means (positive = more of it in the contender)
OVERHEAD_METRICS = {
    "host_cpu_pct": "extra host CPU (percentage points of all CPUs)",
    "sensor_host_cpu_pct": "extra host CPU without the sender's (percentage points of all CPUs)",
    "sensor_cpu_pct": "extra sensor CPU (% of one core)",
    "sensor_rss_peak_bytes": "extra sensor memory (bytes, peak RSS)",
    "dropped_pkts": "extra dropped packets",
    "drop_ratio": "extra drop ratio (dropped / captured)",
    "decode_ratio": "change of the decode rate (decoded / sent; negative = lower)",
}
MATCH_KEYS = ("trace", "rate", "loops", "cpus", "memory", "replayers", "engine", "sender", "config")


@dataclass(frozen=True)
class MetricOverhead:
    baseline: float | None
    value: float | None
    diff: float | None
    diff_ci: tuple[float, float] | None
    pct: float | None
    pct_ci: tuple[float, float] | None
    level: float = LEVEL   # what diff_ci and pct_ci were computed at


@dataclass(frozen=True)
class Overhead:
    """A setup's case against the baseline setup's case with the same parameters."""

    case: str
    baseline_case: str
    setup: str
    baseline: str
    contender: CaseParams
    metrics: dict[str, MetricOverhead]


def _key(cs: CaseSamples) -> tuple[Any, ...]:
    return tuple(getattr(cs.info.params, k) for k in MATCH_KEYS)


def overhead(campaign: Campaign, baseline: str = "baremetal") -> list[Overhead]:
    """One entry per non-baseline case that has a matching baseline case; [] when there is none."""
    groups = [cs for cs in case_samples(campaign) if cs.used]
    base = {_key(cs): cs for cs in groups if cs.info.params.setup == baseline}
    out = []
    for cs in groups:
        p = cs.info.params
        ref = base.get(_key(cs))
        if p.setup == baseline or ref is None:
            continue
        out.append(Overhead(
            case=cs.info.case_id, baseline_case=ref.info.case_id, setup=p.setup, baseline=baseline,
            contender=p,
            metrics={m: metric_overhead(ref.column(m), cs.column(m)) for m in OVERHEAD_METRICS}))
    return out


def overhead_note(setups: Sequence[str], baseline: str = "baremetal") -> str:
    """Why there is no overhead table, for the setups a campaign ran."""
    ran = set(setups)
    if ran == {baseline}:
        return f"every case runs on {baseline}: there is no other setup to set against it"
    if baseline not in ran:
        return f"the campaign has no {baseline} case to set the other setups ({', '.join(sorted(ran))}) against"
    return f"no other setup has a case with the trace, rate, load and limits of a {baseline} case"


def metric_overhead(base: list[float | None], contender: list[float | None]) -> MetricOverhead:
    mb, mc = median(base), median(contender)
    diff = None if mb is None or mc is None else mc - mb
    pct = None if diff is None or not mb else diff / abs(mb) * 100.0
    level = reached_level(LEVEL, _count(base), _count(contender))
    dci = bootstrap_diff(base, contender, level=level)
    pci = bootstrap_diff(base, contender, relative=True, level=level) if pct is not None else None
    return MetricOverhead(mb, mc, diff, dci, pct, pci, level)


def _count(values: list[float | None]) -> int:
    return sum(1 for v in values if v is not None and v == v)  # v == v: not NaN
