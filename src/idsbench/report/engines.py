"""The report's engine comparison: the share of the rules each engine loaded, and the engines side by
side at each setup, trace, rate, load and limits (medians with CIs; alerts also on the rules every
engine loaded, analysis.engines)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from idsbench.analysis.compare import metric_delta
from idsbench.analysis.engines import EngineRules, common_sids, engine_rules
from idsbench.metrics import columns
from idsbench.plan import trace_label
from idsbench.report.compare_out import verdict_text
from idsbench.report.fmt import median_and_ci, number, value_and_ci
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult

# (title, key, scale, digits) of the side-by-side table, from the metric registry
ENGINE_COLUMNS: tuple[tuple[str, str, float, int], ...] = columns(
    "decoded_pkts", "drop_ratio", "sensor_cpu_pct", "sensor_rss_peak_bytes", "alerts")


@dataclass(frozen=True)
class EngineSection:
    rules: list[dict[str, Any]]       # one row per engine and rule source
    common: int | None                # rule ids every rule-loading engine loaded (None: < 2 such engines)
    groups: list[dict[str, Any]]      # per setup/trace/rate/load/limits: one row per engine
    titles: list[str]


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
                     "rules": number(row["rules"]), "loaded": number(row["loaded"]), "share": f"{share:.1%}",
                     "reasons": "; ".join(f"{t} ({n})" for t, n in top)})
    return rows


def _key(row: CaseResult) -> tuple[object, ...]:
    p = row.params
    return (p.setup, p.trace, p.rate, p.replayers, p.cpus or 0.0, p.memory or "", p.loops)


def engine_section(campaign: Campaign, rows: Sequence[CaseResult]) -> EngineSection | None:
    """None when the campaign ran a single engine."""
    if len({r.params.engine for r in rows}) < 2:
        return None
    rules = engine_rules(campaign.doc)
    common = common_sids(rules)
    groups = []
    for key, members in groupby(sorted(rows, key=_key), key=_key):
        setup, trace, rate, replayers, cpus, memory, _ = key
        engines = []
        ordered = sorted(members, key=lambda m: m.params.engine)
        for r in ordered:
            cells = [median_and_ci(r, k, scale, digits) for _, k, scale, digits in ENGINE_COLUMNS]
            ci = r.extra.get("alerts_common_rules_ci")
            common_cell = value_and_ci(r.extra.get("alerts_common_rules"), tuple(ci) if ci else None, 1.0, 0)
            # each engine after the first: the effect-size verdict against the first (analysis.effect)
            versus = [] if r is ordered[0] else \
                [*(verdict_text(metric_delta(ordered[0], r, k)) for _, k, _, _ in ENGINE_COLUMNS), ""]
            engines.append({"engine": r.params.engine, "samples": r.samples, "status": r.status,
                            "cells": [*cells, common_cell], "versus": versus,
                            "versus_base": ordered[0].params.engine,
                            "share": "–" if r.extra.get("rules_loaded_share") is None
                            else f"{r.extra['rules_loaded_share']:.1%}"})
        limits = ", ".join(x for x in (f"{cpus:g} CPU" if cpus else "", f"{memory} mem" if memory else "") if x)
        groups.append({"setup": setup, "trace": trace_label(str(trace)), "rate": rate, "load": f"{replayers}X",
                       "limits": limits, "engines": engines})
    titles = [t for t, *_ in ENGINE_COLUMNS] + ["alerts on common rules"]
    return EngineSection(_rule_rows(rules), len(common) if common is not None else None, groups, titles)
