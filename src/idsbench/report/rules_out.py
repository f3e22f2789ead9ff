"""What a rule profiler counted (analysis/rules.py) in every format: `results DIR --rules` as JSON, CSV
(the contract's columns) or text tables, and the report's "Costliest rules" section (the same tables)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from idsbench.analysis.rules import GroupCost, RuleRow, RuleTime, case_rule_catalog, case_rule_time, group_costs, rule_rows
from idsbench.errors import SpecError
from idsbench.metrics import number
from idsbench.report import export
from idsbench.report.table import Column, Figure, Table, Text, table
from idsbench.store.reader import Campaign

# `results --rules --format csv`: these columns, in this order (the JSON rows carry `hints` and `samples` too)
CSV_FIELDS = ("case", "engine", "gid", "sid", "msg", "file", "category", "checks", "matches", "ticks_total",
              "ticks_avg", "ticks_max", "unit", "share", "time_share", "ticks_net", "ranked_by")
LEGEND = ("net of clock: the total minus checks × one read of the profiler's clock (probe timers.cpuid_rdtsc_ns, "
          "or lfence_rdtsc_ns for idsbench's builds); "
          "share: of all rule time; of CPU: of the sensor's CPU time in the sample (medians over ok samples); "
          "matches –: the profiler gave no count (Suricata 8 subtracts a transaction rule's \"cannot match\" checks)")


def _pct(share: float | None, digits: int) -> Figure:
    return Figure(None if share is None else share * 100, digits, "%")


def _unit(unit: str) -> str:
    return "µs" if unit == "us" else unit


def rules_table(rules: Sequence[RuleRow], title: str = "", notes: Sequence[str] = (), css: str = "") -> Table:
    """One row per rule (costliest first): its counts, its time in the profiler's unit, its shares."""
    unit = rules[0].unit if rules else "ticks"
    columns = (Column("sid", "sid", "right"), Column("msg", "msg"), Column("file", "file"),
               Column("category", "category"), Column("hints", "keywords"), Column("checks", "checks", "right"),
               Column("matches", "matches", "right"), Column("ticks_total", f"total ({_unit(unit)})", "right"),
               Column("ticks_net", "net of clock", "right"), Column("ticks_avg", "avg", "right"), Column("ticks_max", "max", "right"),
               Column("share", "share", "right"), Column("time_share", "of CPU", "right"))
    rows = [(Text(str(r.sid) if r.gid == 1 else f"{r.gid}:{r.sid}", css="num"), r.msg, r.file, r.category, ", ".join(r.hints),
             Figure(r.checks, 0), Figure(r.matches, 0), Figure(r.ticks_total, 0), Figure(r.ticks_net, 0),
             Figure(r.ticks_avg, 2 if r.unit == "us" else 0), Figure(r.ticks_max, 0), _pct(r.share, 1),
             _pct(r.time_share, 3)) for r in rules]
    return table(columns, rows, title=title, notes=notes, css=css)


def groups_table(groups: Sequence[GroupCost], unit: str) -> Table:
    """A case's rule time per rule file and ET category, with what removing each should save."""
    columns = (Column("kind", "by"), Column("name", "name"), Column("rules", "rules profiled", "right"),
               Column("checks", "checks", "right"), Column("ticks_total", f"total ({_unit(unit)})", "right"),
               Column("share", "share", "right"), Column("time_share", "of CPU", "right"),
               Column("removal_saving", "removal saves ≈", "right",
                      "of this run's CPU: the rules' time plus the profiler's clock reads no interval counted "
                      "(checks × the probe's cpuid;rdtsc;cpuid)"))
    rows = [(g.kind, g.name, g.rules, Figure(g.checks, 0), Figure(g.ticks_total, 0), _pct(g.share, 1),
             _pct(g.time_share, 3), _pct(g.removal_saving, 3)) for g in groups]
    return table(columns, rows)


def rule_time_text(t: RuleTime | None) -> str:
    """All rules of a case against the sensor's CPU time, as a sentence."""
    if t is None or t.time_share is None or t.rule_time_s is None or t.sensor_cpu_s is None:
        return f"Share of the sensor's CPU time unknown: {t.why_none if t is not None else 'no profile'}."
    rate = f" (ticks at the measured TSC rate of {number(t.tsc_hz / 1e9, 4)} GHz)" if t.tsc_hz else ""
    warning = t.timer_warning()
    return (f"All rules together took {number(t.rule_time_s * 1e3, 2)} ms{rate} of the sensor's "
            f"{number(t.sensor_cpu_s, 3)} s of CPU time: {number(t.time_share * 100, 2)}% (medians over "
            f"{t.samples} ok samples)." + (f" Note: {warning}." if warning else ""))


def ranked_by_text(rows: Sequence[RuleRow]) -> str:
    """What the rows are ordered by, as a sentence."""
    if rows and rows[0].ranked_by == "ticks_net":
        return ("Ranked by the rule time net of the profiler's own clock (total − checks × one cpuid;rdtsc;cpuid "
                "read of the host probe).")
    return "Ranked by the total time (the profiler's clock cost is unknown)."


def profiled_rows(campaign: Campaign) -> list[RuleRow]:
    """Every profiled case's rules; a SpecError naming the fix when the campaign has none."""
    rows = rule_rows(campaign)
    if not rows:
        raise SpecError(f"{campaign.root} holds no rule profile (rule_profile.csv in an ok sample).",
                        fix="run the campaign with a profiling engine, e.g. sensor.engine = "
                            "\"suricata@8.0.6+profiling\" or \"snort+profiling\".")
    return rows


def render(fmt: str, campaign: Campaign) -> str:
    """`results DIR --rules --format json|csv|table`: one row per case and rule, costliest first."""
    rows = profiled_rows(campaign)
    if fmt == "json":
        return export.to_json([r.as_dict() for r in rows])
    if fmt == "csv":
        return export.to_csv([r.as_dict() for r in rows], CSV_FIELDS)
    tables = []
    for (case, group_engine), group in groupby(rows, key=lambda r: (r.case, r.engine)):
        members = list(group)
        tables.append(rules_table(members, title=f"case {case} ({group_engine})",
                                  notes=[rule_time_text(case_rule_time(campaign, case)), ranked_by_text(members)]))
    return export.to_text(tables) + LEGEND + "\n"


def report_views(campaign: Campaign, top: int = 20) -> list[dict[str, object]]:
    """The report's section: per profiled case its costliest rules, all rules' time against the sensor's
    CPU time, and the cost per rule file and ET category."""
    from idsbench.analysis.rules import case_rules

    views: list[dict[str, object]] = []
    for case in campaign.cases:
        info = case_rule_catalog(campaign, case.case_id)
        rules = case_rules(campaign, case.case_id, info)
        if not rules:
            continue
        groups = [*group_costs(campaign, case.case_id, "file", info),
                  *group_costs(campaign, case.case_id, "category", info)]
        views.append({"case": case.case_id, "engine": case.params.engine,
                      "rule_time": rule_time_text(case_rule_time(campaign, case.case_id)),
                      "ranked_by": ranked_by_text(rules),
                      "rules": rules_table(rules[:top], css="rules"),
                      "groups": groups_table(groups[:40], rules[0].unit)})
    return views
