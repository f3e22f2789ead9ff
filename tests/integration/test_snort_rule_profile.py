"""Snort 3's rule profiler for real (`snort+profiling`): a bare-metal campaign over a real capture, two
samples per ruleset, ET Open whole and ET Open without its IP-list rules (a ruleset axis). Checked: the rules
listed by time in µs with non-zero checks, no invented maximum, every text rule read back as a rule
that was loaded (Snort's columns run together for the IP lists' 7-digit sids and 4-5 digit revs), each
rule's share of the sensor's own CPU time in (0, 1]; and what Snort's profiler keeps from sample to sample
on a shared host (issue 21's top-5 overlap ">= 4" is not: it is printed, see the end of the test):
- with ET Open whole, its IP-list rules take most of the rule time in every sample (> 50%);
- without them, each sample's costliest rule is among the other sample's ten costliest.

Why the second ruleset: Snort checks each of ET Open's ~1,200 IP-list rules (TOR, CINS, 3CORESec, …; no
content) on every packet at nearly the same cost, and they take 90-98% of its rule time; their order is noise
(a sensor thread preempted for a 4-12 ms time slice while one of them runs puts that rule first), so the
top 5 of whole ET Open changes from sample to sample. Without them the costliest rules stand apart
(zeek_dcerpc_mapi: four GPL NETBIOS SMB NT Trans rules above the rest in every run, measured with `snort -r`).

Needs root, tcpreplay/ip/ethtool/stdbuf, the Snort build (`make snort`) and ../shared/data. The first run
converts the rule files for Snort into the cache; later runs reuse it. Under CI=true / IDSBENCH_STRICT=1
anything missing fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from idsbench import settings
from idsbench.analysis.rules import case_rule_time, group_costs, top_sids
from idsbench.run.campaign import run_campaign
from idsbench.sensors.snort import Snort
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign, rule_profile
from tests.integration.conftest import unavailable

from .conftest import PCAPS, RULES, TEST_PREFIX

pytestmark = [pytest.mark.integration, pytest.mark.builds]  # Suricata 8.0.6 or Snort from source: after the builds

TRACE = PCAPS / "zeek_dcerpc_mapi.pcap"  # 800 packets of SMB/DCE-RPC
ET_OPEN = RULES / "et-open-2024-04-12.rules"
# a rule whose source or destination is a literal address list: ET's IP reputation groups
IP_LIST = re.compile(r"^\s*alert\s+\S+\s+(?:\[\d|\S+\s+\S+\s+->\s+\[\d)")


@pytest.fixture
def ready(state_dir: Path) -> Path:
    if os.geteuid() != 0:
        unavailable("needs root (namespaces, AF_PACKET, cgroups)")
    missing = [p for p in ("ip", "ethtool", "tcpreplay", "stdbuf") if shutil.which(p) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    for path in (TRACE, ET_OPEN):
        if not path.is_file():
            unavailable(f"{path} is absent (../shared/data beside the checkout)")
    if not Snort().available():
        unavailable("Snort 3 is not built (run `make snort`)")
    return state_dir


def test_snort_profiler_ranks_et_open_rules_in_microseconds(tmp_path: Path, ready: Path) -> None:
    no_ip_lists = tmp_path / "et-open-no-ip-lists.rules"
    no_ip_lists.write_text("".join(line for line in ET_OPEN.read_text().splitlines(keepends=True)
                                   if not IP_LIST.match(line)))
    out = tmp_path / "snort-ruleprof"
    spec = {"name": "snort-ruleprof", "samples": 2, "timing": {"settle_s": 2.0},
            "traffic": {"traces": [str(TRACE)], "replayers": [1], "rate": [{"pps": 500}]},
            "sensor": {"engine": ["snort+profiling"], "ready_timeout_s": 600, "ground_truth": False,
                       "rules": {"et-open": [str(ET_OPEN)], "no-ip-lists": [str(no_ip_lists)]},
                       "set": {"snort": {"threads": 1}}}}  # one packet thread on the sensor's CPU
    run_campaign(spec_from_dict(spec), out, state_dir=ready, cache_dir=settings.cache_dir(), name_prefix=TEST_PREFIX)
    campaign = load_campaign(out)
    cli = subprocess.run([str(Path(sys.executable).parent / "idsbench"), "results", str(out), "--rules",
                          "--format", "json"], capture_output=True, text=True, check=True)
    listed = json.loads(cli.stdout)
    cases = {c.params.rules: c.case_id for c in campaign.cases}
    assert set(cases) == {"et-open", "no-ip-lists"}
    ip_sids = {int(m.group(1)) for line in ET_OPEN.read_text().splitlines() if IP_LIST.match(line)
               for m in [re.search(r"\bsid:\s*(\d+)", line)] if m}
    overlap, tops, ip_share = {}, {}, {}
    for ruleset, case_id in cases.items():
        samples = [s for s in campaign.samples_of(case_id) if s.status == "ok"]
        assert len(samples) == 2, [(s.status, s.summary.reason) for s in campaign.samples_of(case_id)]
        assert not [w for s in samples for w in s.summary.warnings if "rule profile" in w]
        profiles = [rule_profile(s) or [] for s in samples]
        assert all(len(p) >= 20 and {c.unit for c in p} == {"us"} for p in profiles), [len(p) for p in profiles]
        tops[ruleset] = [top_sids(p, 10) for p in profiles]
        overlap[ruleset] = len(set(tops[ruleset][0][:5]) & set(tops[ruleset][1][:5]))
        ip_share[ruleset] = [sum(c.ticks_total for c in p if c.gid == 1 and c.sid in ip_sids)
                             / sum(c.ticks_total for c in p) for p in profiles]
        rows = [r for r in listed if r["case"] == case_id]
        top = rows[:20]
        assert len(top) == 20 and all(r["checks"] > 0 and r["unit"] == "us" and r["ticks_max"] is None for r in top)
        assert [r["ticks_total"] for r in rows] == sorted((r["ticks_total"] for r in rows), reverse=True)
        # every text rule is one that was loaded: a misread column would make up a sid the catalog lacks
        files = {ET_OPEN.name, no_ip_lists.name}  # the catalog spans the campaign's rule files
        assert all(r["msg"] and r["file"] in files for r in rows if r["gid"] == 1), \
            [r for r in rows if r["gid"] == 1 and not (r["msg"] and r["file"] in files)][:3]
        assert all(0 < r["time_share"] <= 1 for r in top if r["ticks_total"] > 0), top[:3]
        total = case_rule_time(campaign, case_id)
        assert total is not None and total.time_share is not None and total.time_share > 0, total
        category = group_costs(campaign, case_id, "category")[0]
        print(f"snort+profiling, {ruleset} over {TRACE.name}: top 5 {[r['sid'] for r in top[:5]]} "
              f"{[round(r['ticks_total']) for r in top[:5]]} µs; top-5 overlap {overlap[ruleset]}; all rules "
              f"{total.rule_time_s:.4f} s of the sensor's {total.sensor_cpu_s:.3f} s CPU = {total.time_share:.1%}; "
              f"costliest category {category.name} ({category.rules} rules, {category.share:.0%} of rule time); "
              f"IP-list rules' share of rule time per sample {[round(x, 3) for x in ip_share[ruleset]]}; "
              f"top 10 per sample {tops[ruleset]}")
    # The top-5 overlap is printed, not asserted: Snort's rule timer runs on while its thread is preempted,
    # so on this shared 2-core VM even the ruleset without IP lists gave 4 of 5 in one run and 2 of 5 in the
    # next. Issue 21's ">= 4 of 5" check is asserted on Suricata's profiler (test_suricata_builds.py).
    # What the profiler keeps: (1) ET Open's ~1,200 IP-list rules have no content, so Snort checks every one
    # on every packet, while a content rule runs only when its fast pattern matched: they take most of the
    # rule time (measured 0.889-0.915 in each of 6 samples, 3 runs; 90-98% in earlier runs). A preemption (a 4-12 ms time
    # slice) charged to some other rule moves that share by a few points of the ~0.4-0.7 s of rule time, so
    # "more than half" holds whatever rule a preemption lands on, and fails if time is charged to the wrong
    # rules (a misread column, a unit mixed up). (2) Without them four GPL NETBIOS SMB NT Trans rules stand
    # apart (ranks 1-4 in all 6 samples of 3 runs, 2103029 first; `snort -r` ranks them so): a sample's
    # costliest rule is among the other's ten costliest, unless a preemption charged to a cheap rule outweighed them.
    assert all(x > 0.5 for x in ip_share["et-open"]), ip_share
    assert ip_share["no-ip-lists"] == [0.0, 0.0], ip_share  # the axis removed them
    a, b = tops["no-ip-lists"]
    assert a[0] in b and b[0] in a, (a, b)
