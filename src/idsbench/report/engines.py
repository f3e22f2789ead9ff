"""The report's engine comparison: the share of the rules each engine loaded, and the engines side by
side at each setup, trace, rate, load and limits (medians with CIs; alerts also on the rules every
engine loaded, analysis.engines)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

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
class RuleRow:
    """One engine and rule source of the "Rules each engine loaded" table (strings, ready to print)."""

    engine: str
    source: str
    method: str
    rules: str
    loaded: str
    share: str
    reasons: str


@dataclass
class _Source:
    rules: int = 0
    loaded: int = 0
    methods: list[str] = field(default_factory=list)
    reasons: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class EngineSection:
    rules: list[RuleRow]              # one row per engine and rule source
    common: int | None                # rule ids every rule-loading engine loaded (None: < 2 such engines)
    table: Table                      # per setup/trace/rate/load/limits: one row per engine


def _rule_rows(rules: dict[str, EngineRules]) -> list[RuleRow]:
    """One row per engine and spec source (a source of several files, e.g. builtin:events, summed)."""
    out: dict[tuple[str, str], _Source] = {}
    for engine, r in rules.items():
        for s in r.sets:
            acc = out.setdefault((engine, s.source), _Source())
            acc.rules += s.rules
            acc.loaded += s.loaded
            acc.methods.append(s.method)
            acc.reasons += [(reason, n) for reason, n in s.reasons if n]
    rows = []
    for (engine, source), acc in out.items():
        top = sorted(acc.reasons, key=lambda tn: -tn[1])[:3]
        share = acc.loaded / acc.rules if acc.rules else 1.0
        rows.append(RuleRow(engine, source, ", ".join(dict.fromkeys(acc.methods)), number(acc.rules, 0),
                            number(acc.loaded, 0), f"{number(share * 100, 1)}%",
                            "; ".join(f"{reason} ({n})" for reason, n in top)))
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
    rulesets = {r.params.rules for r in rows}
    common = common_sids(rules, ruleset=rulesets.pop()) if len(rulesets) == 1 else None
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
