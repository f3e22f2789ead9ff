"""Compare two campaigns: cases matched by their parameters, medians side by side.

Cases are matched on the parameters that vary within either campaign (setup, load, trace…); a
parameter that is constant within each campaign but differs between them (e.g. the CPU limit, the
Suricata version is not a case parameter) is the thing being compared and is reported in `differs`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from idsbench.analysis.cases import case_table
from idsbench.errors import InputError
from idsbench.probe.diff import diff_paths
from idsbench.store.layout import PROBE_FILE
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseParams, CaseResult

PARAM_KEYS = tuple(CaseParams.model_fields)
COMPARE_METRICS = ("sent_pkts", "captured_pkts", "dropped_pkts", "drop_ratio", "decoded_pkts",
                   "decoded_bytes", "alerts", "sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct",
                   "stable_after_s")


@dataclass(frozen=True)
class MetricDelta:
    base: float | None
    base_ci: tuple[float, float] | None
    contender: float | None
    contender_ci: tuple[float, float] | None
    diff: float | None
    pct: float | None
    ci_overlap: bool | None
    direction: str  # higher | lower | same (CIs overlap) | n/a


@dataclass(frozen=True)
class MatchedCase:
    base_case: str
    contender_case: str
    params: dict[str, Any]          # the match keys and their (shared) values
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
    host_differs: list[str] = field(default_factory=list)  # probe.json (and sensor.set) differences


def _param(r: CaseResult, key: str) -> Any:
    return getattr(r.params, key)


def _varying(rows: Sequence[CaseResult]) -> set[str]:
    return {k for k in PARAM_KEYS if len({repr(_param(r, k)) for r in rows}) > 1}


def _constant(rows: Sequence[CaseResult], key: str) -> Any:
    values = {repr(_param(r, key)): _param(r, key) for r in rows}
    return next(iter(values.values())) if len(values) == 1 else None


def metric_delta(b: CaseResult, c: CaseResult, key: str) -> MetricDelta:
    mb, mc = b.medians.get(key), c.medians.get(key)
    cb, cc = b.cis.get(key), c.cis.get(key)
    diff = None if mb is None or mc is None else mc - mb
    pct = diff / abs(mb) * 100.0 if diff is not None and mb else None
    overlap = None if not cb or not cc else not (cc[0] > cb[1] or cc[1] < cb[0])
    if diff is None:
        direction = "n/a"
    elif overlap or diff == 0:
        direction = "same"
    else:
        direction = "higher" if diff > 0 else "lower"
    return MetricDelta(mb, cb, mc, cc, diff, pct, overlap, direction)


def compare_campaigns(base: Campaign, contender: Campaign,
                      metrics: tuple[str, ...] = COMPARE_METRICS) -> Comparison:
    cmp = compare_tables(base.name, case_table(base), contender.name, case_table(contender), metrics)
    return dataclasses.replace(cmp, host_differs=host_differences(base.root, contender.root))


def host_differences(base: Path, contender: Path) -> list[str]:
    """What differs between the two campaigns' hosts (their probe.json) and `sensor.set` overrides;
    a line saying so when either campaign has no probe."""
    missing = [str(p) for p in (base, contender) if not (p / PROBE_FILE).is_file()]
    if missing:
        return [f"not compared: no {PROBE_FILE} in {', '.join(missing)}"]
    try:
        return [str(d) for d in diff_paths(base, contender)]
    except InputError as exc:
        return [f"not compared: {exc}"]


def compare_tables(base: str, b_rows: Sequence[CaseResult], contender: str, c_rows: Sequence[CaseResult],
                   metrics: tuple[str, ...] = COMPARE_METRICS) -> Comparison:
    """compare_campaigns on two case tables (e.g. read back from the result store)."""
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
            metrics={m: metric_delta(b, c, m) for m in metrics}))
    only_base = [b.case for b in b_rows if b.case not in {r.base_case for r in out}]
    only_contender = [c.case for c in c_rows if c.case not in matched]
    return Comparison(base, contender, keys, differs, out, only_base, only_contender)
