"""Compare two campaigns: cases matched by their parameters, medians side by side.

Cases are matched on the parameters that vary within either campaign (setup, load, trace…); a
parameter that is constant within each campaign but differs between them (e.g. the CPU limit, the
Suricata version is not a case parameter) is the thing being compared and is reported in `differs`.
Each metric's difference is judged by its effect size and CI against `min_effect_pct`
(analysis.effect): higher, lower, same (no difference beyond it) or inconclusive — from per-round
ratios (`paired`) when the two cases' samples ran round by round (interleaved), else from the two
sides' samples.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from idsbench.analysis.cases import case_table
from idsbench.analysis.effect import DEFAULT_MIN_EFFECT_PCT, LEVEL, Verdict, effect, paired_effect
from idsbench.analysis.values import ci_of as _ci
from idsbench.analysis.values import median_of as _median
from idsbench.analysis.values import paired_values, sample_values
from idsbench.errors import InputError
from idsbench.metrics import metric
from idsbench.probe.diff import diff_paths
from idsbench.store.layout import PROBE_FILE
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseParams, CaseResult

PARAM_KEYS = tuple(CaseParams.model_fields)
COMPARE_METRICS = ("sent_pkts", "captured_pkts", "dropped_pkts", "drop_ratio", "decoded_pkts",
                   "decoded_bytes", "alerts", "sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct",
                   "stable_after_s")
# Compared too when either side has them (later analyses: cost per packet, fixed cost, searches).
OPTIONAL_METRICS = ("sensor_us_per_pkt", "sensor_us_per_pkt_net", "sensor_instr_per_pkt", "sensor_cycles_per_pkt",
                    "overhead_s", "ndr_pps", "pdr_pps")


@dataclass(frozen=True)
class MetricDelta:
    base: float | None
    base_ci: tuple[float, float] | None
    contender: float | None
    contender_ci: tuple[float, float] | None
    diff: float | None
    pct: float | None
    ci_overlap: bool | None
    direction: str  # = verdict (kept for older readers)
    effect_pct: float | None = None            # median ratio − 1, in % (analysis.effect)
    effect_ci: tuple[float, float] | None = None
    verdict: Verdict = "n/a"                   # higher | lower | same | inconclusive | n/a
    samples_needed: int | None = None          # per side, when inconclusive
    better: str | None = None                  # better | worse (the registry's direction), None if neutral
    level: float = 0.95
    min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT
    paired: bool = False                       # the effect is the median of per-round ratios (interleaved)


@dataclass(frozen=True)
class MatchedCase:
    base_case: str
    contender_case: str
    params: dict[str, Any]          # the match keys and their (shared) values; Any: each axis has its own type
    samples: tuple[int, int]
    status: tuple[str, str]
    ci_level: tuple[float, float]
    metrics: dict[str, MetricDelta]


@dataclass(frozen=True)
class Comparison:
    base: str
    contender: str
    match_keys: tuple[str, ...]
    differs: dict[str, tuple[Any, Any]]
    rows: list[MatchedCase] = field(default_factory=list)
    only_base: list[str] = field(default_factory=list)
    only_contender: list[str] = field(default_factory=list)
    host_differs: list[str] = field(default_factory=list)  # host probe (and sensor.set) differences


def _param(r: CaseResult, key: str) -> Any:
    return getattr(r.params, key)


def _varying(rows: Sequence[CaseResult]) -> set[str]:
    return {k for k in PARAM_KEYS if len({repr(_param(r, k)) for r in rows}) > 1}


def _constant(rows: Sequence[CaseResult], key: str) -> Any:
    values = {repr(_param(r, key)): _param(r, key) for r in rows}
    return next(iter(values.values())) if len(values) == 1 else None


def metric_delta(b: CaseResult, c: CaseResult, key: str,
                 min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT, level: float = LEVEL) -> MetricDelta:
    """Medians, CIs and the effect (with its CI and verdict) of `key` from case `b` to case `c`."""
    mb, mc = _median(b, key), _median(c, key)
    cb, cc = _ci(b, key), _ci(c, key)
    diff = None if mb is None or mc is None else mc - mb
    pct = diff / abs(mb) * 100.0 if diff is not None and mb else None
    overlap = None if not cb or not cc else not (cc[0] > cb[1] or cc[1] < cb[0])
    rounds = paired_values(b, c, key)
    e = paired_effect(*rounds, min_effect_pct=min_effect_pct, level=level) if rounds else \
        effect(sample_values(b, key), sample_values(c, key), min_effect_pct=min_effect_pct, level=level)
    return MetricDelta(mb, cb, mc, cc, diff, pct, overlap, e.verdict, e.effect_pct, e.effect_ci, e.verdict,
                       e.samples_needed, metric(key).judge(e.verdict), e.level, e.min_effect_pct, e.paired)


def metrics_of(b_rows: Sequence[CaseResult], c_rows: Sequence[CaseResult],
               metrics: tuple[str, ...] = COMPARE_METRICS) -> tuple[str, ...]:
    """`metrics` plus the optional ones either side has a value of."""
    rows = [*b_rows, *c_rows]
    extra = tuple(k for k in OPTIONAL_METRICS if k not in metrics and any(_median(r, k) is not None for r in rows))
    return metrics + extra


def compare_campaigns(base: Campaign, contender: Campaign, metrics: tuple[str, ...] = COMPARE_METRICS, *,
                      min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT, level: float = LEVEL) -> Comparison:
    cmp = compare_tables(base.name, case_table(base), contender.name, case_table(contender), metrics,
                         min_effect_pct=min_effect_pct, level=level)
    return dataclasses.replace(cmp, host_differs=host_differences(base.root, contender.root))


def host_differences(base: Path, contender: Path) -> list[str]:
    """What differs between the two campaigns' hosts (their stored host probes) and `sensor.set` overrides;
    a line saying so when either campaign has no probe."""
    missing = [str(p) for p in (base, contender) if not (p / PROBE_FILE).is_file()]
    if missing:
        return [f"not compared: no {PROBE_FILE} in {', '.join(missing)}"]
    try:
        return [str(d) for d in diff_paths(base, contender)]
    except InputError as exc:
        return [f"not compared: {exc}"]


def compare_tables(base: str, b_rows: Sequence[CaseResult], contender: str, c_rows: Sequence[CaseResult],
                   metrics: tuple[str, ...] = COMPARE_METRICS, *,
                   min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT, level: float = LEVEL) -> Comparison:
    """compare_campaigns on two case tables (e.g. read back from the result store). `metrics` are
    compared, plus OPTIONAL_METRICS either side has; `level`: the confidence a verdict needs (95%)."""
    metrics = metrics_of(b_rows, c_rows, metrics)
    keys = tuple(k for k in PARAM_KEYS if k in _varying(b_rows) | _varying(c_rows))
    differs = {}
    for k in PARAM_KEYS:
        if k not in keys and b_rows and c_rows:
            vb, vc = _constant(b_rows, k), _constant(c_rows, k)
            if vb != vc:
                differs[k] = (vb, vc)
    index = {tuple(repr(_param(r, k)) for k in keys): r for r in c_rows}
    out: list[MatchedCase] = []
    matched: set[str] = set()
    for b in b_rows:
        c = index.get(tuple(repr(_param(b, k)) for k in keys))
        if c is None:
            continue
        matched.add(c.case)
        out.append(MatchedCase(
            base_case=b.case, contender_case=c.case, params={k: _param(b, k) for k in keys},
            samples=(b.samples, c.samples), status=(b.status, c.status), ci_level=(b.ci_level, c.ci_level),
            metrics={m: metric_delta(b, c, m, min_effect_pct, level) for m in metrics}))
    only_base = [b.case for b in b_rows if b.case not in {r.base_case for r in out}]
    only_contender = [c.case for c in c_rows if c.case not in matched]
    return Comparison(base, contender, keys, differs, out, only_base, only_contender)
