"""Suricata builds as an engine axis, for real: the distribution's Suricata and Suricata 8.0.6 built from
../shared/src (`make suricata-src`) in one campaign, bare metal and in a container, with exact counts for
both and both versions named in the results and the report; then a profiling run with ET Open over a real
capture: its per-rule costs, top 20 and cost per ET category, and the top 5 of two samples agreeing.

Needs root, tcpreplay/ip/ethtool/suricata, the build (`make suricata-src`; this test builds it on first use,
~5 min on 2 idle cores), a container runtime for the container case and ../shared/data. Under CI=true /
IDSBENCH_STRICT=1 anything missing fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from idsbench import settings
from idsbench.analysis import case_table
from idsbench.analysis.rules import case_rules, clock_ticks_per_check, group_costs
from idsbench.report import write_report
from idsbench.run.campaign import run_campaign
from idsbench.sensors.ruleprofile import write_without_category
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign, rule_profile
from idsbench.traffic.pcap import read_info
from tests.integration.conftest import unavailable

from .conftest import PCAPS, RULES, TEST_PREFIX
from .warm import one_preflight

pytestmark = pytest.mark.integration

LOSSLESS = PCAPS / "nf_evidence02.pcap"  # 572 packets
HTTP = PCAPS / "sv_base64-decode-5885.pcap"  # 1143 packets of HTTP: many ET rules are checked
BUILD = "suricata@8.0.6"


@pytest.fixture(scope="module", autouse=True)
def _one_preflight() -> Iterator[None]:
    """The module's campaigns run back to back on the same host, engines and rule files: each ruleset is
    test-loaded once (ET Open on the profiling build: ~13 s) and the host's quietness probed once per time
    scale (warm.py)."""
    with one_preflight():
        yield


@pytest.fixture
def ready(state_dir: Path) -> Path:
    if os.geteuid() != 0:
        unavailable("needs root (namespaces, AF_PACKET, cgroups)")
    missing = [p for p in ("ip", "ethtool", "tcpreplay", "suricata", "cargo", "cbindgen") if shutil.which(p) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    if not LOSSLESS.is_file() or not HTTP.is_file():
        unavailable("the shared captures are absent (../shared/data/pcaps beside the checkout)")
    return state_dir


def _run(tmp_path: Path, state_dir: Path, name: str, spec: dict[str, Any]) -> Path:
    out = tmp_path / name
    run_campaign(spec_from_dict({"name": name, **spec}), out, state_dir=state_dir,
                 cache_dir=settings.cache_dir(), name_prefix=TEST_PREFIX)
    return out


@pytest.mark.parametrize("kind", ["baremetal", "container"])
def test_installed_and_built_suricata_exact_and_compared(tmp_path: Path, ready: Path, kind: str) -> None:
    if kind == "container" and not (shutil.which("podman") or shutil.which("docker")):
        unavailable("no container runtime (podman or docker)")
    trace = read_info(LOSSLESS, cache_dir=tmp_path / "traceinfo")
    out = _run(tmp_path, ready, f"builds-{kind}", {
        "samples": 2, "timing": {"settle_s": 1.5}, "setup": {"kinds": [kind]},
        "traffic": {"traces": [str(LOSSLESS)], "replayers": [1], "rate": [{"pps": 1000}]},
        "sensor": {"engine": ["suricata", BUILD]}})
    versions = {}
    for path in out.glob("cases/*/s*/summary.json"):
        s = json.loads(path.read_text())
        c = s["sensor"]["counters"]
        assert s["status"] == "ok", (s["case"]["engine"], s["reason"], s["warnings"])
        assert (c["decoded_pkts"], c["dropped_pkts"]) == (trace.packets, 0), (s["case"]["engine"], c)
        versions[s["case"]["engine"]] = s["sensor"]["version"]
    assert versions[BUILD] == "8.0.6" and versions["suricata"] != "8.0.6", versions
    rows = {r.params.engine: r.to_row() for r in case_table(load_campaign(out))}
    assert rows[BUILD]["engine_version"] == "8.0.6" and rows["suricata"]["engine_version"] == versions["suricata"]
    doc = json.loads((out / "campaign.json").read_text())
    built = doc["environment"]["engines"][BUILD]
    assert built["source_sha256"] == "895234a17c5f6bea0657f9b23e7efbc287682253869efa1a5c3f422c99ae831a"
    assert "--enable-profiling-rules" in built["configure_flags"] and built["build_id"]
    html = write_report(out).read_text()
    assert "Builds compared" in html and f"{BUILD} (8.0.6)" in html and f"suricata ({versions['suricata']})" in html


def test_profiling_build_ranks_et_open_rules(tmp_path: Path, ready: Path) -> None:
    et = RULES / "et-open-2024-04-12.rules"
    if not et.is_file():
        unavailable(f"{et} is absent")
    out = _run(tmp_path, ready, "ruleprof", {
        "samples": 2, "timing": {"settle_s": 2.0},
        "traffic": {"traces": [str(HTTP)], "replayers": [1], "rate": [{"pps": 500}]},
        "sensor": {"engine": [f"{BUILD}+profiling"], "rules": [str(et)], "ready_timeout_s": 600}})
    campaign = load_campaign(out)
    (case,) = campaign.cases
    samples = [s for s in campaign.samples_of(case.case_id) if s.status == "ok"]
    assert len(samples) == 2, [(s.status, s.summary.reason) for s in campaign.samples_of(case.case_id)]
    profiles = [rule_profile(s) for s in samples]
    assert all(p and len(p) >= 20 for p in profiles), [len(p or []) for p in profiles]
    # the same packets, the same checks: which rules ran and how often does not depend on the host's speed
    checks = [{c.sid: c.checks for c in p or []} for p in profiles]
    assert checks[0].keys() == checks[1].keys(), set(checks[0]) ^ set(checks[1])
    assert abs(sum(checks[0].values()) - sum(checks[1].values())) <= 0.01 * sum(checks[0].values()), checks
    # our build reads the clock with lfence;rdtsc (scripts/patches): tens of ticks a read, where upstream's
    # cpuid;rdtsc;cpuid costs thousands on any host and tens of thousands where cpuid traps (a VM)
    assert campaign.doc.environment.engines[case.params.engine].profiler_clock == "lfence-rdtsc"
    clock = clock_ticks_per_check(campaign, case.params.engine, "ticks")  # probe timers × TSC rate
    assert clock is not None and 0 < clock < 1000, clock
    rows = case_rules(campaign, case.case_id)
    top20 = rows[:20]
    assert len(top20) == 20 and all(r.msg and r.file == et.name for r in top20)
    assert all(r.ranked_by == "ticks_net" for r in rows)
    assert [r.ticks_net for r in top20] == sorted((r.ticks_net or 0.0 for r in top20), reverse=True)
    assert 0 < sum(r.share for r in rows) <= 1.05
    categories = group_costs(campaign, case.case_id, "category")
    assert categories[0].name.startswith("emerging-") and categories[0].share > 0
    cli = subprocess.run([str(Path(sys.executable).parent / "idsbench"), "results", str(out), "--rules", "--format", "json"],
                         capture_output=True, text=True, check=True)
    listed = json.loads(cli.stdout)
    assert [r["sid"] for r in listed[:20]] == [r.sid for r in top20]
    html = write_report(out).read_text()
    assert "Costliest rules" in html and str(top20[0].sid) in html and categories[0].name in html
    assert set(listed[0]) >= {"sid", "msg", "file", "checks", "matches", "ticks_total", "ticks_avg",
                              "ticks_max", "share"}


DCERPC = PCAPS / "zeek_dcerpc_mapi.pcap"  # 800 packets of DCERPC/SMB: ET's GPL NETBIOS rules are checked on most
ROUNDS = 3  # of the ruleset axis with and without the costliest category (see the test)
COSTLY = 200  # rules of the category the test adds to ET Open


def test_removing_the_costliest_category_saves_what_the_profiler_said_it_cost(tmp_path: Path, ready: Path) -> None:
    """The profiler's share for the costliest category of an ET-style ruleset vs the CPU per packet a ruleset
    axis without it saves, on the same (profiling) build, samples interleaved: same sign, within a factor of 2.
    The reference adds the profiler's clock reads no interval counted (GroupCost.removal_saving).

    The ruleset is ET Open plus a category of our own (COSTLY content-less PCRE rules, `ET IDSBENCH …`, so
    catalog names it emerging-idsbench): ET Open's own categories cost this capture a few % of the sensor's
    CPU once the profiler's clock no longer traps (gpl-netbios 2.8% with lfence;rdtsc, against 40% when every
    read was a cpuid VM exit), less than three rounds on a shared host can resolve."""
    from idsbench.analysis.builds import compare_along
    from idsbench.analysis.rules import case_rule_time

    et = RULES / "et-open-2024-04-12.rules"
    if not et.is_file() or not DCERPC.is_file():
        unavailable(f"{et} or {DCERPC} is absent")
    engine = f"{BUILD}+profiling"
    traffic = {"traces": [str(DCERPC)], "replayers": [1], "rate": [{"pps": 1000}], "loops": 2}
    sensor = {"engine": [engine], "ready_timeout_s": 600, "ground_truth": False}
    ruleset = tmp_path / "et-open-plus.rules"
    ruleset.write_text(et.read_text(errors="replace") + "".join(
        f'alert tcp any any -> any any (msg:"ET IDSBENCH cost {i}"; pcre:"/[a-z]{{3}}[0-9]{{2}}q{i}x/i"; '
        f"sid:{1998000 + i}; rev:1;)\n" for i in range(COSTLY)))
    category = "emerging-idsbench"
    minus = tmp_path / f"et-open-plus-minus-{category}.rules"
    removed = write_without_category(ruleset, category, minus)
    assert removed == COSTLY

    out = _run(tmp_path, ready, "rulecost", {
        "samples": ROUNDS, "order": "interleaved", "timing": {"settle_s": 1.0}, "traffic": traffic,
        "sensor": {**sensor, "rules": {"et-open": [str(ruleset)], "et-open-minus": [str(minus)]}}})
    profiled = load_campaign(out)
    (case,) = [c for c in profiled.cases if c.params.rules == "et-open"]
    costliest = group_costs(profiled, case.case_id, "category")[0]
    assert costliest.name == category, costliest  # the profiler names the category that costs most
    share = costliest.time_share
    assert share is not None and share > 0.1, costliest
    assert removed >= costliest.rules > 0
    rows = case_table(profiled)
    assert all(r.status_counts.get("ok") == ROUNDS for r in rows), [(r.case, r.status_counts) for r in rows]
    (cmp,) = compare_along(rows, "rules", ["sensor_us_per_pkt"])
    assert cmp.values == ("et-open", "et-open-minus")
    d = cmp.deltas["sensor_us_per_pkt"]
    timing = case_rule_time(profiled, case.case_id)
    expected = costliest.removal_saving
    print(f"costliest category {costliest.name} ({costliest.rules} rules checked, {removed} removed): profiler share "
          f"{share:.1%} of the sensor's CPU, with the uncounted clock reads {expected or 0:.1%}; without it CPU/pkt "
          f"{d.base:.1f} -> {d.contender:.1f} us, effect {d.effect_pct:+.1f}% CI {d.effect_ci}; the profiler's own "
          f"clock ~{(timing.timer_share or 0) if timing else 0:.0%} of the rule time")
    # 3 rounds reach a 75% CI: no verdict at the 95% asked (issue 41), but that CI lies below 0
    assert d.verdict == "inconclusive" and d.level == 0.75 and d.effect_pct is not None and d.effect_ci is not None, d
    assert d.effect_ci[1] < 0, d
    # the rulesets ran in rounds (issue 28): campaign.json records them, the comparison is paired
    doc = json.loads((out / "campaign.json").read_text())
    assert doc["order"]["order"] == "interleaved" and len(doc["order"]["rounds"]) == ROUNDS and doc["order"]["seed"] is not None
    assert d.paired, d
    # the CPU per packet's span ends where the sensor's processing did: where the quiet watch concluded the
    # drain. A stats record that counts everything can end the drain first (the watch starts looking at
    # settle_s; 3 of 8 samples in one run here): then the span is the drain's, between replay end and drained.
    processing = 0
    for s in profiled.samples:
        cost = s.summary.cost
        assert cost is not None and cost.definition == "processing" and cost.cpu_drained_s is not None, cost
        if cost.processed_s is not None:
            processing += 1
            assert cost.cpu_processed_s is not None and cost.cpu_s == cost.cpu_processed_s, cost
            assert cost.cpu_replay_s <= cost.cpu_processed_s <= cost.cpu_drained_s, cost
        else:
            assert cost.cpu_processed_s is None and cost.cpu_replay_s <= cost.cpu_s <= cost.cpu_drained_s, cost
    assert processing > 0, "no sample's drain was concluded by its quiet watch"
    assert expected is not None and expected >= share
    saved = -d.effect_pct / 100
    assert expected / 2 <= saved <= min(1.0, expected * 2), (share, expected, saved)
