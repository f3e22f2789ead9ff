"""The typed campaign document (store/campaigndoc.py), its migration in the one reader, and the named
figures of a case result (store/casefigures.py) with the row they give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idsbench.analysis.cases import case_table
from idsbench.errors import SpecError
from idsbench.run.preflight import check_resume
from idsbench.store.campaigndoc import CAMPAIGN_SCHEMA, CampaignDoc, EngineBuild, Inputs, TraceInput
from idsbench.store.casefigures import (
    CommonRules,
    EngineFigures,
    MinCpusFigures,
    NdrFigures,
    RepeatFigures,
    SearchFigures,
)
from idsbench.store.casekey import case_key
from idsbench.store.layout import CampaignDir
from idsbench.store.reader import load_campaign, migrate_campaign, read_campaign_doc
from idsbench.store.schema import CaseParams, CaseResult
from tests.fakecampaign import FakeCase, write_campaign

BUILD = {"version": "8.0.6", "features": ["AF_PACKET", "RUST"], "hyperscan": True, "build_id": "abc",
         "tsc_hz": 2299998053, "configure_flags": ["--enable-profiling-rules"], "build_s": 2365.2}


def _write(root: Path, doc: dict[str, object]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "campaign.json").write_text(json.dumps(doc))
    return root


def test_a_schema_2_environment_moves_each_engine_build_into_engines() -> None:
    local = {"schema": 2, "spec": {"name": "c"}, "environment": {
        "hostname": "h", "cpus": 2, "suricata": {"version": "7.0.10"}, "suricata@8.0.6+profiling": BUILD}}
    env = CampaignDoc.model_validate(migrate_campaign(local)).environment
    assert (env.hostname, env.cpus) == ("h", 2)
    assert set(env.engines) == {"suricata", "suricata@8.0.6+profiling"}
    assert env.engines["suricata@8.0.6+profiling"].record() == BUILD   # whole, ints stay ints
    assert env.engines["suricata@8.0.6+profiling"].tsc_hz == 2299998053
    assert env.model_dump(mode="json") == {"hostname": "h", "cpu_model": None, "cpus": 2, "mem_total_bytes": None,
                                           "kernel": None, "os": None, "cgroup": None, "python": None,
                                           "idsbench": None, "tcpreplay": None,
                                           "engines": {"suricata": {"version": "7.0.10"},
                                                       "suricata@8.0.6+profiling": BUILD}}
    on_hosts = {"schema": 2, "spec": {"name": "c"}, "environment": {
        "hostname": "ctl", "controller": True, "suricata": {"version": "7.0.10"},
        "hosts": {"s1": {"role": "sensor", "suricata": "7.0.10"}}, "pairs": {"p1": "t1/s1"}}}
    env = CampaignDoc.model_validate(migrate_campaign(on_hosts)).environment
    assert env.controller and set(env.engines) == {"suricata"}
    assert env.hosts == {"s1": {"role": "sensor", "suricata": "7.0.10"}} and env.pairs == {"p1": "t1/s1"}
    current = {"schema": CAMPAIGN_SCHEMA, "spec": {"name": "c"}, "environment": {"engines": {"snort": {"version": "3"}}}}
    assert migrate_campaign(current) is current


def test_the_document_round_trips_through_its_file(tmp_path: Path) -> None:
    doc = CampaignDoc.model_validate({
        "spec": {"name": "c", "sensor": {"set": {"a.b": True, "snort": {"x": 1}}}},
        "environment": {"hostname": "h", "engines": {"suricata": BUILD}},
        "inputs": Inputs(traces={"t.pcap": TraceInput(ref="t.pcap", path="/t.pcap", sha256="ab", packets=3, bytes=180,
                                                      duration_s=1.0)}),
    })
    written = doc.to_json()
    assert "rules_on_hosts" not in written["inputs"] and "controller" not in written["environment"]  # type: ignore[operator]
    assert written["spec"] == doc.spec.model_dump(mode="json")
    back = read_campaign_doc(_write(tmp_path / "c", written))
    assert back == doc and back.spec_problem is None
    assert back.spec.sensor.overrides("snort") == {"a.b": "yes", "x": "1"}
    assert back.environment.engines["suricata"].record() == BUILD


def test_a_spec_that_no_longer_validates_still_reads(tmp_path: Path) -> None:
    """A campaign written by another idsbench version: results and report read it with the keys the
    validation names at their defaults; resuming it is refused with the reason, and its case key does not
    claim to know its sensor.set."""
    case = FakeCase(samples=2)
    root = write_campaign(tmp_path / "old", [case])
    doc = json.loads((root / "campaign.json").read_text())
    doc["spec"]["future_section"] = {"x": 1}
    doc["spec"]["traffic"]["rate"] = ["warp-speed"]
    doc["spec"]["sensor"]["set"] = {"detect.profile": "high"}
    (root / "campaign.json").write_text(json.dumps(doc))
    campaign = load_campaign(root)
    problem = campaign.doc.spec_problem
    assert problem is not None and "future_section" in problem and "traffic.rate" in problem
    assert campaign.doc.spec.name == "fake" and campaign.doc.settle_s == 3.0   # the rest as stored
    assert campaign.doc.spec.sensor.set == {"detect.profile": "high"}
    assert any("does not validate" in w for w in campaign.warnings)
    (row,) = case_table(campaign)
    assert row.samples == 2 and row.medians["decoded_pkts"] is not None
    with pytest.raises(SpecError, match="does not validate") as err:
        check_resume(CampaignDir(root), root, campaign.doc.spec.model_dump(mode="json"), resume=True)
    assert "Fix:" in str(err.value)
    assert case_key(campaign.doc, row.params, None, "old").set_digest == "unknown@old"


def _row_result(**figures: object) -> CaseResult:
    return CaseResult(case="c", params=CaseParams(trace="t", replayers=1, rate="recorded"), samples=3,
                      medians={"alerts": 4.0}, cis={"alerts": (3.0, 5.0)}, ci_level=0.75, warnings=("w",), **figures)


def test_the_row_keeps_the_keys_and_order_of_the_results_contract() -> None:
    search = SearchFigures(
        search_axis="rate", search_mode="warm", search_trials=12, sender_ceiling_pps=1.5e6, sender_limited=False,
        repeats=RepeatFigures(search_repeats=1, ndr_repeats=(9000.0,), goals={}),
        ndr=NdrFigures(ndr_pps=9000.0, ndr_mbps=40.0, ndr_bracket=(9000.0, 9400.0), search_verified=True,
                       ndr_sensor_us_per_pkt=25.0, ndr_replayers=3.0),
        pdr={"0.01": 9500.0})
    engines = EngineFigures(rules_total=4, rules_loaded=1, rules_loaded_share=0.25,
                            common=CommonRules(common_rules=1, alerts_common_rules=2.0, alerts_common_rules_ci=(1.0, 3.0)))
    row = _row_result(degraded_sensor={"tcp.reassembly_gap": 2.0}, phases={"replay": 5.0}, search=search,
                      engine_version="8.0.6", engines=engines, alerts_by_sid={2200003: 1.5, 1000: 3.0}).to_row()
    keys = list(row)
    tail = keys[keys.index("ci_level") + 1:]
    assert tail == ["degraded_sensor", "phases", "search_axis", "search_mode", "search_trials", "sender_ceiling_pps",
                    "sender_limited", "search_repeats", "ndr_repeats", "ndr_ci", "ndr_ci_level", "goals",
                    "search_goals", "ndr_conditional_pps", "ndr_capacity_pps", "ndr_pps", "ndr_mbps", "ndr_bracket",
                    "search_verified", "ndr_sensor_us_per_pkt", "pdr", "engine_version", "rules_total",
                    "rules_loaded", "rules_loaded_share", "common_rules", "alerts_common_rules",
                    "alerts_common_rules_ci", "alerts_by_sid", "capture", "capture_options", "waterfall_capture",
                    "bypass", "bypass_settings", "warnings"]   # ndr_replayers: a replayers search only
    assert row["ndr_bracket"] == [9000.0, 9400.0] and row["pdr"] == {"0.01": 9500.0}
    assert row["alerts_by_sid"] == {"1000": 3, "2200003": 1.5}   # sid order, counts as the medians print
    assert json.loads(json.dumps(row)) == row
    cpus = SearchFigures(search_axis="cpus", search_mode="warm", search_trials=5, min_cpus=MinCpusFigures(
        min_cpus=0.25, min_cpus_bracket=(0.25, 0.2), search_verified=True))
    assert list(cpus.row()) == ["search_axis", "search_mode", "search_trials", "sender_ceiling_pps", "sender_limited",
                                "min_cpus", "min_cpus_bracket", "search_verified"]
    plain = list(_row_result().to_row())   # not searched, engines not compared: those keys are absent
    assert plain[plain.index("ci_level") + 1:] == ["degraded_sensor", "phases", "engine_version", "alerts_by_sid",
                                                  "capture", "capture_options", "waterfall_capture", "bypass",
                                                  "bypass_settings", "warnings"]


def test_alerts_by_sid_is_the_median_per_signature_over_the_ok_samples(tmp_path: Path) -> None:
    case = FakeCase(samples=4, statuses=["ok", "ok", "ok", "failed"])
    root = write_campaign(tmp_path / "c", [case])
    per_sample = [{"2001": 3, "2002": 1}, {"2001": 5}, {"2001": 4, "2002": 2}, {"2001": 99, "7": 1}]
    for k, alerts in enumerate(per_sample):
        path = root / "cases" / case.case_id / f"s{k}" / "summary.json"
        summary = json.loads(path.read_text())
        summary["sensor"]["alerts_by_sid"] = alerts
        path.write_text(json.dumps(summary))
    (result,) = case_table(load_campaign(root))
    # sid 2002 is missing from one ok sample (0 there); the failed sample's alerts are left out
    assert result.alerts_by_sid == {2001: 4.0, 2002: 1.0}
    assert result.to_row()["alerts_by_sid"] == {"2001": 4, "2002": 1}


def test_engine_build_keeps_what_the_adapter_reported() -> None:
    build = EngineBuild.model_validate({"version": "3.12.1.0", "rule_variables": {"HOME_NET": "any"}, "threads": 2})
    assert build.record() == {"version": "3.12.1.0", "rule_variables": {"HOME_NET": "any"}, "threads": 2}
    assert build.tsc_hz is None and "tsc_hz" not in build.record()
