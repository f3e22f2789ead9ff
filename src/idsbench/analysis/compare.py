"""Compare two campaigns: cases matched by their parameters, medians side by side.

Cases are matched on the parameters that vary within either campaign (setup, load, trace…); a
parameter that is constant within each campaign but differs between them (e.g. the CPU limit, the
Suricata version is not a case parameter) is the thing being compared and is reported in `differs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from idsbench.analysis.cases import case_table
from idsbench.analysis.load import PARAM_KEYS, Campaign

COMPARE_METRICS = ("sent_pkts", "captured_pkts", "dropped_pkts", "drop_ratio", "decoded_pkts",
                   "decoded_bytes", "alerts", "sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct",
                   "stable_after_s")


@dataclass(frozen=True)
class Comparison:
    base: str
    contender: str
    match_keys: tuple[str, ...]
    differs: dict[str, tuple[Any, Any]]
    rows: list[dict[str, Any]] = field(default_factory=list)
    only_base: list[str] = field(default_factory=list)
    only_contender: list[str] = field(default_factory=list)


def _varying(rows: list[dict[str, Any]]) -> set[str]:
    return {k for k in PARAM_KEYS if len({repr(r.get(k)) for r in rows}) > 1}


def _constant(rows: list[dict[str, Any]], key: str) -> Any:
    values = {repr(r.get(key)): r.get(key) for r in rows}
    return next(iter(values.values())) if len(values) == 1 else None


def metric_delta(b: dict[str, Any], c: dict[str, Any], key: str) -> dict[str, Any]:
    mb, mc = b.get(key), c.get(key)
    cb, cc = b.get(f"{key}_ci"), c.get(f"{key}_ci")
    diff = None if mb is None or mc is None else mc - mb
    pct = diff / abs(mb) * 100.0 if diff is not None and mb else None
    overlap = None if not cb or not cc else not (cc[0] > cb[1] or cc[1] < cb[0])
    if diff is None:
        direction = "n/a"
    elif overlap or diff == 0:
        direction = "same"  # CIs overlap: no clear difference
    else:
        direction = "higher" if diff > 0 else "lower"
    return {"base": mb, "base_ci": cb, "contender": mc, "contender_ci": cc, "diff": diff, "pct": pct,
            "ci_overlap": overlap, "direction": direction}


def compare_campaigns(base: Campaign, contender: Campaign,
                      metrics: tuple[str, ...] = COMPARE_METRICS) -> Comparison:
    return compare_tables(base.name, case_table(base), contender.name, case_table(contender), metrics)


def compare_tables(base: str, b_rows: list[dict[str, Any]], contender: str, c_rows: list[dict[str, Any]],
                   metrics: tuple[str, ...] = COMPARE_METRICS) -> Comparison:
    """compare_campaigns on two case tables (e.g. read back from the result store)."""
    keys = tuple(k for k in PARAM_KEYS if k in _varying(b_rows) | _varying(c_rows))
    differs = {}
    for k in PARAM_KEYS:
        if k not in keys and b_rows and c_rows:
            vb, vc = _constant(b_rows, k), _constant(c_rows, k)
            if vb != vc:
                differs[k] = (vb, vc)
    index = {tuple(repr(r.get(k)) for k in keys): r for r in c_rows}
    out, matched = [], set()
    for b in b_rows:
        c = index.get(tuple(repr(b.get(k)) for k in keys))
        if c is None:
            continue
        matched.add(c["case"])
        out.append({"base_case": b["case"], "contender_case": c["case"],
                    **{k: b.get(k) for k in keys},
                    "samples": [b["samples"], c["samples"]], "status": [b["status"], c["status"]],
                    "metrics": {m: metric_delta(b, c, m) for m in metrics}})
    only_base = [b["case"] for b in b_rows if b["case"] not in {r["base_case"] for r in out}]
    only_contender = [c["case"] for c in c_rows if c["case"] not in matched]
    return Comparison(base, contender, keys, differs, out, only_base, only_contender)
