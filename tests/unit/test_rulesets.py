"""Rule shares per engine: sidecars, the Snort rule preparation (with a fake `snort -T` that rejects
what Snort rejects in the recorded outputs), and the comparison of alerts on the rules all engines loaded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from idsbench.analysis.engines import alerts_on, case_engine_figures, common_sids, engine_rules
from idsbench.buildstamp import SnortBuild
from idsbench.errors import SpecError
from idsbench.plan import plan
from idsbench.run.preflight import rule_load_doc
from idsbench.sensors import rulesets
from idsbench.sensors.snort import ruleprep
from idsbench.sensors.snort.config import SnortInstall
from idsbench.sensors.snort.log import VALIDATED_LINE
from idsbench.spec import spec_from_dict
from idsbench.store.campaigndoc import CampaignDoc, Inputs

SURICATA_FLAVOUR = (
    "# a comment\n"
    'alert udp any any -> any 514 (msg:"syslog"; sid:1000002; rev:3;)\n'
    'alert tcp any any -> any 587 (msg:"mail"; content:"MAIL FROM"; nocase; sid:1000001; rev:1;)\n'
    'alert dns any any -> any any (msg:"q"; dns.query; content:"x"; sid:1000003; rev:1;)\n'
    'alert tcp any any -> any 80 (msg:"decoder"; gid:116; sid:7; rev:1;)\n'
)
SNORT_FLAVOUR = 'alert tcp any any -> any 587 (msg:"mail"; content:"MAIL FROM", nocase; sid:1000001; rev:1;)\n'


def fake_snort_test(path: Path) -> str:
    """What `snort -T` says: each active line with a Suricata-only construct is an ERROR naming it."""
    errors = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if line.lstrip().startswith("#") or not line.strip():
            continue
        for keyword, pattern in (("nocase", r";\s*nocase;"), ("dns.query", r"dns\.query")):
            if re.search(pattern, line):  # nocase as an option of its own is Suricata's
                errors.append(f"ERROR: {path}:{n} unknown rule keyword: {keyword}.")
    if errors:
        return "\n".join([*errors, f"FATAL: see prior {len(errors)} errors (0 warnings)"])
    return f"...\n{VALIDATED_LINE} (with 0 warnings).\n"


def _install(tmp_path: Path) -> SnortInstall:
    return SnortInstall(tmp_path / "prefix", SnortBuild("3.12.2.0", "3.0.25", "d1", 2, 22, 472, 1))


def test_sids_of_text_rules_only() -> None:
    lines = rulesets.active_rules(SURICATA_FLAVOUR)
    assert len(lines) == 4 and rulesets.text_rule_sids(lines) == {1000001, 1000002, 1000003}


def test_a_file_without_a_sidecar_loads_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.rules"
    path.write_text(SURICATA_FLAVOUR)
    (load,) = rulesets.rule_loads([path])
    assert (load.rules, load.loaded, load.method, load.share) == (4, 4, "as-is", 1.0)
    assert load.source == str(path)


def test_suricata_flavour_is_converted_and_the_share_recorded(tmp_path: Path) -> None:
    source = tmp_path / "suricata.rules"
    source.write_text(SURICATA_FLAVOUR)
    calls: list[Path] = []

    def snort_test(path: Path) -> str:
        calls.append(path)
        return fake_snort_test(path)

    out = ruleprep.loadable("suricata.rules", source, _install(tmp_path), (("HOME_NET", "any"),), tmp_path / "cache",
                            snort_test)
    (load,) = rulesets.rule_loads([out])
    assert load.method == "converted" and load.source == "suricata.rules"
    assert (load.rules, load.loaded) == (4, 3)  # dns.query has no Snort equivalent
    assert load.sids == {1000001, 1000002}
    assert any("dns.query" in reason for reason, _ in load.reasons)
    assert out.read_text().count("\n") == SURICATA_FLAVOUR.count("\n")  # line numbers kept
    calls.clear()
    again = ruleprep.loadable("suricata.rules", source, _install(tmp_path), (("HOME_NET", "any"),),
                              tmp_path / "cache", snort_test)
    assert again == out and calls == []  # made once
    other = ruleprep.loadable("suricata.rules", source, _install(tmp_path), (("HOME_NET", "[10.0.0.0/8]"),),
                              tmp_path / "cache", snort_test)
    assert other != out  # other rule variables: another cache entry


def test_snort_flavour_is_taken_as_it_is(tmp_path: Path) -> None:
    source = tmp_path / "snort3.rules"
    source.write_text(SNORT_FLAVOUR)
    out = ruleprep.loadable(str(source), source, _install(tmp_path), (), tmp_path / "cache", fake_snort_test)
    (load,) = rulesets.rule_loads([out])
    assert (load.method, load.rules, load.loaded) == ("as-is", 1, 1)
    assert out.read_text() == SNORT_FLAVOUR


def test_builtin_events_are_snorts_builtin_rules(tmp_path: Path) -> None:
    dump = 'alert ( gid:116; sid:1; msg:"(ipv4) not IPv4 datagram"; )\nalert ( gid:116; sid:2; msg:"x"; )\n'
    out = ruleprep.builtin_events(_install(tmp_path), tmp_path / "cache", lambda: dump)
    (load,) = rulesets.rule_loads([out])
    assert (load.source, load.method, load.rules, load.loaded, load.sids) == ("builtin:events", "builtin", 2, 2,
                                                                             frozenset())


def test_rule_error_names_file_line_and_source() -> None:
    log = "ERROR: /cache/x/et.rules:12 unknown rule keyword: flowint.\nFATAL: see prior 1 errors (0 warnings)\n"
    assert ruleprep.rule_error_message(log, {"/cache/x/et.rules": "/data/et.rules"}) == \
        "ERROR: /cache/x/et.rules:12 (converted from /data/et.rules) unknown rule keyword: flowint"


# --- comparing engines on the rules both loaded ------------------------------------------------------------
def _doc(tmp_path: Path) -> CampaignDoc:
    a, b = tmp_path / "s.rules", tmp_path / "n.rules"
    a.write_text(SURICATA_FLAVOUR)
    b.write_text('alert udp any any -> any 514 (msg:"syslog"; sid:1000002; rev:3;)\n')
    suricata = rulesets.rule_loads([a])
    snort = (rulesets.RuleSetLoad("s.rules", b, rules=4, loaded=1, method="converted",
                                  sids=frozenset({1000002})),)
    return CampaignDoc(spec={"name": "x"}, inputs=Inputs(rule_load={
        "suricata": rule_load_doc(suricata), "snort": rule_load_doc(snort), "nodetect": rule_load_doc(())}))


def test_common_rules_leave_out_engines_without_rules(tmp_path: Path) -> None:
    rules = engine_rules(_doc(tmp_path))
    assert set(rules) == {"suricata", "snort"}
    assert rules["snort"].share == 0.25
    assert common_sids(rules) == {1000002}
    assert common_sids(rules, ["suricata"]) is None
    assert alerts_on({1000002: 26, 1000001: 2}, frozenset({1000002})) == 26


def test_case_figures(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    snort = case_engine_figures(doc, "snort", [])
    assert snort.rules_total == 4 and snort.rules_loaded == 1 and snort.common is not None
    assert snort.common.common_rules == 1
    assert snort.row() == {"rules_total": 4, "rules_loaded": 1, "rules_loaded_share": 0.25, "common_rules": 1,
                           "alerts_common_rules": None, "alerts_common_rules_ci": None}
    assert snort.common.alerts_common_rules is None  # no ok sample
    nodetect = case_engine_figures(doc, "nodetect", [])
    assert nodetect.row() == {"rules_total": 0, "rules_loaded": 0, "rules_loaded_share": None}


# --- the spec ----------------------------------------------------------------------------------------------
def test_engine_tables_in_sensor_set() -> None:
    spec = spec_from_dict({"name": "x", "sensor": {"engine": ["suricata", "snort"], "set": {
        "stats.interval": 2, "detect.profile": "high",
        "snort": {"search_engine.search_method": "hyperscan", "detect.profile": "ignored"},
        "nodetect": {"threads": 1}}}})
    assert spec.sensor.overrides("suricata") == {"stats.interval": "2", "detect.profile": "high"}
    assert spec.sensor.overrides("snort") == {"stats.interval": "2", "detect.profile": "ignored",
                                              "search_engine.search_method": "hyperscan"}
    assert spec.sensor.overrides("nodetect") == {"stats.interval": "2", "detect.profile": "high", "threads": "1"}
    with pytest.raises(SpecError, match=r"sensor.set.snrt\] names no engine"):
        plan(spec_from_dict({"name": "x", "sensor": {"set": {"snrt": {"a": 1}}}}))
    with pytest.raises(SpecError, match="capture_method"):
        spec_from_dict({"name": "x", "sensor": {"capture_method": "pfring"}})


def test_report_puts_the_engines_side_by_side(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from idsbench.report.engines import engine_section
    from idsbench.report.table import cell
    from idsbench.store.schema import CaseParams, CaseResult

    def row(engine: str, alerts: float, common: float | None) -> CaseResult:
        params = CaseParams(trace="/x/nf.pcap", replayers=2, rate="pps=1000", engine=engine)
        figures = case_engine_figures(_doc(tmp_path), engine, [])
        if figures.common is not None:
            figures = figures.model_copy(update={"common": figures.common.model_copy(
                update={"alerts_common_rules": common})})
        return CaseResult(case=f"c-{engine}", params=params, samples=3, medians={"alerts": alerts},
                          cis={"alerts": (alerts - 1, alerts + 1)}, engines=figures)

    rows = [row("suricata", 8, 4), row("snort", 56, 52), row("nodetect", 0, None)]
    section = engine_section(SimpleNamespace(doc=_doc(tmp_path)), rows)  # type: ignore[arg-type]
    assert section is not None and section.common == 1
    titles = [c.title for c in section.table.columns]
    shown = [{t: cell(v) for t, v in zip(titles, r.cells)} for r in section.table.rows]
    assert [r["engine"].text for r in shown] == ["nodetect", "snort", "suricata"]
    snort = shown[1]
    assert snort["rules loaded %"].text == "25.0" and snort["alerts on common rules"].text == "52"
    assert snort["setup"].text == "" and shown[0]["setup"].text == "baremetal"  # the group's cells once
    assert snort["alerts"].ci == "[55–57]" and snort["alerts"].note.startswith("vs nodetect: ")
    assert {r.engine for r in section.rules} == {"suricata", "snort"}
    assert engine_section(SimpleNamespace(doc=_doc(tmp_path)), rows[:1]) is None  # type: ignore[arg-type]
