"""The report's engine comparison: the share of the rules each engine loaded, and the engines side by
side at each setup, trace, rate, load and limits (medians with CIs; alerts also on the rules every
engine loaded, analysis.engines)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby

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
class RuleRow:
    """One engine and rule source of the "Rules each engine loaded" table (strings, ready to print)."""

    engine: str
    source: str
    method: str
    rules: str
    loaded: str
    share: str
    reasons: str


@dataclass(frozen=True)
class EngineCells:
    """One engine's line of a group: its medians with CIs and its verdicts against the first engine."""

    engine: str
    samples: int
    status: str
    cells: list[tuple[str, str]]
    versus: list[str]
    versus_base: str
    share: str


@dataclass(frozen=True)
class EngineGroup:
    """The engines at one setup, trace, rate, load and limits."""

    setup: str
    trace: str
    rate: str
    load: str
    limits: str
    engines: list[EngineCells]


@dataclass(frozen=True)
class EngineSection:
    rules: list[RuleRow]              # one row per engine and rule source
    common: int | None                # rule ids every rule-loading engine loaded (None: < 2 such engines)
    groups: list[EngineGroup]         # per setup/trace/rate/load/limits: one row per engine
    titles: list[str]


@dataclass
class _Source:
    rules: int = 0
    loaded: int = 0
    methods: list[str] = field(default_factory=list)
    reasons: list[tuple[str, int]] = field(default_factory=list)


def _rule_rows(rules: dict[str, EngineRules]) -> list[RuleRow]:
    """One row per engine and spec source (a source of several files, e.g. builtin:events, summed)."""
    out: dict[tuple[str, str], _Source] = {}
    for engine, r in rules.items():
        for s in r.sets:
            acc = out.setdefault((engine, s.source), _Source())
            acc.rules += s.rules
            acc.loaded += s.loaded
            acc.methods.append(s.method)
            acc.reasons += [(t, n) for t, n in s.reasons if n]
    rows = []
    for (engine, source), acc in out.items():
        top = sorted(acc.reasons, key=lambda tn: -tn[1])[:3]
        share = acc.loaded / acc.rules if acc.rules else 1.0
        rows.append(RuleRow(engine, source, ", ".join(dict.fromkeys(acc.methods)), number(acc.rules),
                            number(acc.loaded), f"{share:.1%}", "; ".join(f"{t} ({n})" for t, n in top)))
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
            on_common = r.engines.common if r.engines else None
            common_cell = value_and_ci(on_common.alerts_common_rules if on_common else None,
                                       on_common.alerts_common_rules_ci if on_common else None, 1.0, 0)
            # each engine after the first: the effect-size verdict against the first (analysis.effect)
            versus = [] if r is ordered[0] else \
                [*(verdict_text(metric_delta(ordered[0], r, k)) for _, k, _, _ in ENGINE_COLUMNS), ""]
            share = r.engines.rules_loaded_share if r.engines else None
            engines.append(EngineCells(r.params.engine, r.samples, r.status, [*cells, common_cell], versus,
                                       ordered[0].params.engine, "–" if share is None else f"{share:.1%}"))
        limits = ", ".join(x for x in (f"{cpus:g} CPU" if cpus else "", f"{memory} mem" if memory else "") if x)
        groups.append(EngineGroup(str(setup), trace_label(str(trace)), str(rate), f"{replayers}X", limits, engines))
    titles = [t for t, *_ in ENGINE_COLUMNS] + ["alerts on common rules"]
    return EngineSection(_rule_rows(rules), len(common) if common is not None else None, groups, titles)
