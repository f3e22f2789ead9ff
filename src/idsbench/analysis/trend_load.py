"""Where a trend's keyed cases come from: the result index, or campaign directories read directly."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from idsbench.analysis.trend import Explain, explainer
from idsbench.store.casekey import CampaignFacts, KeyedCase, case_key
from idsbench.store.reader import load_campaign, probe_or_none


def from_dirs(dirs: Sequence[Path]) -> tuple[list[KeyedCase], Explain]:
    """Every case of the given campaigns (id = the directory as given), and their facts."""
    from idsbench.analysis.cases import case_table  # the whole analysis: only for directories
    cases: list[KeyedCase] = []
    facts: dict[str, CampaignFacts] = {}
    engines: dict[str, str] = {}
    for d in dirs:
        campaign = load_campaign(d)
        cid = str(d)
        probe = probe_or_none(d)
        doc = campaign.doc
        facts[cid] = CampaignFacts(doc.spec, doc.environment, doc.inputs, probe, doc.spec_problem)
        for result in case_table(campaign):
            cases.append(KeyedCase(cid, campaign.doc.created_unix, case_key(campaign.doc, result.params, probe, cid),
                                   result))
            engines[cid] = result.params.engine
    return cases, explainer(facts, lambda cid: engines.get(cid, "suricata"))


def from_index(root: Path, series_id: str | None = None) -> tuple[list[KeyedCase], Explain]:
    """The indexed cases (of one series key when given); campaign facts are read only at changes."""
    from idsbench.store.index_trend import campaign_facts, keyed_cases  # duckdb: loaded when used

    cases = keyed_cases(root, series_id)
    engines = {c.campaign_id: c.key.engine for c in cases}

    def explain(before: str, after: str) -> list[str]:
        return explainer(campaign_facts(root, [before, after]), lambda cid: engines.get(cid, "suricata"))(before, after)
    return cases, explain
