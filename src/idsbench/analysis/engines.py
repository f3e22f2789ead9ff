"""Comparing engines fairly: the share of the rules each loaded, and alerts on the rules all loaded.

Engines differ in which rules they can take (Snort 3 loads ~71% of the Suricata-flavoured ET Open
after conversion), so their alert totals are not comparable. Preflight records per engine the rule
ids (text rules, gid 1) it loaded (the campaign file's `inputs.rule_load`); `common_sids` intersects them
over the engines that load rules (capture-only engines load none and are left out), and
`alerts_on_common` counts a sample's alerts on those ids only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from idsbench.analysis.stats import median, median_ci
from idsbench.store.campaigndoc import CampaignDoc, RuleSetInput
from idsbench.store.casefigures import CommonRules, EngineFigures
from idsbench.store.reader import SampleRecord


@dataclass(frozen=True)
class EngineRules:
    engine: str
    rules: int           # active rules in the sources the spec named
    loaded: int          # rules the engine loaded
    sids: frozenset[int]
    sets: tuple[RuleSetInput, ...]  # per source: rules, loaded, share, method, reasons

    @property
    def share(self) -> float | None:
        return self.loaded / self.rules if self.rules else None


def engine_rules(doc: CampaignDoc) -> dict[str, EngineRules]:
    """Per engine that was given rules: what it loaded (the campaign file's `inputs.rule_load`)."""
    return {engine: EngineRules(engine, load.rules, load.loaded, frozenset(load.sids), load.sets)
            for engine, load in doc.inputs.rule_load.items() if load.sets}


def common_sids(rules: Mapping[str, EngineRules], engines: Iterable[str] | None = None) -> frozenset[int] | None:
    """The rule ids every one of `engines` (default: all that loaded rules) loaded; None with fewer
    than two such engines (nothing to compare)."""
    names = [e for e in (engines if engines is not None else rules) if e in rules]
    if len(names) < 2:
        return None
    common = rules[names[0]].sids
    for name in names[1:]:
        common = common & rules[name].sids
    return common


def alerts_on(alerts_by_sid: Mapping[int, int], sids: frozenset[int]) -> int:
    return sum(n for sid, n in alerts_by_sid.items() if sid in sids)


def case_engine_figures(doc: CampaignDoc, engine: str, used: Sequence[SampleRecord],
                        level: float = 0.95) -> EngineFigures:
    """What a results row adds for its engine: the rule share and, when several engines loaded rules,
    the alerts on the rules all of them loaded (median over the ok samples, with its CI)."""
    rules = engine_rules(doc)
    mine = rules.get(engine)
    out = EngineFigures(rules_total=mine.rules if mine else 0, rules_loaded=mine.loaded if mine else 0,
                        rules_loaded_share=round(mine.share, 6) if mine and mine.share is not None else None)
    common = common_sids(rules)
    if common is None or mine is None:
        return out
    counts: list[float | None] = [float(alerts_on(s.summary.sensor.alerts_by_sid, common)) for s in used]
    return out.model_copy(update={"common": CommonRules(
        common_rules=len(common), alerts_common_rules=median(counts), alerts_common_rules_ci=median_ci(counts, level))})
