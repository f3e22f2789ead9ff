"""A host-speed witness for benchmarks: how fast the sensor's CPU ran during each sample.

A child process pinned to one CPU runs a fixed piece of work (probe/noise.py's loop, ~4 ms) every PERIOD_S
and logs when it ended and the CPU time it took (its thread's clock: like the sensor's cgroup CPU time, it
counts neither waiting for the CPU nor, with steal accounting, the hypervisor's preemption). A sample's
witness figure is the mean CPU time of the pieces that ended inside its processing span: when the sensor's
CPU per packet moves with it, the host's speed moved, not the sensor. Costs the sensor's CPU ~4%.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

PERIOD_S = 0.1
_CHILD = r"""
import os, sys, time
from idsbench.probe.noise import _spin, calibrate
os.sched_setaffinity(0, {int(sys.argv[1])})
n = calibrate(time.thread_time) * 2 // 5
with open(sys.argv[3], "w", buffering=1) as fh:
    while True:
        t0 = time.thread_time()
        _spin(n)
        fh.write(f"{time.time():.4f} {time.thread_time() - t0:.6f}\n")
        time.sleep(float(sys.argv[2]))
"""


class Witness:
    """Runs the loop on `cpu` while in a `with` block; `pieces` reads its log as (end unix, CPU s)."""

    def __init__(self, cpu: int, log: Path) -> None:
        self.cpu, self.log = cpu, log
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Witness:
        self.proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(self.cpu), str(PERIOD_S), str(self.log)])
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.proc is not None:  # our own child, by its handle
            self.proc.terminate()
            self.proc.wait(10)

    def pieces(self) -> list[tuple[float, float]]:
        out = []
        for line in self.log.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                out.append((float(parts[0]), float(parts[1])))
        return out


def span_mean(pieces: Sequence[tuple[float, float]], start: float, end: float) -> float | None:
    """The mean CPU time of the pieces that ended within [start, end]."""
    inside = [cpu_s for at, cpu_s in pieces if start <= at <= end]
    return statistics.fmean(inside) if inside else None


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    if len(xs) < 3 or len(xs) != len(ys):
        return math.nan
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return math.nan


def default_cpu() -> int:
    """The CPU a one-CPU sensor is pinned to on this runner: the last one (the sender keeps the first)."""
    return max(os.sched_getaffinity(0))
