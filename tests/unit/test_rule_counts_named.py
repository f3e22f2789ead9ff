"""Rule counts of named rulesets (issue 41 item 2): `inputs.rule_load` is keyed `engine ruleset` for a named
ruleset (a ruleset axis, a duet's two rule files), and every figure read from it — a results row's
`rules_total`/`rules_loaded`, the engines' common rules, the case key's rule count, a trend's "what
changed" — reads the case's own ruleset."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from idsbench.analysis.cases import with_engine_figures
from idsbench.analysis.engines import case_engine_figures, common_sids, engine_rules
from idsbench.analysis.trend import what_changed
from idsbench.run.context import options_key
from idsbench.run.preflight import rule_load_doc
from idsbench.sensors import rulesets
from idsbench.spec import spec_from_dict
from idsbench.store.campaigndoc import CampaignDoc, Inputs, RuleFileInput
from idsbench.store.casekey import CampaignFacts, case_key
from idsbench.store.schema import CaseParams, CaseResult


def _rules(path: Path, sids: range) -> Path:
    path.write_text("".join(f'alert ip any any -> any any (msg:"r{s}"; sid:{s}; rev:1;)\n' for s in sids))
    return path


def _doc(tmp_path: Path, base_sids: range = range(1, 368), more_sids: range = range(1000, 1012)) -> CampaignDoc:
    base, more = _rules(tmp_path / "base.rules", base_sids), _rules(tmp_path / "more.rules", more_sids)
    loads = {"base": rulesets.rule_loads([base]), "more": rulesets.rule_loads([more])}
    snort_base = (rulesets.RuleSetLoad(str(base), base, rules=367, loaded=300, method="converted",
                                       sids=frozenset(range(1, 301))),)
    rule_load = {options_key("suricata", name): rule_load_doc(load) for name, load in loads.items()}
    rule_load[options_key("snort", "base")] = rule_load_doc(snort_base)
    return CampaignDoc(spec={"name": "x", "sensor": {"rules": {"base": [str(base)], "more": [str(more)]}}},
                       inputs=Inputs(rule_load=rule_load, rulesets={"base": (str(base),), "more": (str(more),)},
                                     rules=(RuleFileInput(path=str(base), sha256="b" * 64),
                                            RuleFileInput(path=str(more), sha256="m" * 64))))


def test_the_key_of_a_named_ruleset_is_engine_and_name() -> None:
    assert options_key("suricata", "default") == "suricata"
    assert options_key("suricata", "base") == "suricata base"


def test_a_named_rulesets_row_counts_its_own_rules(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    base = case_engine_figures(doc, "suricata", [], ruleset="base")
    more = case_engine_figures(doc, "suricata", [], ruleset="more")
    assert (base.rules_total, base.rules_loaded, base.rules_loaded_share) == (367, 367, 1.0)
    assert (more.rules_total, more.rules_loaded) == (12, 12)
    # the common rules of a ruleset: over the engines that loaded it (snort loaded 300 of base, none of more)
    assert base.common is not None and base.common.common_rules == 300
    assert more.common is None
    assert common_sids(engine_rules(doc), ruleset="more") is None


def test_the_results_row_reads_the_cases_ruleset(tmp_path: Path) -> None:
    """The path `results` takes (analysis.cases.with_engine_figures): a duet side or a ruleset-axis case."""
    doc = _doc(tmp_path)
    campaign = SimpleNamespace(doc=doc)
    for ruleset, total in (("base", 367), ("more", 12)):
        params = CaseParams(trace="x.pcap", replayers=1, rate="recorded", rules=ruleset, duet_side="a")
        cs = SimpleNamespace(info=SimpleNamespace(params=params), used=())
        row = with_engine_figures(campaign, cs, CaseResult(case=f"c-{ruleset}", params=params, samples=0))  # type: ignore[arg-type]
        assert row.engines is not None
        assert (row.engines.rules_total, row.engines.rules_loaded) == (total, total), ruleset
        assert row.to_row()["rules_loaded"] == total


def test_case_keys_of_two_rulesets_differ_and_count_their_rules(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    keys = [case_key(doc, CaseParams(trace="x.pcap", replayers=1, rate="recorded", rules=r), None, "c1")
            for r in ("base", "more")]
    assert [k.rules_count for k in keys] == ["367", "12"]
    assert keys[0].rules_digest != keys[1].rules_digest and keys[0].key_id != keys[1].key_id


def test_what_changed_reads_named_rulesets(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = _doc(tmp_path / "a"), _doc(tmp_path / "b", base_sids=range(1, 400))
    spec = spec_from_dict({"name": "x"})

    def facts(doc: CampaignDoc) -> CampaignFacts:
        return CampaignFacts(spec, doc.environment, doc.inputs, None)

    changed = what_changed(facts(a), facts(b), "suricata")
    assert any(line.startswith("rules loaded: +32 sids") for line in changed), changed
