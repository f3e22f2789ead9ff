"""The monitor against a real busy process in a real cgroup and a real network namespace."""

from __future__ import annotations

import csv
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from idsbench.infra import cgroups
from idsbench.infra.cgroups import Cgroup
from idsbench.monitor import Sampler, standard_sources

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0, reason="cgroups and namespaces need root")]

MiB = 2**20
BUSY = ("import os, sys\nfor p in sys.argv[1:]:\n    open(p, 'w').write(str(os.getpid()))\n"
        "x = b'\\x01' * (40 * 2**20)\nwhile True:\n    pass\n")
# inside the namespace: exactly 100 UDP datagrams over lo to a bound socket (no ICMP replies)
UDP_100 = ("import socket\nr = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nr.bind(('127.0.0.1', 0))\n"
           "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
           "for _ in range(100):\n    s.sendto(b'x' * 100, r.getsockname())\n")


@pytest.fixture
def busy_cgroup() -> Iterator[tuple[Cgroup, subprocess.Popen]]:
    cg = cgroups.create(f"ibtest-{uuid.uuid4().hex[:8]}", cpus=0.5, memory_bytes=256 * MiB)
    p: subprocess.Popen | None = None
    try:
        p = subprocess.Popen([sys.executable, "-c", BUSY, *map(str, cg.procs_files)])
        deadline = time.monotonic() + 5
        while cg.memory_bytes() < 40 * MiB:  # joined and allocated
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        yield cg, p
    finally:
        if p is not None and p.poll() is None:
            p.kill()
        if p is not None:
            p.wait(timeout=10)
        cg.remove()


@pytest.fixture
def netns() -> Iterator[tuple[str, int]]:
    """A namespace with lo up and a process living in it: (name, pid)."""
    name = f"ibtest-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    holder: subprocess.Popen | None = None
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        holder = subprocess.Popen(["ip", "netns", "exec", name, "sleep", "60"])
        deadline = time.monotonic() + 30  # until `ip netns exec` has entered the namespace
        while os.readlink(f"/proc/{holder.pid}/ns/net") == os.readlink("/proc/self/ns/net"):
            assert holder.poll() is None and time.monotonic() < deadline, "ip netns exec never entered it"
            time.sleep(0.01)
        yield name, holder.pid
    finally:
        if holder is not None:
            holder.kill()
            holder.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", name], check=False)


def test_sensor_and_netns_columns_track_real_activity(tmp_path: Path, busy_cgroup, netns) -> None:
    cg, _ = busy_cgroup
    ns, ns_pid = netns
    out = tmp_path / "monitor.csv"
    sampler = Sampler(out, 0.2, standard_sources(cg, [("sensor", ns_pid, "lo")]))
    sampler.start()
    try:
        time.sleep(0.9)
        subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", UDP_100], check=True)
        time.sleep(0.9)
    finally:
        sampler.stop()
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert 9 <= len(rows) <= 11 and sampler.missed_ticks == 0 and sampler.errors == []
    cpu = [float(r["sensor_cpu_pct"]) for r in rows[:-1]]  # the final row's interval may be tiny
    assert 40 <= statistics.median(cpu) <= 60, cpu  # cpus=0.5 -> 50 per the 100-per-core scale
    assert all(0 <= c <= 75 for c in cpu), cpu
    assert all(int(r["sensor_mem_bytes"]) >= 40 * MiB for r in rows)
    assert all(int(r["sensor_mem_peak_bytes"]) >= int(r["sensor_mem_bytes"]) for r in rows)
    host = [float(r["host_cpu_pct"]) for r in rows[:-1]]
    assert statistics.median(host) >= 20  # half a core of two is 25 % of the host
    first, last = rows[0], rows[-1]
    assert int(first["sensor_rx_pkts"]) == 0
    assert int(last["sensor_rx_pkts"]) == 100 and int(last["sensor_tx_pkts"]) == 100
    assert int(last["sensor_rx_bytes"]) == 100 * (100 + 28)  # payload + IP/UDP headers (lo counts no L2)
    ts = [float(r["t_unix"]) for r in rows]
    gaps = [b - a for a, b in zip(ts, ts[1:-1])]
    assert all(0.15 <= g <= 0.25 for g in gaps), gaps


def test_the_pmu_counter_runs_under_the_supervisor(tmp_path: Path) -> None:
    """perf stat on a busy process, started and stopped by the sample's supervisor: counts where the host
    shows a PMU (None, "not supported", where it shows none: this VM), and nothing left in the teardown stack."""
    from idsbench.monitor.pmu import PerfStat, pmu_missing
    from idsbench.proc import Supervisor
    from idsbench.teardown import TeardownStack

    busy = subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"])
    try:
        with TeardownStack(state_dir=tmp_path) as td:
            pmu = PerfStat(Supervisor(td), [busy.pid])
            pmu.start()
            assert pmu.child is not None and len(td.resources()) == 1  # registered: teardown would end it
            time.sleep(1.0)  # the window counted
            counts = pmu.stop()
            assert td.resources() == [] and pmu.child.returncode is not None
    finally:
        busy.kill()
        busy.wait()
    assert counts is not None
    if pmu_missing() is None:
        assert counts.instructions and counts.instructions > 10**6 and counts.cycles and counts.cycles > 10**6
    else:
        assert counts.instructions is None and counts.cycles is None
    assert not pmu.out.exists()
