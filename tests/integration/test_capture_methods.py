"""Capture methods as an axis (issue 30 items 1, 2): every method of Suricata (af-packet, af-packet-v2, af-xdp,
pcap), the distribution's 7.0 and the 8.0.6 source build (built with AF_XDP), and Snort's afpacket and pcap DAQs
(the latter with idsbench's patched module: libdaq's own cannot be stopped on a quiet wire) exact on a shared
capture — decoded == N x trace packets at zero drops at every capture drop point —, each sample recording its
method and effective options, on bare metal and in a container (`setup.kinds`; podman with runc here, docker
where podman is absent) at 4X load (`traffic.replayers` = 4: four senders replay the 572-packet trace at once,
distinct flows — what 1X asks of a capture, and more; 1X as well took 32 samples and 172-231 s here): one
campaign per engine family, one sample per (engine, method, kind) — 16 Suricata samples, 4 Snort. The
samples read no idle window (`timing.idle_window_s = 0`): the test counts packets, not CPU. AF_XDP in a container runs with SYS_ADMIN added
(sensors/suricata/capture.py, its container_capabilities: podman 4.3's seccomp profile allows bpf(2) only with
it; without it Suricata 7.0.10 and 8.0.6 exited 1, "af-xdp: Failed to create socket: Operation not permitted"). Not asserted: `drained`
— Suricata's pcap samples show no decoded packet in their live counters until the stop (its worker syncs them
only after a pcap_dispatch that got a packet; every one measured, 1X and 4X, both kinds and versions), so the
drain may give up on them ("undrained", 0 unprocessed: 5-6 of 8 per run); their final counters are exact. And,
under overload (a CPU quota of a tenth of a core and costly rules), the loss waterfall closing for every method:
sent = decoded + every drop point, nothing unaccounted, each method's own drop points recorded.

The Suricata campaign also answers the engine axis (issue 21, formerly its own campaign in
test_suricata_builds.py): the distribution's Suricata and the 8.0.6 source build named with their versions in
the summaries, the results rows and campaign.json (the build's source digest and configure flags), and the
report's "Builds compared".

Needs root, tcpreplay/ip/ethtool/suricata, podman (or docker) with the container image (built once into the
cache, see test_container_setups.py), the Suricata 8.0.6 build (`make suricata-src`; built on first
use otherwise, ~10 min), the Snort build (`make snort`) and ../shared/data/pcaps;
under CI=true / IDSBENCH_STRICT=1 anything missing fails."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from idsbench import settings
from idsbench.accounting import waterfall_of
from idsbench.analysis import case_table
from idsbench.report import write_report
from idsbench.run.campaign import run_campaign
from idsbench.sensors.snort import Snort
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign
from idsbench.store.schema import SampleSummary
from idsbench.traffic.pcap import read_info
from tests.integration.conftest import unavailable

from .conftest import PCAPS, TEST_PREFIX

pytestmark = [pytest.mark.integration, pytest.mark.builds]  # Suricata 8.0.6 or Snort from source: after the builds

TRACE = PCAPS / "nf_evidence02.pcap"  # 572 packets
BUSY = PCAPS / "zeek_modbusBig.pcap"  # 13622 packets, TCP


def _needs() -> None:
    if os.geteuid() != 0:
        unavailable("needs root (namespaces, AF_PACKET, AF_XDP, cgroups)")
    missing = [p for p in ("ip", "ethtool", "tcpreplay", "suricata") if shutil.which(p) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    if not TRACE.is_file() or not BUSY.is_file():
        unavailable(f"shared captures in {PCAPS} are absent (../shared/data/pcaps beside the checkout)")


def _summaries(out: Path) -> list[SampleSummary]:
    return [SampleSummary.model_validate(json.loads(p.read_text())) for p in sorted(out.glob("cases/*/s*/summary.json"))]


KINDS = ["baremetal", "container"]
REPLAYERS = [4]  # 4X load: four senders replay the trace at once (distinct flows)
BASE = {"samples": 1, "timing": {"settle_s": 0.5, "idle_window_s": 0},
        "setup": {"kinds": KINDS},
        "traffic": {"traces": [str(TRACE)], "replayers": REPLAYERS, "rate": [{"pps": 2000}], "sender": "native"}}

Key = tuple[str, str | None, str, int]  # (engine, method, setup kind, replayers)


def _needs_container() -> None:
    if shutil.which("podman") is None and shutil.which("docker") is None:
        unavailable("no container runtime (podman or docker)")


def _exact(spec_doc: dict[str, object], tmp_path: Path, state_dir: Path) -> dict[Key, object]:
    """Run the campaign; per (engine, method, kind, replayers): decoded, dropped, the method recorded (what
    `seen` holds); every sample ok with every capture drop point at zero, its rows keyed alike. Every sample is
    checked before anything fails, so one run shows every combination that is not exact."""
    spec = spec_from_dict(spec_doc)
    out = tmp_path / spec.name
    started = time.monotonic()
    run_campaign(spec, out, state_dir=state_dir, cache_dir=settings.cache_dir(), name_prefix=TEST_PREFIX)
    elapsed = time.monotonic() - started
    seen: dict[Key, object] = {}
    wrong: dict[Key, object] = {}
    for s in _summaries(out):
        key = (s.case.engine, s.case.capture, s.case.setup, s.case.replayers)
        c = s.sensor.counters
        seen[key] = (c.decoded_pkts, c.dropped_pkts, s.sensor.capture)
        # ps_ifdrop is the interface's own count (booked at the NIC, not at the capture); dropped_pkts covers it
        capture_drops = {k: v for k, v in s.sensor.capture_drops.items() if not k.endswith("ps_ifdrop")}
        if s.status != "ok" or s.sensor.capture != s.case.capture or not s.sensor.capture_options \
                or not capture_drops or any(capture_drops.values()):
            wrong[key] = (s.status, s.reason, s.warnings, s.sensor.capture, s.sensor.capture_drops, seen[key])
    print(f"{spec.name}: {len(seen)} samples in {elapsed:.1f} s")
    for key, value in sorted(seen.items(), key=str):
        print(" ", key, value)
    assert not wrong, wrong
    rows = {(r.params.engine, r.params.capture, r.params.setup, r.params.replayers): r.to_row()
            for r in case_table(load_campaign(out))}
    assert set(rows) == set(seen) and all(r["capture"] == key[1] and r["capture_options"]
                                          for key, r in rows.items()), rows
    return seen


SURICATA_METHODS = ["af-packet", "af-packet-v2", "af-xdp", "pcap"]
SURICATAS = ["suricata", "suricata@8.0.6"]  # 7.0.10 and 8 (AF_XDP from libxdp/libbpf in its build)
BUILD = "suricata@8.0.6"


@pytest.fixture(scope="module")
def suricata_campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[Key, object]]:
    """One campaign for the module's Suricata tests: every method, both versions, both kinds, at 4X.
    Its own state dir, checked empty afterwards (as the state_dir fixture does for one test)."""
    _needs()
    _needs_container()
    base = tmp_path_factory.mktemp("capture-suricata")
    state = base / "state"
    state.mkdir()
    seen = _exact({**BASE, "name": "capture-suricata",
                   "sensor": {"engine": SURICATAS, "capture": SURICATA_METHODS, "ground_truth": False,
                              "capture_options": {"pcap": {"buffer-size": 16 * 1024 * 1024}}}}, base, state)
    assert not list(state.glob("*.json")), "the campaign left resources in its state file"
    return base / "capture-suricata", seen


def test_every_suricata_method_is_exact_on_a_shared_capture(suricata_campaign: tuple[Path, dict[Key, object]],
                                                            tmp_path: Path):
    _out, seen = suricata_campaign
    packets = read_info(TRACE, cache_dir=tmp_path / "info").packets
    assert seen == {(e, m, k, n): (n * packets, 0, m) for e in SURICATAS for m in SURICATA_METHODS for k in KINDS
                    for n in REPLAYERS}, seen


def test_installed_and_built_suricata_are_named_and_compared(suricata_campaign: tuple[Path, dict[Key, object]]):
    """The engine axis (the distribution's Suricata and the 8.0.6 build) in the same campaign: each sample and
    results row names its version, campaign.json records what the build was made of, the report compares
    them (per method, kind and load)."""
    out, _seen = suricata_campaign
    versions: dict[str, set[str]] = {}
    for s in _summaries(out):
        versions.setdefault(s.case.engine, set()).add(s.sensor.version or "")
    assert versions[BUILD] == {"8.0.6"} and len(versions["suricata"]) == 1 and versions["suricata"] != {"8.0.6"}, \
        versions
    (installed,) = versions["suricata"]
    rows = {(r.params.engine, r.to_row()["engine_version"]) for r in case_table(load_campaign(out))}
    assert rows == {(BUILD, "8.0.6"), ("suricata", installed)}, rows
    doc = json.loads((out / "campaign.json").read_text())
    built = doc["environment"]["engines"][BUILD]
    assert built["source_sha256"] == "895234a17c5f6bea0657f9b23e7efbc287682253869efa1a5c3f422c99ae831a"
    assert "--enable-profiling-rules" in built["configure_flags"] and built["build_id"]
    html = write_report(out).read_text()
    assert "Builds compared" in html and f"{BUILD} (8.0.6)" in html and f"suricata ({installed})" in html


def test_snorts_afpacket_and_pcap_daqs_are_exact(tmp_path: Path, state_dir: Path):
    _needs()
    _needs_container()
    if not Snort().available():
        unavailable("Snort 3 is not built (run `make snort`)")
    # pcap runs idsbench's build of libdaq's module (its interrupt breaks libpcap's poll): stopped on a quiet
    # wire with its exit statistics, where libdaq 3.0.25's own was SIGKILLed after the 60-s stop timeout
    methods = ["afpacket", "pcap"]
    seen = _exact({**BASE, "name": "capture-snort",
                   "sensor": {"engine": ["snort"], "capture": methods, "ground_truth": False}},
                  tmp_path, state_dir)
    packets = read_info(TRACE, cache_dir=tmp_path / "info").packets
    assert seen == {("snort", m, k, n): (n * packets, 0, m) for m in methods for k in KINDS for n in REPLAYERS}, seen


def test_overloaded_waterfall_closes_for_every_method(tmp_path: Path, state_dir: Path, costly_rules: Path):
    _needs()
    spec = spec_from_dict({
        "name": "capture-overload", "samples": 1, "timing": {"settle_s": 0.5, "drain_timeout_s": 10},
        "traffic": {"traces": [str(BUSY)], "rate": [{"pps": 30000}], "sender": "native"},
        "sensor": {"capture": ["af-packet-v2", "af-xdp", "pcap"], "rules": [str(costly_rules)],
                   "capture_options": {"af-packet-v2": {"ring-size": 512}, "pcap": {"buffer-size": 262144}},
                   "ground_truth": False},
        "setup": {"cpus": [0.1]},
    })
    out = tmp_path / "c"
    run_campaign(spec, out, state_dir=state_dir, cache_dir=settings.cache_dir(), name_prefix=TEST_PREFIX)
    figures = {}
    for s in _summaries(out):
        assert s.replay is not None and s.wire is not None, (s.case.capture, s.reason)
        w = waterfall_of(s.replay.sent_pkts, s.wire, s.sensor.counters, s.invisible)
        figures[s.case.capture] = w.model_dump()
        print(s.case.capture, w.model_dump(), s.sensor.capture_drops)
        assert w.unaccounted_pkts == 0, (s.case.capture, w, s.wire)
        assert w.lost_pkts > 0, (s.case.capture, w)  # it was overloaded
        assert (w.decoded_pkts + w.unprocessed_pkts + w.lost_pkts) == w.sent, (s.case.capture, w)
        capture_points = sum(v for k, v in s.sensor.capture_drops.items() if not k.endswith("ps_ifdrop"))
        assert capture_points == w.loss_capture_pkts, (s.case.capture, s.sensor.capture_drops, w)
    assert set(figures) == {"af-packet-v2", "af-xdp", "pcap"}
