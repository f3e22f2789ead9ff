"""Real Suricata on AF_PACKET in a namespace, fed by real tcpreplay from a second namespace.

Needs root, `ip`, `ethtool`, `suricata`, `tcpreplay`. Everything is created by the fixture and
removed in `finally`; processes are stopped by PID (never by name).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from idsbench.sensors.suricata import Suricata, SuricataRun
from idsbench.sensors.suricata.eve import read_records
from tests.paths import PCAPS

from .conftest import TEST_PREFIX
from .veth_pair import MTU, Wire, veth_pair

pytestmark = pytest.mark.integration


TOOLS = ("ip", "ethtool", "suricata", "tcpreplay")


def _need_env() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, AF_PACKET)")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing programs: {', '.join(missing)}")


@pytest.fixture()
def wire() -> Iterator[Wire]:
    _need_env()
    with veth_pair(f"{TEST_PREFIX}tst") as w:
        yield w


def pcap_frames(path: Path) -> list[int]:
    """Frame lengths of a classic (microsecond or nanosecond) little/big-endian pcap."""
    data = path.read_bytes()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, pos = [], 24
    while pos + 16 <= len(data):
        _, _, incl, orig = struct.unpack(endian + "IIII", data[pos:pos + 16])
        assert incl == orig, f"{path} has truncated frames"
        out.append(incl)
        pos += 16 + incl
    return out


def write_pcap(path: Path, frames: list[bytes]) -> None:
    with path.open("wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1_700_000_000 + i, 0, len(fr), len(fr)) + fr)


def _udp_frame(ip_len: int, vlan: int | None = None, src: int = 1) -> bytes:
    def csum(b: bytes) -> int:
        s = sum(struct.unpack(f"!{len(b) // 2}H", b))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return ~s & 0xFFFF

    payload = bytes(range(256)) * ((ip_len - 28) // 256 + 1)
    payload = payload[: ip_len - 28]
    udp = struct.pack("!HHHH", 40000 + src, 5555, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, src, 0, 64, 17, 0,
                     bytes([10, 0, 0, src]), bytes([10, 0, 1, 1]))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    eth = bytes.fromhex("020000000002" "020000000001")
    tag = struct.pack("!HH", 0x8100, vlan) if vlan is not None else b""
    return eth + tag + struct.pack("!H", 0x0800) + ip + udp


def _sensor_session(w: Wire, run: SuricataRun, pcap: Path, pps: int) -> tuple[str, int]:
    """Start Suricata, wait for readiness, replay, SIGTERM; return tcpreplay's output and rc."""
    with run.console_path.open("w") as console:
        child = subprocess.Popen(["ip", "netns", "exec", w.sensor_ns, *run.argv], stdout=console,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ready_s = run.wait_ready(child.poll, timeout_s=60)
        assert 0 <= ready_s < 60
        rep = subprocess.run(["ip", "netns", "exec", w.sender_ns, "tcpreplay", "-i", w.sender_if,
                              "--pps", str(pps), str(pcap)], capture_output=True, text=True, timeout=120)
        # the last frames leave the ring: until Suricata's stats (every stats interval) count every
        # packet tcpreplay sent (at most 30 s; the counts themselves are the test's assertions)
        sent = re.search(r"Actual: (\d+) packets", rep.stdout)
        deadline = time.monotonic() + 30
        while sent and child.poll() is None and time.monotonic() < deadline:
            point = run.live_counters()
            if point is not None and max(point.counters.captured_pkts, point.counters.decoded_pkts) >= int(sent.group(1)):
                break
            time.sleep(0.1)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGTERM)
        try:
            rc = child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            rc = child.wait(timeout=10)
    return rep.stdout + rep.stderr, rc


def test_replayed_pcap_is_counted_exactly(wire: Wire, tmp_path: Path) -> None:
    pcap = PCAPS / "nf_evidence02.pcap"
    if not pcap.exists():
        pytest.skip(f"{pcap} is absent")
    frames = pcap_frames(pcap)
    sur = Suricata()
    run = sur.prepare_config(tmp_path / "run", wire.sensor_if, sur.resolve_rules(["builtin:events"]), {},
                      stats_interval_s=1, mtu=MTU)
    out, rc = _sensor_session(wire, run, pcap, pps=2000)
    assert f"Actual: {len(frames)} packets" in out, out
    assert rc == 0, run.errors()
    final = run.final_counters()
    assert final.decoded_pkts == final.captured_pkts == len(frames)
    assert final.dropped_pkts == 0
    assert final.decoded_bytes == sum(frames)
    assert final.flows > 0 and final.invalid_pkts == 0
    # Suricata 7 writes one last stats record at shutdown: eve alone already has the totals.
    series = run.counter_series()
    assert len(series) >= 2
    assert series[-1].counters.captured_pkts == len(frames)
    assert [p.t_unix for p in series] == sorted(p.t_unix for p in series)
    assert sum(run.alerts_by_signature().values()) == final.alerts
    assert not [e for e in run.errors() if e.startswith("Error")]


def test_jumbo_and_vlan_frames_arrive_whole(wire: Wire, tmp_path: Path) -> None:
    frames = [
        _udp_frame(MTU),                    # 9014-byte untagged jumbo
        _udp_frame(1000, vlan=100, src=2),  # small tagged frame
        _udp_frame(MTU, vlan=200, src=3),   # 9018-byte tagged jumbo
        _udp_frame(60, src=4),
    ]
    pcap = tmp_path / "jumbo-vlan.pcap"
    write_pcap(pcap, frames)
    sur = Suricata()
    run = sur.prepare_config(tmp_path / "run", wire.sensor_if, [], {}, stats_interval_s=1, mtu=MTU)
    out, rc = _sensor_session(wire, run, pcap, pps=100)
    assert f"Actual: {len(frames)} packets" in out and "Failed packets:            0" in out, out
    assert rc == 0
    final = run.final_counters()
    assert final.decoded_pkts == final.captured_pkts == len(frames)
    # Measured: the kernel moves an 802.1Q tag into packet metadata on receive; AF_PACKET hands
    # it to Suricata separately, so decoder.vlan counts the tag but decoder.bytes lacks its 4 bytes.
    tagged = 2
    assert final.decoded_bytes == sum(len(f) for f in frames) - 4 * tagged
    assert final.invalid_pkts == 0 and final.decoder_events == 0
    stats, scan = read_records(run.eve_path, "stats")
    assert scan.corrupt_lines == 0
    dec = stats[-1]["stats"]["decoder"]
    assert dec["vlan"] == tagged
    assert dec["max_pkt_size"] == MTU + 14  # both jumbos whole (the tagged one minus its tag)
    assert dec["udp"] == len(frames)
    assert dec["event"]["afpacket"]["trunc_pkt"] == 0
