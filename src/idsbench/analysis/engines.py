"""Comparing engines fairly: the share of the rules each loaded, and alerts on the rules all loaded.

Engines differ in which rules they can take (Snort 3 loads ~71% of the Suricata-flavoured ET Open
after conversion), so their alert totals are not comparable. Preflight records per engine the rule
ids (text rules, gid 1) it loaded (the campaign file's `inputs.rule_load`, keyed by engine, or by
`engine ruleset` for a named ruleset: a ruleset axis, a duet's two rule files); `common_sids` intersects
them over the engines that load rules for one ruleset (capture-only engines load none and are left out),
and `alerts_on_common` counts a sample's alerts on those ids only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from idsbench.analysis.stats import median, median_ci
from idsbench.spec import DEFAULT_RULESET
from idsbench.store.campaigndoc import CampaignDoc, RuleSetInput, rule_load_key, split_rule_load_key
from idsbench.store.casefigures import CommonRules, EngineFigures
from idsbench.store.reader import SampleRecord


@dataclass(frozen=True)
class EngineRules:
    engine: str          # the `inputs.rule_load` key: the engine, or `engine ruleset`
    rules: int           # active rules in the sources the spec named
    loaded: int          # rules the engine loaded
    sids: frozenset[int]
    sets: tuple[RuleSetInput, ...]  # per source: rules, loaded, share, method, reasons

    @property
    def share(self) -> float | None:
        return self.loaded / self.rules if self.rules else None

    @property
    def ruleset(self) -> str:
        return split_rule_load_key(self.engine)[1]


def engine_rules(doc: CampaignDoc) -> dict[str, EngineRules]:
    """Per engine (and named ruleset) that was given rules: what it loaded (the campaign file's
    `inputs.rule_load`, same keys)."""
    return {key: EngineRules(key, load.rules, load.loaded, frozenset(load.sids), load.sets)
            for key, load in doc.inputs.rule_load.items() if load.sets}


def common_sids(rules: Mapping[str, EngineRules], engines: Iterable[str] | None = None,
                ruleset: str = DEFAULT_RULESET) -> frozenset[int] | None:
    """The rule ids every one of `engines` (default: all that loaded rules) loaded of `ruleset`; None
    with fewer than two such engines (nothing to compare)."""
    keys = [rule_load_key(e, ruleset) for e in engines] if engines is not None else \
        [k for k, r in rules.items() if r.ruleset == ruleset]
    names = [k for k in keys if k in rules]
    if len(names) < 2:
        return None
    common = rules[names[0]].sids
    for name in names[1:]:
        common = common & rules[name].sids
    return common


def alerts_on(alerts_by_sid: Mapping[int, int], sids: frozenset[int]) -> int:
    return sum(n for sid, n in alerts_by_sid.items() if sid in sids)


def case_engine_figures(doc: CampaignDoc, engine: str, used: Sequence[SampleRecord],
                        level: float = 0.95, ruleset: str = DEFAULT_RULESET) -> EngineFigures:
    """What a results row adds for its engine and ruleset: the rule share and, when several engines
    loaded rules of that ruleset, the alerts on the rules all of them loaded (median over the ok samples,
    with its CI)."""
    rules = engine_rules(doc)
    mine = rules.get(rule_load_key(engine, ruleset))
    out = EngineFigures(rules_total=mine.rules if mine else 0, rules_loaded=mine.loaded if mine else 0,
                        rules_loaded_share=round(mine.share, 6) if mine and mine.share is not None else None)
    common = common_sids(rules, ruleset=ruleset)
    if common is None or mine is None:
        return out
    counts: list[float | None] = [float(alerts_on(s.summary.sensor.alerts_by_sid, common)) for s in used]
    return out.model_copy(update={"common": CommonRules(
        common_rules=len(common), alerts_common_rules=median(counts), alerts_common_rules_ci=median_ci(counts, level))})
