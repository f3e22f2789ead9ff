"""Snort 3 and the nodetect engine through the real runner (run_campaign): bare metal and in a
container, exact counts when lossless, drops that add up under a CPU limit, alerts per rule, the
rule share recorded per engine, and a rule Snort rejects reported with Snort's own message.

Needs root, tcpreplay/ip/ethtool/stdbuf/suricata/tcpdump, the Snort build (`make snort`), a container
runtime for the container case, and ../shared/data/pcaps. Under CI=true / IDSBENCH_STRICT=1 anything
missing fails. Images and builds come from the persistent cache (made once per machine).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from idsbench import settings
from idsbench.analysis import case_table
from idsbench.errors import InputError
from idsbench.report import write_report
from idsbench.run.campaign import run_campaign
from idsbench.sensors import rulesets
from idsbench.sensors.base import SensorOptions
from idsbench.sensors.snort import Snort
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign
from idsbench.traffic.pcap import read_info
from tests.integration.conftest import unavailable

from .conftest import PCAPS, TEST_PREFIX

pytestmark = [pytest.mark.integration, pytest.mark.builds]  # Suricata 8.0.6 or Snort from source: after the builds

LOSSLESS = PCAPS / "nf_evidence02.pcap"  # 572 packets
BURST = PCAPS / "zeek_modbusBig.pcap"    # 13622 small packets
# Suricata flavour (nocase as an option of its own): Snort loads it after conversion.
# Ground truth per copy of the trace (tshark): 26 packets to udp/514, 2 SMTP "MAIL FROM" commands.
RULES = (
    'alert udp any any -> any 514 (msg:"idsbench syslog packet"; sid:1000002; rev:3;)\n'
    'alert tcp any any -> any 587 (msg:"idsbench smtp MAIL FROM"; flow:established,to_server; '
    'content:"MAIL FROM"; nocase; sid:1000001; rev:1;)\n'
)
# Snort alerts on every matching packet; Suricata raises the header-only syslog rule once per flow
# (2 flows per copy): measured, the same on every run.
ALERTS_PER_COPY = {"snort": {1000002: 26, 1000001: 2}, "suricata": {1000002: 2, 1000001: 2}}


@pytest.fixture
def ready(state_dir: Path) -> Path:
    """Root, programs, captures and the Snort build, or skip (fail under CI)."""
    if os.geteuid() != 0:
        unavailable("needs root (namespaces, AF_PACKET, cgroups)")
    missing = [p for p in ("ip", "ethtool", "tcpreplay", "stdbuf", "suricata", "tcpdump", "gcc")
               if shutil.which(p) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    for pcap in (LOSSLESS, BURST):
        if not pcap.is_file():
            unavailable(f"shared capture {pcap} is absent (../shared/data/pcaps beside the checkout)")
    if not Snort().available():
        unavailable("Snort 3 is not built (run `make snort`)")
    return state_dir


def _campaign(tmp_path: Path, state_dir: Path, name: str, **doc: Any) -> tuple[Path, dict[str, dict[str, Any]]]:
    rules = tmp_path / "suricata-flavour.rules"
    rules.write_text(RULES)
    spec = {"name": name, "samples": 1, "timing": {"settle_s": 1.5},
            "sensor": {"rules": [str(rules)], **doc.pop("sensor", {})}, **doc}
    out = tmp_path / name
    result = run_campaign(spec_from_dict(spec), out, state_dir=state_dir, cache_dir=settings.cache_dir(),
                          name_prefix=TEST_PREFIX)
    assert result.ran == len(list(out.glob("cases/*/s0/summary.json")))
    by_engine = {}
    for path in out.glob("cases/*/s0/summary.json"):
        summary = json.loads(path.read_text())
        by_engine[summary["case"]["engine"]] = summary
    return out, by_engine


def _assert_exact(summary: dict[str, Any], packets: int, trace_bytes: int) -> None:
    c = summary["sensor"]["counters"]
    assert summary["status"] == "ok", (summary["reason"], summary["warnings"])
    assert summary["drained"] is True
    assert (c["captured_pkts"], c["decoded_pkts"], c["dropped_pkts"]) == (packets, packets, 0), c
    assert c["decoded_bytes"] == trace_bytes, c


@pytest.mark.parametrize("kind", ["baremetal", "container"])
def test_engines_lossless_exact_counts_and_alerts_per_rule(tmp_path: Path, ready: Path, kind: str) -> None:
    if kind == "container" and not (shutil.which("podman") or shutil.which("docker")):
        unavailable("no container runtime (podman or docker)")
    trace = read_info(LOSSLESS, cache_dir=tmp_path / "traceinfo")
    replayers = 2
    engines = ["suricata", "snort", "nodetect"] if kind == "baremetal" else ["snort", "nodetect"]
    out, by_engine = _campaign(tmp_path, ready, f"engines-{kind}", setup={"kinds": [kind]},
                               traffic={"traces": [str(LOSSLESS)], "replayers": [replayers],
                                        "rate": [{"pps": 1000}]},
                               sensor={"engine": engines})
    assert set(by_engine) == set(engines)
    for engine, summary in by_engine.items():
        _assert_exact(summary, replayers * trace.packets, replayers * trace.bytes)
        assert summary["sensor_exit"] == 0  # stopped gracefully (SIGTERM)
        if engine == "nodetect":
            assert summary["sensor"]["alerts_by_sid"] == {} and summary["sensor"]["rule_sets"] == []
            continue
        expected = {str(sid): n * replayers for sid, n in ALERTS_PER_COPY[engine].items()}
        assert summary["sensor"]["alerts_by_sid"] == expected
        assert summary["sensor"]["counters"]["alerts"] == sum(expected.values())
        (rule_set,) = summary["sensor"]["rule_sets"]
        assert (rule_set["rules"], rule_set["loaded"]) == (2, 2)
        assert rule_set["method"] == ("converted" if engine == "snort" else "as-is")
    if kind == "container":
        snort_dir = next(out.glob("cases/*snort*/s0"))
        assert json.loads((snort_dir / "container.json").read_text())["exit_code"] == 0
    rows = {r.params.engine: r.to_row() for r in case_table(load_campaign(out))}
    assert rows["snort"]["rules_loaded_share"] == 1.0 and rows["nodetect"]["rules_loaded_share"] is None
    if kind == "baremetal":
        assert rows["snort"]["alert_recall"] == 1  # live == `snort -r` on each replayer's copy (the truth)
        assert rows["snort"]["common_rules"] == 2  # both IDS engines loaded both sids
        assert rows["snort"]["alerts_common_rules"] == 56 and rows["suricata"]["alerts_common_rules"] == 8
    doc = json.loads((out / "campaign.json").read_text())
    assert doc["inputs"]["rule_load"]["snort"]["sids"] == [1000001, 1000002]
    html = write_report(out).read_text()
    assert 'id="engines"' in html and "alerts on common rules" in html


def test_engines_drop_under_a_cpu_limit_and_the_accounting_closes(tmp_path: Path, ready: Path) -> None:
    """5% of a CPU against a topspeed burst of small packets, small rings: Snort (1 MiB afpacket ring
    per thread) and ibcapture (2 x 4 KiB blocks: ~60 frames, 0.15 ms at topspeed) both drop; every
    packet is accounted for. (ibcapture costs so little per packet that 16 blocks, ~1 ms, rode out a
    slowed sender's whole burst once.)"""
    trace = read_info(BURST, cache_dir=tmp_path / "traceinfo")
    out, by_engine = _campaign(
        tmp_path, ready, "engines-overload", setup={"cpus": [0.05]},
        traffic={"traces": [str(BURST)], "replayers": [1], "rate": ["topspeed"], "loops": 3},
        sensor={"engine": ["snort", "nodetect"], "set": {"snort": {"buffer_size_mb": 1},
                                                          "nodetect": {"block_size": 4096, "block_count": 2}}},
        timing={"settle_s": 2.0, "drain_timeout_s": 60})
    for engine, summary in by_engine.items():
        c = summary["sensor"]["counters"]
        sent = summary["replay"]["sent_pkts"]
        print(f"{engine} on 5% of a CPU: sent {sent}, {c}, wire {summary['wire']}")
        assert summary["status"] == "ok", (engine, summary["reason"], summary["warnings"])
        assert sent == 3 * trace.packets
        assert c["dropped_pkts"] > 0, (engine, c)
        unprocessed = c["captured_pkts"] - c["decoded_pkts"] - c["dropped_pkts"]
        assert unprocessed >= 0 and c["captured_pkts"] <= sent, (engine, c)
    rows = {r.params.engine: r.to_row() for r in case_table(load_campaign(out))}
    assert all(r["drop_ratio"] > 0 for r in rows.values())


def test_libpcap_nodetect_engine_exact_through_the_runner(tmp_path: Path, ready: Path) -> None:
    trace = read_info(LOSSLESS, cache_dir=tmp_path / "traceinfo")
    _, by_engine = _campaign(tmp_path, ready, "engines-libpcap",
                             traffic={"traces": [str(LOSSLESS)], "replayers": [2], "rate": [{"pps": 1000}]},
                             sensor={"engine": ["nodetect"], "capture": "libpcap"})
    summary = by_engine["nodetect"]
    c = summary["sensor"]["counters"]
    assert summary["status"] == "ok", (summary["reason"], summary["warnings"])
    assert (c["captured_pkts"], c["decoded_pkts"], c["dropped_pkts"]) == (2 * trace.packets, 2 * trace.packets, 0)
    assert c["decoded_bytes"] == 0  # tcpdump does not report bytes


def test_snort_reports_a_rule_it_rejects_with_its_own_message(tmp_path: Path, ready: Path) -> None:
    """A Suricata-flavoured file given straight to `snort -T`: InputError quoting Snort (file:line);
    through resolve_rules the same file loads what Snort takes and records why the rest did not."""
    snort = Snort()
    rules = tmp_path / "mixed.rules"
    rules.write_text(RULES + 'alert tcp any any -> any any (msg:"zero bytes"; byte_test:0,>,1,0; sid:1000009;)\n')
    with pytest.raises(InputError) as err:
        snort.config_test(SensorOptions(rules=(rules,)), tmp_path / "t1")
    assert f"ERROR: {rules}:2 unknown rule keyword: nocase" in str(err.value)
    (loadable,) = snort.resolve_rules([str(rules)])
    (load,) = rulesets.rule_loads([loadable])
    assert (load.rules, load.loaded, load.method) == (3, 2, "converted")
    assert load.sids == {1000001, 1000002}
    assert any("byte_test" in reason for reason, _ in load.reasons), load.reasons
    snort.config_test(SensorOptions(rules=(loadable,)), tmp_path / "t2")  # the loadable file validates


def test_capture_ceiling_is_above_suricatas(tmp_path: Path, ready: Path) -> None:
    """`idsbench search` (NDR, warm 0.5-1 s trials) on a topspeed case, both engines on 10% of a CPU: the
    nodetect engine stays lossless at a higher load than Suricata (events rules only)."""
    from idsbench.search.campaign import search_campaign

    spec = spec_from_dict({
        "name": "ceiling", "traffic": {"traces": [str(BURST)], "replayers": [1], "rate": ["topspeed"]},
        "sensor": {"engine": ["suricata", "nodetect"], "rules": ["builtin:events"]},
        "setup": {"cpus": [0.1]},
        "search": {"tolerances": [0.0], "initial_trial_s": 0.5, "trial_s": 1, "duration_sum": 2, "final_s": 2,
                   "precision": 0.1}})
    result = search_campaign(spec, tmp_path / "search", state_dir=ready, cache_dir=settings.cache_dir(),
                             name_prefix=TEST_PREFIX)
    ndr: dict[str, float] = {}
    for found in result.results:
        engine = "nodetect" if "-nodetect-" in found.case_id else "suricata"
        (tolerance,) = found.results
        trials = [(round(t.achieved_pps), t.waterfall.loss_ratio if t.waterfall else None) for t in found.trials]
        print(f"{engine}: NDR {tolerance.value_pps} pps (bracket {tolerance.bracket}, verified "
              f"{tolerance.verified}, sender ceiling {found.sender_ceiling_pps}); trials {trials}")
        # the verification reports whether the value held; with MLRsearch's exceed ratio one 2-s sample at
        # the value may lose a little on this shared host without moving the result (docs: Search)
        assert tolerance.value_pps is not None and tolerance.verified is not None, found.notes
        ndr[engine] = tolerance.value_pps
        if engine == "suricata":  # its ceiling is its own, not the sender's: a load above it lost packets
            assert any(t.waterfall is not None and t.waterfall.loss_ratio > 0 for t in found.trials)
    assert ndr["nodetect"] > ndr["suricata"], ndr
