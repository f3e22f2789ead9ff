"""The nodetect engine's readers for real: ibcapture (gcc-built) and tcpdump on a veth between two namespaces
this test creates, fed by tcpreplay; exact counts when lossless, closed accounting under drops.

Needs root, ip, ethtool, tcpreplay, tcpdump, gcc and ../shared/data/pcaps. Everything created
(namespaces, veth, the cgroup, processes) is removed in finally blocks; processes are stopped by PID.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from idsbench import native, proc
from idsbench.infra import cgroups
from idsbench.proc import Child, Supervisor
from idsbench.sensors.nodetect.config import (
    TCPDUMP_BUFFER_TIMEOUT_S,
    RingOptions,
    ibcapture_argv,
    ready_interface,
    tcpdump_argv,
)
from idsbench.sensors.nodetect.stats import (
    CaptureCounters,
    CaptureLog,
    capture_errors,
    parse_tcpdump_reports,
    read_ibcapture_stats,
)
from idsbench.traffic.pcap import read_info
from tests.integration.conftest import unavailable

from .conftest import PCAPS, TEST_PREFIX
from .veth_pair import Wire, veth_pair

pytestmark = pytest.mark.integration

TOOLS = ("ip", "ethtool", "tcpreplay", "tcpdump", "gcc")
LOSSLESS_PCAP = PCAPS / "nf_evidence02.pcap"  # 572 packets
BURST_PCAP = PCAPS / "zeek_modbusBig.pcap"  # 13622 small packets


@pytest.fixture
def wire(state_dir: Path) -> Iterator[Wire]:
    """(After state_dir, so state_dir's leftover check runs once the namespaces are gone.)"""
    if os.geteuid() != 0:
        unavailable("needs root (network namespaces, AF_PACKET, cgroups)")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    for pcap in (LOSSLESS_PCAP, BURST_PCAP):
        if not pcap.is_file():
            unavailable(f"shared capture {pcap} is absent (../shared/data/pcaps beside the checkout)")
    with veth_pair(f"{TEST_PREFIX}cap") as w:
        yield w


@dataclass(frozen=True)
class Engine:
    method: str
    child: Child
    stderr: Path
    stats: Path


def _start(sup: Supervisor, method: str, wire: Wire, run_dir: Path, *, threads: int = 1,
           ring: RingOptions | None = None, buffer_kib: int | None = None,
           cgroup: cgroups.Cgroup | None = None) -> Engine:
    run_dir.mkdir(parents=True, exist_ok=True)
    stderr, stats = run_dir / "stderr.txt", run_dir / "stats.json"
    if method == "afpacket":
        argv = ibcapture_argv(native.program("ibcapture"), wire.sensor_if, stats, interval_s=0.5,
                              threads=threads, ring=ring or RingOptions())
    else:
        argv = tcpdump_argv(wire.sensor_if, buffer_kib=buffer_kib)
    child = sup.start(argv, name=method, stdout=run_dir / "stdout.txt", stderr=stderr, netns=wire.sensor_ns,
                      cgroup_procs=cgroup.procs_files if cgroup else ())
    deadline = time.monotonic() + 20
    while ready_interface(method, stderr.read_text()) != wire.sensor_if:
        assert child.poll() is None, f"{method} exited: {stderr.read_text()}"
        assert time.monotonic() < deadline, f"{method} not ready after 20 s: {stderr.read_text()}"
        time.sleep(0.05)
    return Engine(method, child, stderr, stats)


def _replay(wire: Wire, pcap: Path, *extra: str) -> int:
    done = proc.run(["tcpreplay", "-i", wire.sender_if, *extra, str(pcap)], netns=wire.sender_ns, timeout=120)
    sent = re.search(r"Actual: (\d+) packets", done.stdout)
    assert sent, done.stdout + done.stderr
    return int(sent.group(1))


def _stop(sup: Supervisor, engine: Engine) -> CaptureLog:
    rc = sup.stop(engine.child, timeout=20)
    text = engine.stderr.read_text()
    assert rc == 0, f"{engine.method} exit {rc}: {text}"
    assert capture_errors(text) == []
    return read_ibcapture_stats(engine.stats) if engine.method == "afpacket" else parse_tcpdump_reports(text)


def _periodic(engine: Engine) -> list[CaptureCounters]:
    log = read_ibcapture_stats(engine.stats) if engine.method == "afpacket" else parse_tcpdump_reports(
        engine.stderr.read_text())
    return [p.counters for p in log.points if not p.final]


def _wait_until_read(engine: Engine, done: Callable[[CaptureCounters], bool], *, settled: bool = False,
                     timeout_s: float = 60) -> CaptureCounters:
    """Poll the engine's periodic reports (ibcapture writes one every 0.5 s; tcpdump on SIGUSR1, as
    the adapter's time series) until the newest satisfies `done` (and, with `settled`, equals the
    one before: nothing arrives any more)."""
    deadline = time.monotonic() + timeout_s
    previous: CaptureCounters | None = None
    while True:
        before = len(_periodic(engine))
        if engine.method == "libpcap":
            os.kill(engine.child.pid, signal.SIGUSR1)
        while len(points := _periodic(engine)) == before:  # the next report
            assert engine.child.poll() is None, f"{engine.method} exited: {engine.stderr.read_text()}"
            assert time.monotonic() < deadline, f"no new report from {engine.method} within {timeout_s} s"
            time.sleep(0.05)
        newest = points[-1]
        if done(newest) and (not settled or newest == previous):
            return newest
        assert time.monotonic() < deadline, f"{engine.method} did not get there within {timeout_s} s: {newest}"
        previous = newest
        time.sleep(TCPDUMP_BUFFER_TIMEOUT_S if engine.method == "libpcap" else 0.05)


def _final(log: CaptureLog) -> CaptureCounters:
    assert log.final is not None, log
    return log.final.counters


@pytest.mark.parametrize(("method", "threads"), [("afpacket", 1), ("afpacket", 2), ("libpcap", 1)])
def test_lossless_counts_are_exact(wire: Wire, sup: Supervisor, tmp_path: Path, method: str,
                                   threads: int) -> None:
    trace = read_info(LOSSLESS_PCAP, cache_dir=tmp_path / "cache")
    engine = _start(sup, method, wire, tmp_path / "run", threads=threads)
    sent = _replay(wire, LOSSLESS_PCAP, "--pps", "2000")
    assert sent == trace.packets == 572
    # tcpdump does not drain at stop: wait until a periodic report shows every packet read
    _wait_until_read(engine, lambda c: c.captured_pkts == sent and c.unread_pkts == 0)
    log = _stop(sup, engine)
    final = _final(log)
    assert (final.captured_pkts, final.decoded_pkts, final.dropped_pkts) == (sent, sent, 0)
    assert final.unread_pkts == 0
    periodic = [p for p in log.points if not p.final]
    assert periodic and periodic[-1].counters.decoded_pkts == sent
    if method == "afpacket":
        assert final.decoded_bytes == trace.bytes
        assert final.truncated_pkts == 0 and final.kernel_freezes == 0
        assert [p.uptime_s for p in log.points] == sorted(p.uptime_s or 0.0 for p in log.points)


@pytest.mark.parametrize("method", ["afpacket", "libpcap"])
def test_cpu_limited_reader_drops_and_the_accounting_closes(wire: Wire, sup: Supervisor, tmp_path: Path,
                                                             method: str) -> None:
    cg = cgroups.create(f"{TEST_PREFIX}cap-{uuid.uuid4().hex[:6]}", cpus=0.05)
    try:
        # Both on 5% of a CPU. tcpdump (per-packet callback and write) then falls behind a topspeed
        # burst with libpcap's ring at 256 KiB. ibcapture only counts: measured, on 5% of a CPU it kept
        # up with this burst through a 256 KiB ring, so it gets a tiny ring (2 x 4 KiB, ~60 packets).
        engine = _start(sup, method, wire, tmp_path / "run", cgroup=cg,
                        ring=RingOptions(block_size=4096, block_count=2), buffer_kib=256)
        sent = _replay(wire, BURST_PCAP, "--topspeed", "--loop", "3")
        # the throttled reader empties its ring (ibcapture also drains at stop): nothing left unread
        # and nothing arriving any more
        _wait_until_read(engine, lambda c: c.unread_pkts == 0 and c.captured_pkts > 0, settled=True, timeout_s=120)
        final = _final(_stop(sup, engine))
    finally:
        cg.remove()
    print(f"{method}: sent {sent}, {final}")
    assert sent == 3 * 13622
    assert final.dropped_pkts > 0, final
    # the kernel counts every packet it offers the socket, dropped or not; drops before the
    # socket (a full veth backlog at topspeed) are not in it, hence <=
    assert 0 < final.captured_pkts <= sent
    assert final.captured_pkts == final.decoded_pkts + final.dropped_pkts, final
