"""The report's engine comparison: the share of the rules each engine loaded, and the engines side by
side at each setup, trace, rate, load and limits (medians with CIs; alerts also on the rules every
engine loaded, analysis.engines)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from idsbench.analysis.compare import metric_delta
from idsbench.analysis.engines import EngineRules, common_sids, engine_rules
from idsbench.metrics import number
from idsbench.plan import trace_label
from idsbench.report.casedata import measure
from idsbench.report.compare_out import verdict_text
from idsbench.report.table import Column, Row, Table, Text, Value, metric_column, table
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult

# the metrics of the side-by-side table (formatted by the metric registry)
ENGINE_METRICS = ("decoded_pkts", "drop_ratio", "sensor_cpu_pct", "sensor_rss_peak_bytes", "alerts")


@dataclass(frozen=True)
class EngineSection:
    rules: list[dict[str, Any]]       # one row per engine and rule source
    common: int | None                # rule ids every rule-loading engine loaded (None: < 2 such engines)
    table: Table                      # per setup/trace/rate/load/limits: one row per engine


def _rule_rows(rules: dict[str, EngineRules]) -> list[dict[str, Any]]:
    """One row per engine and spec source (a source of several files, e.g. builtin:events, summed)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for engine, r in rules.items():
        for s in r.sets:
            key = (engine, str(s.get("source", "?")))
            row = out.setdefault(key, {"engine": engine, "source": key[1], "methods": [], "rules": 0,
                                       "loaded": 0, "reasons": []})
            row["rules"] += int(s.get("rules") or 0)
            row["loaded"] += int(s.get("loaded") or 0)
            row["methods"].append(str(s.get("method", "?")))
            row["reasons"] += [(t, n) for t, n in (s.get("reasons") or []) if isinstance(t, str) and n]
    rows = []
    for row in out.values():
        top = sorted(row["reasons"], key=lambda tn: -tn[1])[:3]
        share = row["loaded"] / row["rules"] if row["rules"] else 1.0
        rows.append({"engine": row["engine"], "source": row["source"], "method": ", ".join(dict.fromkeys(row["methods"])),
                     "rules": number(row["rules"], 0), "loaded": number(row["loaded"], 0), "share": f"{number(share * 100, 1)}%",
                     "reasons": "; ".join(f"{t} ({n})" for t, n in top)})
    return rows


def _key(row: CaseResult) -> tuple[object, ...]:
    p = row.params
    return (p.setup, p.trace, p.rate, p.replayers, p.cpus or 0.0, p.memory or "", p.loops)


def _versus(first: CaseResult, r: CaseResult, key: str) -> str:
    """Each engine after the first: its effect-size verdict against the first (analysis.effect)."""
    return "" if r is first else f"vs {first.params.engine}: {verdict_text(metric_delta(first, r, key))}"


def engine_section(campaign: Campaign, rows: Sequence[CaseResult],
                   colors: Mapping[str, str] | None = None) -> EngineSection | None:
    """None when the campaign ran a single engine."""
    if len({r.params.engine for r in rows}) < 2:
        return None
    rules = engine_rules(campaign.doc)
    common = common_sids(rules)
    columns = [Column("setup", "setup"), Column("trace", "trace"), Column("rate", "rate"),
               Column("load", "load", "right"), Column("limits", "limits"), Column("engine", "engine"),
               Column("samples", "samples", "right"), metric_column("rules_loaded_share"),
               *(metric_column(k) for k in ENGINE_METRICS), metric_column("alerts_common_rules"),
               Column("status", "status")]
    body: list[Row] = []
    for key, members in groupby(sorted(rows, key=_key), key=_key):
        setup, trace, rate, replayers, cpus, memory, _ = key
        limits = ", ".join(x for x in (f"{cpus:g} CPU" if cpus else "", f"{memory} mem" if memory else "") if x)
        ordered = sorted(members, key=lambda m: m.params.engine)
        first = ordered[0]
        for r in ordered:
            group: list[Value] = [Text(str(setup), swatch=(colors or {}).get(str(setup), "")), trace_label(str(trace)),
                                  str(rate), f"{replayers}X", limits] if r is first else ["", "", "", "", ""]
            body.append(Row((*group, Text(r.params.engine, css="engine"), r.samples, measure(r, "rules_loaded_share"),
                             *(measure(r, k, _versus(first, r, k)) for k in ENGINE_METRICS),
                             measure(r, "alerts_common_rules"),
                             Text(r.status, css="status-ok" if r.status == "ok" else "status-bad")),
                            "" if r.status == "ok" else "failed"))
    return EngineSection(_rule_rows(rules), len(common) if common is not None else None, table(columns, body))
