"""Cost of one monitor poll vs the naive psutil approach, with a real busy sensor stand-in.

Run as root: `.venv/bin/python benchmarks/bench_monitor.py [--polls N]`. A cgroup `ibbench-*`
holds a small process tree (a parent, one CPU burner, one sleeper); both approaches poll the
same things: host CPU (total + per CPU), memory/swap, disks, NIC counters, the sensor's CPU and
memory. Prints per-poll wall time (median, p95), CPU time per poll, and the CPU share at a 1 s
interval (cost / interval).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil

from idsbench.infra import cgroups
from idsbench.monitor import standard_sources

TREE = (
    "import os, subprocess, sys, time\n"
    "for p in sys.argv[1:]:\n    open(p, 'w').write(str(os.getpid()))\n"
    "kids = [subprocess.Popen([sys.executable, '-c', 'while True: pass']),\n"
    "        subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)'])]\n"
    "time.sleep(3600)\n"
)


def measure(poll: Callable[[], object], n: int) -> tuple[float, float, float]:
    """(median µs, p95 µs, CPU µs per poll) over n polls after a short warm-up."""
    for _ in range(20):
        poll()
    walls = []
    cpu0 = time.thread_time_ns()
    for _ in range(n):
        t = time.perf_counter_ns()
        poll()
        walls.append(time.perf_counter_ns() - t)
    cpu = (time.thread_time_ns() - cpu0) / n / 1000
    walls.sort()
    return statistics.median(walls) / 1000, walls[int(0.95 * (n - 1))] / 1000, cpu


def idsbench_poll(cg: cgroups.Cgroup, out: Path) -> Callable[[], None]:
    sources = standard_sources(cg, [("sensor", os.getpid(), None)])
    f = open(out, "w", newline="")
    writer = csv.writer(f)
    cols = [c for s in sources for c in s.columns()]
    for s in sources:
        s.start()

    def poll() -> None:  # what the Sampler does per tick: every source, one row, one flush
        values: dict[str, float | int] = {}
        for s in sources:
            values.update(s.sample())
        writer.writerow([f"{time.time():.3f}"] + [values.get(c, "") for c in cols])
        f.flush()

    return poll


def naive_poll(root_pid: int) -> Callable[[], None]:
    root = psutil.Process(root_pid)
    known: dict[int, psutil.Process] = {}

    def poll() -> None:
        tree = [root] + root.children(recursive=True)
        cpu = mem = 0.0
        for p in tree:
            p = known.setdefault(p.pid, p)  # keep Process objects so cpu_percent has a baseline
            try:
                cpu += p.cpu_percent(None)
                mem += p.memory_info().rss
            except psutil.NoSuchProcess:
                known.pop(p.pid, None)
        psutil.cpu_percent(None, percpu=True)
        psutil.cpu_percent(None)
        psutil.virtual_memory()
        psutil.swap_memory()
        psutil.disk_io_counters(perdisk=False)
        psutil.net_io_counters(pernic=True)

    return poll


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--polls", type=int, default=3000)
    args = ap.parse_args()
    cg = cgroups.create(f"ibbench-{uuid.uuid4().hex[:8]}", cpus=0.5)
    proc: subprocess.Popen | None = None
    try:
        proc = subprocess.Popen([sys.executable, "-c", TREE, *map(str, cg.procs_files)])
        deadline = time.monotonic() + 5
        while len(cg.pids()) < 3:
            if time.monotonic() > deadline:
                raise SystemExit("benchmark tree did not start")
            time.sleep(0.05)
        time.sleep(0.3)
        with tempfile.TemporaryDirectory() as tmp:
            rows = [("idsbench monitor (cgroup + /proc, reused fds)",
                     measure(idsbench_poll(cg, Path(tmp) / "m.csv"), args.polls)),
                    ("naive psutil (process tree + host)", measure(naive_poll(proc.pid), args.polls))]
        print(f"sensor tree: {len(cg.pids())} processes in {cg!r}; {os.cpu_count()} CPUs; {args.polls} polls")
        print(f"{'approach':<48} {'median µs':>10} {'p95 µs':>10} {'CPU µs':>10} {'CPU @1s':>9}")
        for name, (med, p95, cpu) in rows:
            print(f"{name:<48} {med:>10.1f} {p95:>10.1f} {cpu:>10.1f} {cpu / 1e6 * 100:>8.4f}%")
        print(f"naive / idsbench (median): {rows[1][1][0] / rows[0][1][0]:.1f}x")
    finally:
        cg.remove()  # kills the whole tree (it lives in the cgroup)
        if proc is not None:
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
