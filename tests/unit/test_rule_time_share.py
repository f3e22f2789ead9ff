"""The rules' share of the sensor's own CPU time (`time_share`): microseconds directly, ticks only at the
TSC rate the campaign measured; and `results --rules` with the unit and the share beside the contract keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from idsbench.analysis.rules import RuleTime, case_rule_time, case_rules, group_costs, profiler_clock_ns, rule_rows, top_sids, tsc_hz
from idsbench.store.reader import load_campaign
from idsbench.store.rule_profile import RuleCost, write_profile
from tests.fakecampaign import FakeCase, write_campaign

CPU_S = (0.5, 0.8)  # the sensor's CPU seconds in samples 0 and 1


def _campaign(tmp_path: Path, unit: str, profiles: list[list[RuleCost]], tsc: float | None,
              environment_tsc: float | None = None, clock: str | None = None) -> Path:
    case = FakeCase(samples=2)
    env = {"hostname": "h", "suricata": {"version": "8.0.6", **({"tsc_hz": environment_tsc} if environment_tsc else {}),
                                         **({"profiler_clock": clock} if clock else {})}}
    root = write_campaign(tmp_path / f"c-{unit}", [case], environment=env)
    if tsc is not None:
        (root / "probe.json").write_text(json.dumps({"tsc": {"hz": tsc, "rounds": 3}}))
    for k, costs in enumerate(profiles):
        sample = root / "cases" / case.case_id / f"s{k}"
        summary = json.loads((sample / "summary.json").read_text())
        summary["cost"] = {"cpu_s": CPU_S[k], "processed_pkts": 1000}
        (sample / "summary.json").write_text(json.dumps(summary))
        write_profile(sample, costs)
    return root


SNORT = [[RuleCost(1, 2001, 1, 10, 1, 50_000, 5000.0, None, "us"), RuleCost(1, 2002, 1, 4, 0, 10_000, 2500.0, None, "us")],
         [RuleCost(1, 2001, 1, 12, 1, 60_000, 5000.0, None, "us"), RuleCost(1, 2003, 1, 2, 0, 20_000, 10000.0, None, "us")]]


def test_time_share_of_microseconds_is_the_rule_time_over_the_sensors_cpu_time(tmp_path: Path) -> None:
    campaign = load_campaign(_campaign(tmp_path, "us", SNORT, tsc=None))
    (case,) = campaign.cases
    rows = {r.sid: r for r in case_rules(campaign, case.case_id)}
    # sample 0: 0.050 s / 0.5 s = 0.10; sample 1: 0.060 s / 0.8 s = 0.075 -> median 0.0875
    assert rows[2001].time_share == pytest.approx(0.0875)
    # 2002 only in sample 0 (0.02), 2003 only in sample 1 (0.025): the other sample counts 0
    assert rows[2002].time_share == pytest.approx(0.01) and rows[2003].time_share == pytest.approx(0.0125)
    assert rows[2001].ticks_max is None and rows[2001].unit == "us"
    t = case_rule_time(campaign, case.case_id)
    assert t is not None and t.unit == "us" and t.tsc_hz is None
    # all rules: 0.060 s / 0.5 s = 0.12 and 0.080 s / 0.8 s = 0.10 -> 0.11
    assert t.time_share == pytest.approx(0.11) and t.rule_time_s == pytest.approx(0.07)
    assert t.sensor_cpu_s == pytest.approx(0.65)
    (group,) = group_costs(campaign, case.case_id, "file")
    assert group.time_share == pytest.approx(0.11) and group.unit == "us"


SURICATA = [[RuleCost(1, 2001, 1, 10, 1, 200_000_000, 2e7, 9_000_000, "ticks")],
            [RuleCost(1, 2001, 1, 10, 1, 400_000_000, 4e7, 8_000_000, "ticks")]]


def test_ticks_become_seconds_only_at_the_measured_tsc_rate(tmp_path: Path) -> None:
    campaign = load_campaign(_campaign(tmp_path, "ticks", SURICATA, tsc=2e9))
    (case,) = campaign.cases
    assert tsc_hz(campaign, "suricata") == 2e9
    (rule,) = case_rules(campaign, case.case_id)
    # 0.1 s / 0.5 s = 0.2 and 0.2 s / 0.8 s = 0.25 -> 0.225; the maximum is a measurement here
    assert rule.time_share == pytest.approx(0.225) and rule.ticks_max == 8_500_000
    # the engine's own record wins over the probe's
    campaign = load_campaign(_campaign(tmp_path / "env", "ticks", SURICATA, tsc=2e9, environment_tsc=1e9))
    (rule,) = case_rules(campaign, campaign.cases[0].case_id)
    assert rule.time_share == pytest.approx(0.45)
    # no rate anywhere: no share, and the reason
    campaign = load_campaign(_campaign(tmp_path / "none", "ticks", SURICATA, tsc=None))
    (rule,) = case_rules(campaign, campaign.cases[0].case_id)
    t = case_rule_time(campaign, campaign.cases[0].case_id)
    assert rule.time_share is None and t is not None and t.time_share is None and "TSC" in (t.why_none or "")


def test_results_rules_json_keeps_the_contract_and_adds_unit_and_time_share(tmp_path: Path) -> None:
    root = _campaign(tmp_path, "us", SNORT, tsc=None)
    assert [r.sid for r in rule_rows(load_campaign(root))] == [2001, 2003, 2002]
    cli = [str(Path(sys.executable).parent / "idsbench"), "results", str(root), "--rules"]
    listed = json.loads(subprocess.run([*cli, "--format", "json"], capture_output=True, text=True, check=True).stdout)
    assert [r["sid"] for r in listed] == [2001, 2003, 2002]
    assert {"sid", "msg", "file", "checks", "matches", "ticks_total", "ticks_avg", "ticks_max", "share", "unit",
            "time_share"} <= set(listed[0])
    assert listed[0]["ticks_max"] is None and listed[0]["unit"] == "us" and listed[0]["ticks_total"] == 55_000
    table = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
    assert "11.00%" in table and "8.750%" in table and "total (µs)" in table


def test_the_reports_costliest_rules_show_the_unit_the_cpu_share_and_no_invented_maximum(tmp_path: Path) -> None:
    from idsbench.report import write_report

    html = write_report(_campaign(tmp_path, "us", SNORT, tsc=None)).read_text()
    section = html[html.index('id="rules"'):html.index("</table>", html.index('id="rules"'))]
    assert "total (µs)" in section and "of CPU" in section
    assert "All rules together took 70.00 ms of the sensor" in html and "0.650 s of CPU time: 11.00%" in html
    row = section[section.index("<td class=\"num\">2001</td>"):]
    row = row[:row.index("</tr>")]
    assert ">–<" in row and "8.750%" in row  # no maximum from Snort; 8.75% of the sensor's CPU


def test_a_profiling_suricata_records_the_tsc_rate_once_in_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from idsbench.native import tsc
    from idsbench.probemodel import TscRate
    from idsbench.sensors import registry
    from idsbench.sensors.suricata import Suricata

    calls: list[int] = []

    def measured() -> TscRate:
        calls.append(1)
        return TscRate(hz=2.3e9, rounds=3)

    monkeypatch.setattr(Suricata, "build_info", lambda self: {"version": "7.0.10"})
    monkeypatch.setattr(tsc, "measure_tsc", measured)
    engine = registry.engine("suricata+profiling")
    assert engine.build_info()["tsc_hz"] == 2.3e9 and engine.build_info()["rule_profiling"] is True
    assert len(calls) == 1  # measured once per adapter, however often build_info is asked
    from idsbench.sensors.suricata.build import EngineRef
    from idsbench.sensors.suricata.built import BuiltSuricata

    plain = BuiltSuricata(EngineRef("suricata", "suricata", None, None, frozenset()))
    assert "tsc_hz" not in plain.build_info() and len(calls) == 1  # only a profiling run needs the rate


def test_the_profilers_own_clock_is_estimated_and_named_where_cpuid_traps(tmp_path: Path) -> None:
    """10 checks × 5 ms per serialized TSC read = 0.05 s of the rules' 0.1-0.2 s (median 0.15 s): a third."""
    root = _campaign(tmp_path, "ticks", SURICATA, tsc=2e9)
    (root / "probe.json").write_text(json.dumps({"tsc": {"hz": 2e9, "rounds": 3}, "timers": {"cpuid_rdtsc_ns": 5e6}}))
    campaign = load_campaign(root)
    t = case_rule_time(campaign, campaign.cases[0].case_id)
    assert t is not None and t.timer_s == pytest.approx(0.05) and t.timer_share == pytest.approx(1 / 3)
    assert "about 33% of the rule time is the profiler's own clock (5,000.0 µs per rule check" in (t.timer_warning() or "")
    # removing the rules saves their time and the clock reads no interval counted: 10 × 5 ms / 0.5 s and
    # / 0.8 s -> 0.1 and 0.0625, median 0.08125, beside the rules' own 0.225
    (group,) = group_costs(campaign, campaign.cases[0].case_id, "file")
    assert group.checks == 10 and group.untimed_clock_share == pytest.approx(0.08125)
    assert group.removal_saving == pytest.approx(0.225 + 0.08125)
    table = subprocess.run([str(Path(sys.executable).parent / "idsbench"), "results", str(root), "--rules"],
                           capture_output=True, text=True, check=True).stdout
    assert "profiler's own clock" in table
    # a host whose TSC read is cheap (no trap): nothing to say; Snort's microseconds: not estimated
    (root / "probe.json").write_text(json.dumps({"tsc": {"hz": 2e9, "rounds": 3}, "timers": {"cpuid_rdtsc_ns": 40.0}}))
    t = case_rule_time(load_campaign(root), campaign.cases[0].case_id)
    assert t is not None and t.timer_share is not None and t.timer_share < 0.001 and t.timer_warning() is None
    snort = case_rule_time(load_campaign(_campaign(tmp_path, "us", SNORT, tsc=None)), campaign.cases[0].case_id)
    assert snort is not None and snort.timer_s is None and snort.timer_warning() is None


def test_the_clock_taken_out_is_the_one_the_build_reads(tmp_path: Path) -> None:
    """An idsbench build reads lfence;rdtsc (50 ns here), not cpuid;rdtsc;cpuid (5 ms): 10 checks × 50 ns of
    the rules' 0.15 s; a build that recorded no clock (upstream's, older stamps) keeps the cpuid figure."""
    timers = {"tsc": {"hz": 2e9, "rounds": 3}, "timers": {"cpuid_rdtsc_ns": 5e6, "lfence_rdtsc_ns": 50.0}}
    patched = _campaign(tmp_path / "patched", "ticks", SURICATA, tsc=2e9, clock="lfence-rdtsc")
    (patched / "probe.json").write_text(json.dumps(timers))
    campaign = load_campaign(patched)
    t = case_rule_time(campaign, campaign.cases[0].case_id)
    assert t is not None and t.timer_ns_per_check == 50.0 and t.timer_s == pytest.approx(10 * 50e-9)
    assert t.timer_warning() is None
    assert profiler_clock_ns(campaign, "suricata") == 50.0
    upstream = _campaign(tmp_path / "upstream", "ticks", SURICATA, tsc=2e9)
    (upstream / "probe.json").write_text(json.dumps(timers))
    assert profiler_clock_ns(load_campaign(upstream), "suricata") == 5e6


def test_the_clock_warning_says_what_the_share_means() -> None:
    """A tenth of the rule time: named, ranked net of it; half or more (upstream's trapping cpuid): the raw
    times follow the checks. A cheap read is given in ns."""
    def warning(timer_s: float, ns: float) -> str:
        t = RuleTime(case="c", engine="e", unit="ticks", rule_time_s=1.0, sensor_cpu_s=2.0, time_share=0.5,
                     samples=2, timer_s=timer_s, timer_ns_per_check=ns)
        return t.timer_warning() or ""
    assert warning(0.14, 28.0) == ("about 14% of the rule time is the profiler's own clock (28 ns per rule check "
                                   "on this host); the rules are ranked net of it")
    assert "(25.0 µs per rule check" in warning(0.9, 25_000.0)
    assert "the raw times rank rules by their checks" in warning(0.9, 25_000.0)
    assert warning(0.05, 28.0) == ""


def test_rules_rank_by_their_time_net_of_the_profilers_clock(tmp_path: Path) -> None:
    """1 µs per clock read at 2 GHz = 2000 ticks per check. Rule 3001 is checked 1000 times and does little
    (2.1M ticks, 2.0M of them the clock); 3002 is checked 100 times and costs 0.8M of its own: by raw ticks
    3001 leads, net of the clock 3002 does."""
    profile = [RuleCost(1, 3001, 1, 1000, 0, 2_100_000, 2100.0, 9000, "ticks"),
               RuleCost(1, 3002, 1, 100, 0, 1_000_000, 10_000.0, 50_000, "ticks"),
               RuleCost(1, 3003, 1, 10, 0, 10_000, 1000.0, 3000, "ticks")]  # less than its clock: net 0
    root = _campaign(tmp_path, "ticks", [profile, profile], tsc=2e9)
    (root / "probe.json").write_text(json.dumps({"tsc": {"hz": 2e9, "rounds": 3}, "timers": {"cpuid_rdtsc_ns": 1000}}))
    campaign = load_campaign(root)
    rows = case_rules(campaign, campaign.cases[0].case_id)
    assert [r.sid for r in rows] == [3002, 3001, 3003]
    assert [r.ticks_net for r in rows] == pytest.approx([800_000, 100_000, 0]) and rows[0].ranked_by == "ticks_net"
    assert top_sids(profile, 2) == [3001, 3002] and top_sids(profile, 2, clock_ticks=2000) == [3002, 3001]
    listed = json.loads(subprocess.run([str(Path(sys.executable).parent / "idsbench"), "results", str(root), "--rules",
                                        "--format", "json"], capture_output=True, text=True, check=True).stdout)
    assert [(r["sid"], r["ticks_net"], r["ranked_by"]) for r in listed][:2] == [(3002, 800_000, "ticks_net"),
                                                                               (3001, 100_000, "ticks_net")]
    # without the clock's cost (no probe timers): the raw order, and it says so
    (root / "probe.json").write_text(json.dumps({"tsc": {"hz": 2e9, "rounds": 3}}))
    rows = case_rules(load_campaign(root), campaign.cases[0].case_id)
    assert [r.sid for r in rows] == [3001, 3002, 3003] and rows[0].ranked_by == "ticks_total"


def test_a_sid_two_rulesets_share_is_named_by_the_file_each_case_ran(tmp_path: Path) -> None:
    """A ruleset axis of ET Open plus a category and ET Open written out of it: the same sids in two files.
    Each case's rules (and its cost per file) name the file that case loaded, never the campaign's first."""
    plus, minus = tmp_path / "et-plus.rules", tmp_path / "et-plus-minus.rules"
    shared = 'alert tcp any any -> any any (msg:"ET POLICY shared"; sid:2001; rev:1;)\n'
    plus.write_text(shared + 'alert tcp any any -> any any (msg:"ET IDSBENCH cost"; sid:2002; rev:1;)\n')
    minus.write_text(shared)
    cases = [FakeCase(samples=2, rules="plus"), FakeCase(samples=2, rules="minus")]
    root = write_campaign(tmp_path / "c", cases)
    doc = json.loads((root / "campaign.json").read_text())
    doc["inputs"]["rules"] = [{"path": str(plus), "sha256": "a" * 64}, {"path": str(minus), "sha256": "b" * 64}]
    doc["inputs"]["rule_load"] = {f"suricata {name}": {"sets": [{"source": str(path), "path": str(path)}]}
                                  for name, path in (("plus", plus), ("minus", minus))}
    (root / "campaign.json").write_text(json.dumps(doc))
    for case in cases:
        for k in range(2):
            costs = [RuleCost(1, 2001, 1, 10, 1, 50_000, 5000.0, None, "us")]
            if case.rules == "plus":
                costs.append(RuleCost(1, 2002, 1, 10, 0, 90_000, 9000.0, None, "us"))
            write_profile(root / "cases" / case.case_id / f"s{k}", costs)
    campaign = load_campaign(root)
    files = {(r.case, r.sid): r.file for r in rule_rows(campaign)}
    by_rules = {c.rules: c.case_id for c in cases}
    assert files[(by_rules["minus"], 2001)] == "et-plus-minus.rules"
    assert files[(by_rules["plus"], 2001)] == "et-plus.rules" and files[(by_rules["plus"], 2002)] == "et-plus.rules"
    assert [g.name for g in group_costs(campaign, by_rules["minus"], "file")] == ["et-plus-minus.rules"]
    assert [g.name for g in group_costs(campaign, by_rules["plus"], "category")] == ["emerging-idsbench", "emerging-policy"]
