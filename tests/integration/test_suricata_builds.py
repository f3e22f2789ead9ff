"""The profiling build of Suricata 8.0.6 (`make suricata-src`) for real, in one campaign with ET Open over a
real capture: its per-rule costs, top 20 and cost per ET category, the same checks in every sample; and the
removal of the costliest category saving what the profiler said it cost. (The build beside the distribution's
Suricata as an engine axis, exact in both setups and compared in the report, is checked in the campaign of
test_capture_methods.py.)

Needs root, tcpreplay/ip/ethtool/suricata, the build (`make suricata-src`; built on first use otherwise,
~5 min on 2 idle cores) and ../shared/data. Under CI=true / IDSBENCH_STRICT=1 anything missing fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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
from tests.integration.conftest import unavailable

from .conftest import PCAPS, RULES, TEST_PREFIX

pytestmark = [pytest.mark.integration, pytest.mark.builds]  # Suricata 8.0.6 or Snort from source: after the builds

HTTP = PCAPS / "sv_base64-decode-5885.pcap"  # 1143 packets of HTTP: many ET rules are checked
BUILD = "suricata@8.0.6"


def _run(base: Path, state_dir: Path, name: str, spec: dict[str, Any]) -> Path:
    out = base / name
    run_campaign(spec_from_dict({"name": name, **spec}), out, state_dir=state_dir,
                 cache_dir=settings.cache_dir(), name_prefix=TEST_PREFIX)
    return out


ROUNDS = 3  # of the ruleset axis with and without the costliest category (see below)
# rules of the category added to ET Open: 600 make it ~46% of the sensor's CPU (saved: 48% [45, 60] here). With
# 200 (~14%) one et-open sample in a slow spell of the host (+38%) left the 3-round CI of -14% reaching +12% (CI, 2026-12-07):
# the saving must stand well clear of what one sample of this host can move, since 3 rounds are what it can afford
COSTLY = 600
CATEGORY = "emerging-idsbench"


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """One campaign of the profiling build over the HTTP capture, two rulesets in interleaved rounds: ET Open
    as it is ("et-open"), and ET Open plus a category of our own ("et-open-plus": COSTLY content-less PCRE
    rules, `ET IDSBENCH …`, which the catalog names emerging-idsbench). The first is ET Open's ranking; the
    pair is the removal of the costliest category (ET Open's own categories cost this capture a few % of
    the sensor's CPU once the profiler's clock no longer traps, less than three rounds on a shared host can
    resolve). Returns (campaign dir, ET Open, rules removed)."""
    if os.geteuid() != 0:
        unavailable("needs root (namespaces, AF_PACKET, cgroups)")
    missing = [p for p in ("ip", "ethtool", "tcpreplay", "suricata", "cargo", "cbindgen") if shutil.which(p) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    et = RULES / "et-open-2024-04-12.rules"
    if not et.is_file() or not HTTP.is_file():
        unavailable(f"{et} or {HTTP} is absent")
    base = tmp_path_factory.mktemp("ruleprof")
    state = base / "state"
    state.mkdir()
    plus = base / "et-open-plus.rules"
    plus.write_text(et.read_text(errors="replace") + "".join(
        f'alert tcp any any -> any any (msg:"ET IDSBENCH cost {i}"; pcre:"/[a-z]{{3}}[0-9]{{2}}q{i}x/i"; '
        f"sid:{1998000 + i}; rev:1;)\n" for i in range(COSTLY)))
    # the removal as a user makes it: the costly category written out of the bigger ruleset is ET Open again
    minus = base / f"et-open-plus-minus-{CATEGORY}.rules"
    removed = write_without_category(plus, CATEGORY, minus)
    out = _run(base, state, "ruleprof", {
        "samples": ROUNDS, "order": "interleaved", "timing": {"settle_s": 1.0},
        "traffic": {"traces": [str(HTTP)], "replayers": [1], "rate": [{"pps": 1000}]},
        "sensor": {"engine": [f"{BUILD}+profiling"], "ready_timeout_s": 600, "ground_truth": False,
                   "rules": {"et-open-plus": [str(plus)], "et-open": [str(minus)]}}})
    assert not list(state.glob("*.json")), "the campaign left resources in its state file"
    return out, et, removed


def test_profiling_build_ranks_et_open_rules(profiled: tuple[Path, Path, int]) -> None:
    out, et, removed = profiled
    assert removed == COSTLY
    campaign = load_campaign(out)
    (case,) = [c for c in campaign.cases if c.params.rules == "et-open"]
    samples = [s for s in campaign.samples_of(case.case_id) if s.status == "ok"]
    assert len(samples) == ROUNDS, [(s.status, s.summary.reason) for s in campaign.samples_of(case.case_id)]
    profiles = [rule_profile(s) for s in samples]
    assert all(p and len(p) >= 20 for p in profiles), [len(p or []) for p in profiles]
    # the same packets, the same checks: which rules ran and how often does not depend on the host's speed
    checks = [{c.sid: c.checks for c in p or []} for p in profiles]
    for other in checks[1:]:
        assert checks[0].keys() == other.keys(), set(checks[0]) ^ set(other)
        assert abs(sum(checks[0].values()) - sum(other.values())) <= 0.01 * sum(checks[0].values()), checks
    # our build reads the clock with lfence;rdtsc (scripts/patches): tens of ticks a read, where upstream's
    # cpuid;rdtsc;cpuid costs thousands on any host and tens of thousands where cpuid traps (a VM)
    assert campaign.doc.environment.engines[case.params.engine].profiler_clock == "lfence-rdtsc"
    clock = clock_ticks_per_check(campaign, case.params.engine, "ticks")  # probe timers × TSC rate
    assert clock is not None and 0 < clock < 1000, clock
    rows = case_rules(campaign, case.case_id)
    top20 = rows[:20]
    ruleset = f"et-open-plus-minus-{CATEGORY}.rules"  # ET Open's rules, written out of the bigger file
    assert len(top20) == 20 and all(r.msg and r.file == ruleset for r in top20)
    assert all(r.ranked_by == "ticks_net" for r in rows)
    assert [r.ticks_net for r in top20] == sorted((r.ticks_net or 0.0 for r in top20), reverse=True)
    assert 0 < sum(r.share for r in rows) <= 1.05
    categories = group_costs(campaign, case.case_id, "category")
    assert categories[0].name.startswith("emerging-") and categories[0].share > 0
    assert all(c.name != CATEGORY for c in categories)  # the removal left none of its rules
    cli = subprocess.run([str(Path(sys.executable).parent / "idsbench"), "results", str(out), "--rules", "--format",
                          "json"], capture_output=True, text=True, check=True)
    listed = json.loads(cli.stdout)
    ours = [r for r in listed if r["case"] == case.case_id]
    assert [r["sid"] for r in ours[:20]] == [r.sid for r in top20]
    html = write_report(out).read_text()
    assert "Costliest rules" in html and str(top20[0].sid) in html and categories[0].name in html
    assert set(listed[0]) >= {"sid", "msg", "file", "checks", "matches", "ticks_total", "ticks_avg",
                              "ticks_max", "share"}


def test_removing_the_costliest_category_saves_what_the_profiler_said_it_cost(profiled: tuple[Path, Path, int]) -> None:
    """The profiler's share for the costliest category of an ET-style ruleset vs the CPU per packet a ruleset
    axis without it saves, on the same (profiling) build, samples interleaved: same sign, within a factor of 2.
    The reference adds the profiler's clock reads no interval counted (GroupCost.removal_saving)."""
    from idsbench.analysis.builds import compare_along
    from idsbench.analysis.rules import case_rule_time

    out, _et, removed = profiled
    campaign = load_campaign(out)
    (case,) = [c for c in campaign.cases if c.params.rules == "et-open-plus"]
    costliest = group_costs(campaign, case.case_id, "category")[0]
    assert costliest.name == CATEGORY, costliest  # the profiler names the category that costs most
    share = costliest.time_share
    assert share is not None and share > 0.1, costliest
    assert removed >= costliest.rules > 0
    rows = case_table(campaign)
    assert all(r.status_counts.get("ok") == ROUNDS for r in rows), [(r.case, r.status_counts) for r in rows]
    (cmp,) = compare_along(rows, "rules", ["sensor_us_per_pkt"])
    assert cmp.values == ("et-open-plus", "et-open")
    d = cmp.deltas["sensor_us_per_pkt"]
    timing = case_rule_time(campaign, case.case_id)
    expected = costliest.removal_saving
    print(f"costliest category {costliest.name} ({costliest.rules} rules checked, {removed} removed): profiler share "
          f"{share:.1%} of the sensor's CPU, with the uncounted clock reads {expected or 0:.1%}; without it CPU/pkt "
          f"{d.base:.1f} -> {d.contender:.1f} us, effect {d.effect_pct:+.1f}% CI {d.effect_ci}; the profiler's own "
          f"clock ~{(timing.timer_share or 0) if timing else 0:.0%} of the rule time")
    # 3 rounds reach a 75% CI: no verdict at the 95% asked (issue 41), but that CI lies below 0 (the saving is
    # ~half the CPU, COSTLY, far beyond a sample's drift here)
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
    for s in campaign.samples:
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
