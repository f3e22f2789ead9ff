"""Every benchmark in one run, to its end (`make bench`; `make bench-quick` for each one's quickest mode).

    .venv/bin/python benchmarks/run_all.py [--quick] [--only NAME[,NAME…]] [--list]

Each benchmark runs as its own process with its output streamed as it comes (its figures printed beside
their references, its misses listed at its end); one that misses a target, fails or overruns its time
limit is recorded and the next one runs. At the end: per benchmark its time and outcome (met, MISSED with
the misses, FAILED with its exit status, TIMED OUT), the total time; the exit status is 1 when any
benchmark did not meet its targets.

The times in the table below are what each took on this project's 2-core VM (bench_duet_search, bench_gate,
bench_host_speed and bench_setup_duet: their parts' first runs of 2026-12-04, summed); a
benchmark gets LIMIT_FACTOR times that before it is interrupted (SIGINT, so its teardown runs; SIGKILL
LIMIT_GRACE_S later), so one hung benchmark cannot stop the rest.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIMIT_FACTOR = 3.0
LIMIT_GRACE_S = 120.0


@dataclass(frozen=True)
class Bench:
    name: str                  # benchmarks/<name>.py
    full: tuple[str, ...]      # `make bench`: the arguments its targets were set with
    quick: tuple[str, ...]     # `make bench-quick`: its quickest mode (fewer samples, smaller inputs)
    full_min: float            # minutes it took here (make bench)
    quick_min: float           # minutes it took here (make bench-quick)


BENCHES = (
    Bench("bench_cpu_per_packet", (), ("--samples", "3", "--seconds", "4"), 5, 2),
    Bench("bench_duet", (), ("--reps", "1", "--diff-reps", "1", "--samples", "4", "--mirror-pkts", "100000"), 60, 15),
    Bench("bench_duet_search", (), ("--part", "aa", "--searches", "2"), 40, 12),
    Bench("bench_eve", (), ("--size-mb", "100"), 3, 1),
    Bench("bench_gate", (), ("--part", "cost", "--sizes", "4500", "--traces", "tcpreplay_test.pcap"), 60, 12),
    Bench("bench_host_speed", (), ("--samples", "4"), 10, 4),
    Bench("bench_monitor", (), ("--polls", "500"), 1, 0.5),
    Bench("bench_noise_probe", (), ("--seconds", "30"), 3, 1),
    Bench("bench_overhead", (), ("--samples", "3"), 4, 2),
    Bench("bench_remote", (), ("--samples", "3"), 15, 12),
    Bench("bench_rule_cost", (), ("--samples", "2", "--loops", "2"), 15, 6),
    Bench("bench_rule_ranking", (), ("--samples", "2"), 5, 3),
    Bench("bench_search", (), ("--quick",), 20, 4),
    Bench("bench_setup_duet", (), ("--part", "capture"), 50, 5),
    Bench("bench_sender", (), ("--quick",), 6, 2),
    Bench("bench_synth", (), ("--sizes", "100000,400000", "--runs", "1"), 4, 1),
    Bench("bench_trace_info", (), ("--sizes-mb", "100,300", "--runs", "1"), 6, 2),
    Bench("bench_trend", (), (), 1, 1),
)


@dataclass
class Outcome:
    bench: Bench
    status: str          # met, MISSED, FAILED (exit N), TIMED OUT
    seconds: float
    misses: list[str]


def run_one(bench: Bench, quick: bool) -> Outcome:
    """Run one benchmark, its output streamed; what it missed is taken from its closing lines
    (common.finish prints them under "MISSED targets:")."""
    args = bench.quick if quick else bench.full
    limit_s = 60 * LIMIT_FACTOR * (bench.quick_min if quick else bench.full_min)
    print(f"\n== {bench.name} {' '.join(args)} (expected ~{bench.quick_min if quick else bench.full_min:g} min)",
          flush=True)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-u", str(HERE / f"{bench.name}.py"), *args], cwd=HERE.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    timed_out = threading.Event()

    def interrupt() -> None:  # our own child, by its PID: SIGINT lets its teardown run
        timed_out.set()
        proc.send_signal(signal.SIGINT)
        threading.Timer(LIMIT_GRACE_S, lambda: proc.poll() is None and proc.kill()).start()

    timer = threading.Timer(limit_s, interrupt)
    timer.start()
    misses: list[str] = []
    in_misses = False
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        stripped = line.strip()
        if stripped.startswith("MISSED targets"):
            in_misses = True
        elif in_misses and stripped:
            misses.append(stripped)
    code = proc.wait()
    timer.cancel()
    seconds = time.monotonic() - started
    if timed_out.is_set():
        status = f"TIMED OUT after {limit_s / 60:.0f} min"
    elif code == 0:
        status = "met"
    elif code == 1 and misses:
        status = "MISSED"
    else:
        status = f"FAILED (exit {code})"
    return Outcome(bench, status, seconds, misses)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="each benchmark's quickest mode")
    ap.add_argument("--only", help="comma-separated benchmark names (default: all)")
    ap.add_argument("--list", action="store_true", help="list the benchmarks, their arguments and times")
    args = ap.parse_args()
    chosen = [b for b in BENCHES if not args.only or b.name in args.only.split(",")]
    on_disk = {p.stem for p in HERE.glob("bench_*.py")}
    unlisted = sorted(on_disk - {b.name for b in BENCHES})
    if unlisted:  # a new benchmark must be given its arguments and time here
        print(f"run_all: benchmarks not in BENCHES: {', '.join(unlisted)} (add them to {__file__})", file=sys.stderr)
        return 2
    expected = sum(b.quick_min if args.quick else b.full_min for b in chosen)
    if args.list:
        for b in chosen:
            print(f"{b.name:<22} full ~{b.full_min:g} min {' '.join(b.full)}; quick ~{b.quick_min:g} min "
                  f"{' '.join(b.quick)}")
        print(f"in all: ~{expected:g} min")
        return 0
    if os.geteuid() != 0:
        print("run_all: most benchmarks need root (namespaces, cgroups): run as root", file=sys.stderr)
        return 2
    print(f"{len(chosen)} benchmarks, {'quick' if args.quick else 'full'} mode, expected ~{expected:g} min")
    started = time.monotonic()
    outcomes = [run_one(b, args.quick) for b in chosen]
    total = time.monotonic() - started
    print(f"\n== {len(outcomes)} benchmarks in {total / 60:.1f} min (expected ~{expected:g} min)")
    for o in outcomes:
        print(f"  {o.bench.name:<22} {o.seconds / 60:6.1f} min  {o.status}")
        for m in o.misses:
            print(f"      {m}")
    return 0 if all(o.status == "met" for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
