"""What a duet side's isolation costs the host beyond its cgroup, and what no side is charged for.

- `thread_cpu_ns(pids)`: the CPU time of a setup's host-side processes outside the sensor's cgroup (a
  container runtime's conmon and attached client: `setups.base.IsolationProcesses`), per thread from
  /proc/PID/task/TID/schedstat (nanoseconds; /proc/PID/stat's utime+stime would be 10-ms ticks, as coarse
  as the effect measured). `isolation_cpu_s(before, after)`: their CPU over a span — a thread seen only at
  the end started inside it and counts whole; one gone at the end is left out (its last time is unknown).
- `softirq_s()`: each CPU's softirq time from /proc/stat (USER_HZ ticks). The mirror's softirq (the hub,
  both copies' veth transmits, macvtap's rx handler, both sensors' AF_PACKET copies) runs on the sending
  CPU inside whatever task it interrupts; with CONFIG_IRQ_TIME_ACCOUNTING off (this kernel) that task is
  charged the time, and /proc/stat's softirq column is a tick sample: a tick that lands in softirq
  context counts whole there. So the column is what the duet cannot attribute to a side, measured
  coarsely (10 ms a tick) — the figure reported beside the ratio as `duet_unattributed_us_per_pkt`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

USER_HZ = os.sysconf("SC_CLK_TCK")
SOFTIRQ_COLUMN = 7  # cpuN user nice system idle iowait irq softirq steal …


def parse_softirq(stat_text: str) -> tuple[float, ...]:
    """Per CPU (cpu0, cpu1 …), the softirq column of a /proc/stat text, in seconds."""
    out = []
    for line in stat_text.splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            fields = line.split()
            out.append(int(fields[SOFTIRQ_COLUMN]) / USER_HZ)
    return tuple(out)


def softirq_s(stat: Path = Path("/proc/stat")) -> tuple[float, ...]:
    """Each CPU's softirq time so far (seconds; () when /proc/stat cannot be read)."""
    try:
        return parse_softirq(stat.read_text())
    except OSError:
        return ()


def softirq_delta(before: Sequence[float], after: Sequence[float]) -> tuple[float, ...] | None:
    """Per CPU, the softirq seconds between two readings (None when either is missing)."""
    if not before or len(before) != len(after):
        return None
    return tuple(round(max(0.0, b - a), 6) for a, b in zip(before, after))


def thread_cpu_ns(pids: Sequence[int], proc: Path = Path("/proc")) -> dict[int, int]:
    """CPU nanoseconds of every thread of `pids` (by thread id); processes that are gone are left out."""
    out: dict[int, int] = {}
    for pid in dict.fromkeys(pids):
        try:
            tasks = list((proc / str(pid) / "task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                out[int(task.name)] = int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return out


def isolation_cpu_s(before: dict[int, int], after: dict[int, int]) -> float:
    """CPU seconds the threads used between two `thread_cpu_ns` readings."""
    return sum(ns - before.get(tid, 0) for tid, ns in after.items() if ns >= before.get(tid, 0)) / 1e9
