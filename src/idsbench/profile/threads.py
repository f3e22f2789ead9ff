"""Per-thread CPU time of a set of processes from /proc (what each sensor thread did in a window)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")

# Suricata names its threads by role (W#01-eth0 worker, RX/RR receive, FM/FR flow manager/recycler,
# CW/CS counters/stats wakeup, US unix socket); the rest is management.
WORKER_PREFIXES = ("W#", "RX#", "RR#", "TX#", "snort", "ibcapture")


def role(thread: str) -> str:
    return "worker" if thread.startswith(WORKER_PREFIXES) else "management"


@dataclass(frozen=True)
class ThreadTime:
    tid: int
    name: str
    cpu_ticks: int      # utime + stime (guest time included: the kernel counts it as user time)
    guest_ticks: int = 0  # of which in guest mode (a KVM vCPU), /proc field 43
    pid: int = 0


@dataclass(frozen=True)
class ProcessTime:
    pid: int
    name: str
    cpu_ticks: int      # the whole process, threads that exited included


def _fields(stat: str) -> list[str]:
    """The fields after `(comm)`: [0] is field 3 (state), so field n is [n - 3]."""
    return stat[stat.rindex(")") + 2:].split()


def snapshot(pids: Sequence[int], proc: Path = Path("/proc")) -> dict[int, ThreadTime]:
    """utime+stime of every thread of `pids` now (threads that vanished are skipped)."""
    out: dict[int, ThreadTime] = {}
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir(proc / str(pid) / "task")]
        except OSError:
            continue
        for tid in tids:
            base = proc / str(pid) / "task" / str(tid)
            try:
                name = (base / "comm").read_text().strip()
                stat = (base / "stat").read_text()
            except OSError:
                continue
            fields = _fields(stat)
            guest = int(fields[40]) if len(fields) > 40 else 0
            out[tid] = ThreadTime(tid, name, int(fields[11]) + int(fields[12]), guest, pid)
    return out


def processes(pids: Sequence[int], proc: Path = Path("/proc")) -> dict[int, ProcessTime]:
    """utime+stime of each process now (threads that exited included; processes gone are skipped)."""
    out: dict[int, ProcessTime] = {}
    for pid in pids:
        try:
            stat = (proc / str(pid) / "stat").read_text()
        except OSError:
            continue
        fields = _fields(stat)
        out[pid] = ProcessTime(pid, stat[stat.index("(") + 1:stat.rindex(")")], int(fields[11]) + int(fields[12]))
    return out


@dataclass(frozen=True)
class ThreadCpu:
    name: str
    role: str
    cpu_s: float
    cpu_pct: float  # of one core over the window


def thread_cpu(before: dict[int, ThreadTime], after: dict[int, ThreadTime], window_s: float,
               role_of: Callable[[str], str] = role) -> list[ThreadCpu]:
    """CPU each thread used between two snapshots, busiest first (threads born inside count from 0)."""
    rows = []
    for tid, end in after.items():
        start = before.get(tid)
        ticks = end.cpu_ticks - (start.cpu_ticks if start else 0)
        seconds = ticks / CLK_TCK
        rows.append(ThreadCpu(end.name, role_of(end.name), round(seconds, 3),
                              round(100.0 * seconds / window_s, 2) if window_s > 0 else 0.0))
    return sorted(rows, key=lambda r: (-r.cpu_s, r.name))
