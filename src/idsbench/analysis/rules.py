"""What each rule costs (docs/architecture.md, "Rule profiling"): per case and rule, the medians over the
ok samples of the profiler's figures (`idsbench results DIR --rules`, the report's "Costliest rules"),
and the cost per rule file / ET category.

`share` is a rule's part of all rule ticks in a sample (median over the ok samples). ET Open ships as
one concatenated file here, so the cost "per rule file" is given per ET category (`emerging-policy`
for messages `ET POLICY ...`: the upstream file the rule belongs to) beside the file the rule was read from.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from idsbench.sensors.ruleprofile import RuleInfo, catalog
from idsbench.store.reader import Campaign, SampleRecord, rule_profile
from idsbench.store.rule_profile import RuleCost

TOP_RULES = 20


@dataclass(frozen=True)
class RuleRow:
    """One case and rule: the contract's row of `results --rules`."""

    case: str
    engine: str
    sid: int
    msg: str
    file: str
    category: str
    hints: tuple[str, ...]
    checks: float
    matches: float
    ticks_total: float
    ticks_avg: float
    ticks_max: float
    share: float
    samples: int

    def as_dict(self) -> dict[str, object]:
        return {"case": self.case, "engine": self.engine, "sid": self.sid, "msg": self.msg, "file": self.file,
                "category": self.category, "hints": list(self.hints), "checks": self.checks,
                "matches": self.matches, "ticks_total": self.ticks_total, "ticks_avg": self.ticks_avg,
                "ticks_max": self.ticks_max, "share": round(self.share, 6), "samples": self.samples}


@dataclass(frozen=True)
class GroupCost:
    """A rule file's or category's part of the rule ticks in a case (medians over ok samples)."""

    case: str
    kind: str  # "file" or "category"
    name: str
    rules: int  # rules of the group the profiler saw
    ticks_total: float
    share: float


def profiled_samples(campaign: Campaign, case_id: str) -> list[tuple[SampleRecord, list[RuleCost]]]:
    out = []
    for s in campaign.samples_of(case_id):
        if s.status != "ok":
            continue
        costs = rule_profile(s)
        if costs:
            out.append((s, costs))
    return out


def rule_catalog(campaign: Campaign) -> dict[int, RuleInfo]:
    rules = campaign.doc.inputs.get("rules", []) if isinstance(campaign.doc.inputs, dict) else []
    return catalog(Path(str(r["path"])) for r in rules if isinstance(r, dict) and "path" in r)


def _med(values: list[float], n: int) -> float:
    """Median over n samples, a sample where the rule did not appear counting 0."""
    return float(median([*values, *([0.0] * (n - len(values)))])) if n else 0.0


def case_rules(campaign: Campaign, case_id: str, info: dict[int, RuleInfo] | None = None) -> list[RuleRow]:
    """One row per rule the profiler saw in the case's ok samples, by median ticks_total (highest first)."""
    profiled = profiled_samples(campaign, case_id)
    if not profiled:
        return []
    info = rule_catalog(campaign) if info is None else info
    engine = campaign.case(case_id).params.engine
    per_rule: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for _, costs in profiled:
        total = sum(c.ticks_total for c in costs) or 1
        for c in costs:
            row = per_rule[c.sid]
            row["checks"].append(c.checks)
            row["matches"].append(c.matches)
            row["ticks_total"].append(c.ticks_total)
            row["ticks_avg"].append(c.ticks_avg)
            row["ticks_max"].append(c.ticks_max or 0)  # Snort reports none (time_share's commit reads it as missing)
            row["share"].append(c.ticks_total / total)
    n = len(profiled)
    rows = []
    for sid, values in per_rule.items():
        known = info.get(sid)
        rows.append(RuleRow(
            case=case_id, engine=engine, sid=sid, msg=known.msg if known else "", file=known.file if known else "",
            category=known.category if known else "", hints=known.hints if known else (),
            checks=_med(values["checks"], n), matches=_med(values["matches"], n),
            ticks_total=_med(values["ticks_total"], n), ticks_avg=_med(values["ticks_avg"], n),
            ticks_max=_med(values["ticks_max"], n), share=_med(values["share"], n), samples=len(values["checks"])))
    return sorted(rows, key=lambda r: (-r.ticks_total, r.sid))


def rule_rows(campaign: Campaign) -> list[RuleRow]:
    """Every profiled case's rules (`idsbench results DIR --rules`)."""
    info = rule_catalog(campaign)
    return [row for c in campaign.cases for row in case_rules(campaign, c.case_id, info)]


def group_costs(campaign: Campaign, case_id: str, kind: str,
                info: dict[int, RuleInfo] | None = None) -> list[GroupCost]:
    """The case's rule ticks per rule file (kind "file") or ET category ("category"), medians over the
    ok samples, costliest first."""
    profiled = profiled_samples(campaign, case_id)
    info = rule_catalog(campaign) if info is None else info
    ticks: dict[str, list[float]] = defaultdict(list)
    shares: dict[str, list[float]] = defaultdict(list)
    members: dict[str, set[int]] = defaultdict(set)
    for _, costs in profiled:
        total = sum(c.ticks_total for c in costs) or 1
        sums: dict[str, float] = defaultdict(float)
        for c in costs:
            known = info.get(c.sid)
            name = (known.file if kind == "file" else known.category) if known else "(unknown sid)"
            sums[name] += c.ticks_total
            members[name].add(c.sid)
        for name, value in sums.items():
            ticks[name].append(value)
            shares[name].append(value / total)
    n = len(profiled)
    out = [GroupCost(case_id, kind, name, len(members[name]), _med(ticks[name], n), _med(shares[name], n))
           for name in ticks]
    return sorted(out, key=lambda g: (-g.ticks_total, g.name))


def top_sids(costs: list[RuleCost], n: int) -> list[int]:
    """The n costliest sids of one sample."""
    return [c.sid for c in sorted(costs, key=lambda c: (-c.ticks_total, c.sid))[:n]]
