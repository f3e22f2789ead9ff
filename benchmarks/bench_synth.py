"""`idsbench trace synth` end to end: the CLI as a user runs it, per profile, at two sizes.

    .venv/bin/python benchmarks/bench_synth.py [--sizes 200000,800000] [--profiles mixed,web,...] [--runs 2]

Each run is `idsbench trace synth --profile P --packets N --out FILE` in its own process, measured
by GNU time: wall time (interpreter start, generation, checksums, sha256 and writing the file
included), CPU time (user + system, all threads) and peak RSS. The figure kept per case is the
fastest of --runs runs (the machine may be shared; the CPU time shows how much work it was).
Targets (issue 12): >= 200,000 packets/s end to end on every profile, and memory flat in the trace
size: from the smallest to the largest size the peak RSS may grow by at most 16 MB + 10% of what
the file grows (a generator holding the trace grows by more than the file: 645 MB RSS for a 390 MB trace
before). All cases run; misses are listed at the end and the exit status is 1.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import finish
from idsbench.traffic.synth import PROFILES

TARGET_PPS = 200_000


def run_cli(profile: str, packets: int, out: Path) -> tuple[float, float, float, float]:
    """(wall s, CPU s, peak RSS MB, file MB) of one `idsbench trace synth` run."""
    with tempfile.NamedTemporaryFile("r") as stats:
        argv = ["/usr/bin/time", "-f", "%U %S %M", "-o", stats.name, sys.executable, "-m", "idsbench.cli.main",
                "trace", "synth", "--profile", profile, "--packets", str(packets), "--out", str(out)]
        t = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t
        if done.returncode != 0:
            raise RuntimeError(f"trace synth --profile {profile} failed: {done.stderr.strip()[-400:]}")
        user, system, peak_kb = stats.read().split()[-3:]
    size_mb = out.stat().st_size / 2**20
    out.unlink()
    out.with_name(out.name + ".json").unlink()
    return wall, float(user) + float(system), int(peak_kb) / 1024, size_mb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="200000,800000", help="packets per trace, comma-separated")
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--runs", type=int, default=2, help="runs per case (the fastest is kept)")
    args = ap.parse_args()
    if not shutil.which("/usr/bin/time"):
        print("/usr/bin/time is not installed (make setup: time)")
        return 1
    sizes = [int(s) for s in args.sizes.split(",")]
    workdir = Path(tempfile.mkdtemp(prefix="idsbench-synth-"))
    misses: list[str] = []
    print(f"{'profile':<14} {'packets':>9} {'file MB':>8} {'wall s':>7} {'packets/s':>10} {'cpu s':>6} "
          f"{'cpu us/pkt':>10} {'peak RSS MB':>11}  target {TARGET_PPS:,} packets/s")
    try:
        for profile in args.profiles.split(","):
            rss, files = [], []
            for packets in sizes:
                runs = [run_cli(profile, packets, workdir / f"{profile}.pcap") for _ in range(args.runs)]
                wall = min(r[0] for r in runs)
                cpu = min(r[1] for r in runs)
                peak = max(r[2] for r in runs)
                rss.append(peak)
                files.append(runs[0][3])
                pps = packets / wall
                ok = pps >= TARGET_PPS
                print(f"{profile:<14} {packets:>9,} {runs[0][3]:8.0f} {wall:7.2f} {pps:10,.0f} {cpu:6.2f} "
                      f"{cpu / packets * 1e6:10.2f} {peak:11.1f}  {'ok' if ok else 'MISSED'}", flush=True)
                if not ok:
                    misses.append(f"{profile} at {packets:,} packets: {pps:,.0f} packets/s end to end")
            if len(rss) > 1 and rss[-1] - rss[0] > 16 + 0.1 * (files[-1] - files[0]):
                misses.append(f"{profile}: peak RSS grows with the trace ({rss[0]:.0f} -> {rss[-1]:.0f} MB while "
                              f"the file grows {files[0]:.0f} -> {files[-1]:.0f} MB)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return finish(misses)


if __name__ == "__main__":
    sys.exit(main())
