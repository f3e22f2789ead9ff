"""Benchmark the synthesizer: packets/s and MB/s written, per profile.

    .venv/bin/python benchmarks/bench_synth.py [--packets 300000] [--profiles mixed,small-packets,...]

Each profile generates --packets packets (complete flows, checksums filled, file written) into a
temp dir; the time includes writing the pcap. Target: >= 200,000 packets/s. The CPU time per
packet (process time: user + system) is printed too: on a shared machine it is steadier than
the wall-clock rate.

Before the timed runs one untimed run of the first profile warms the process up (imports, numpy
scratch buffers, the heap growing to hold a trace's frames): without it the first profile measured
pays ~1-2 us/packet of one-time cost that a long-lived process does not. `--no-warmup` shows the
cold figure (what a single `idsbench trace synth` invocation pays).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from idsbench.traffic.synth import PROFILES, synthesize


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=300_000)
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--no-warmup", action="store_true", help="time the first profile cold")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="idsbench-synth-"))
    worst = float("inf")
    try:
        if not args.no_warmup:
            first = args.profiles.split(",")[0]
            synthesize(first, workdir / "warmup.pcap", packets=args.packets, seed=2)
            (workdir / "warmup.pcap").unlink()
        for name in args.profiles.split(","):
            t, cpu = time.perf_counter(), time.process_time()
            r = synthesize(name, workdir / f"{name}.pcap", packets=args.packets, seed=1)
            dt, cpu = time.perf_counter() - t, time.process_time() - cpu
            worst = min(worst, r.packets / dt)
            print(f"{name:<14} {r.packets:>9,} packets {r.bytes / 1e6:8.1f} MB {r.flows:>7,} flows  "
                  f"{dt:6.2f} s  {r.packets / dt:>10,.0f} packets/s  {r.bytes / dt / 1e6:7.1f} MB/s  "
                  f"cpu {cpu / r.packets * 1e6:5.2f} us/packet")
            (workdir / f"{name}.pcap").unlink()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"slowest profile: {worst:,.0f} packets/s (target >= 200,000)")
    return 0 if worst >= 200_000 else 1


if __name__ == "__main__":
    sys.exit(main())
