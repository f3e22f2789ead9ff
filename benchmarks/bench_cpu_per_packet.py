"""The sensor's CPU per packet by each candidate definition, from the same samples (issue 28 item 2).

Run as root: `.venv/bin/python benchmarks/bench_cpu_per_packet.py [--samples N] [--pps R] [--seconds S]`.
One campaign, two cases run interleaved: a shared capture (ndpi_pinterest, looped) and a generated trace,
each at a fixed lossless load (default 15,000 pps for 8 s), Suricata with its bundled rules, 1 CPU,
bare metal, the native sender. Every sample records the raw readings (idsbench.cpucost) plus a 3-s idle
window before its replay (`SampleDeps.bench_pre_idle_s`, this benchmark only), so per case each definition
is computed from the very same samples:
  processing  CPU from replay start to the end of processing, nothing subtracted (the one used)
  pre-idle    the same minus the idle rate measured over 3 s before the replay
  quiet-idle  before issue 28: CPU to the end of the drain minus the 0.2-s quiet window's rate × the span
Printed side by side: median µs/packet, CV, and the samples. Target (issue 28's "done when", measured on an
idle machine): the definition in use has a CV ≤ 3% on both traces.

Where a spread comes from: a host-speed witness (witness.py; `--no-witness` leaves it out) runs a fixed
~4-ms piece of work every 100 ms on the sensor's CPU; per sample it prints the piece's mean CPU time over
the processing span, its correlation with the CPU per packet, and the CV of the CPU per packet divided by
the witness's relative speed (printed, not targeted: it says whether the host's speed or the sensor moved).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
import tempfile
from pathlib import Path

from common import finish
from idsbench import cpucost, settings
from idsbench.run.campaign import run_campaign
from idsbench.run.progress import Progress
from idsbench.run.session import SampleDeps
from idsbench.spec import spec_from_dict
from idsbench.store.reader import SampleRecord, load_campaign
from witness import Witness, default_cpu, pearson, span_mean

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "pcaps"
CV_TARGET = 0.03
PRE_IDLE_S = 3.0


def _cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else math.nan


def _print_witness(ok: list[SampleRecord], pieces: list[tuple[float, float]], cpu: int) -> None:
    """Per sample the witness's mean piece over the processing span; how the CPU per packet follows it."""
    pinned = {s.summary.placement.sensor_cpus for s in ok if s.summary.placement}
    if pinned != {(cpu,)}:
        print(f"witness: on CPU {cpu}, the sensor on {sorted(map(str, pinned))}: not comparable")
        return
    pairs = []
    for s in ok:
        start = next((p.start_unix for p in s.summary.phases if p.name == "replay"), None)
        cost = s.summary.cost
        us = cpucost.us_per_pkt(cost, cpucost.USED) if cost else None
        if start is None or cost is None or cost.processed_s is None or us is None:
            continue
        mean = span_mean(pieces, start, start + cost.processed_s)
        if mean is not None:
            pairs.append((us, mean))
    if len(pairs) < 2:
        print("witness: too few pieces inside the processing spans")
        return
    us_values, speeds = [p[0] for p in pairs], [p[1] for p in pairs]
    ref = statistics.median(speeds)
    adjusted = [u / (w / ref) for u, w in pairs]
    print(f"witness on CPU {cpu} (ms per piece over the span): {', '.join(f'{w * 1e3:.3f}' for w in speeds)} "
          f"(CV {_cv(speeds):.2%}); correlation with us/pkt r = {pearson(us_values, speeds):+.2f}; "
          f"us/pkt / the witness's relative time: CV {_cv(adjusted):.2%} "
          f"({', '.join(f'{v:.3f}' for v in adjusted)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=6)
    ap.add_argument("--pps", type=int, default=15_000)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--capture", type=Path, default=SHARED / "ndpi_pinterest.pcap")
    ap.add_argument("--keep", type=Path, default=None, help="write the campaign here (default: a temp dir)")
    ap.add_argument("--no-witness", action="store_true", help="no host-speed witness on the sensor's CPU")
    args = ap.parse_args()
    generated = f"builtin:mixed?packets={int(args.pps * args.seconds)}&rate_pps={args.pps}"
    misses: list[str] = []
    with open("/proc/loadavg") as fh:
        print(f"load average before: {' '.join(fh.read().split()[:3])}")
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-cpp-") as tmp:
        out = args.keep or Path(tmp) / "cpp"
        spec = spec_from_dict({
            "name": "bench-cpu-per-packet", "samples": args.samples,  # two cases: interleaved rounds
            "traffic": {"traces": [str(args.capture), generated], "replayers": [1], "rate": [{"pps": args.pps}],
                        "duration_s": args.seconds, "sender": "native"},  # the capture loops for the duration
            "sensor": {"rules": ["builtin:events"], "ground_truth": False},
            "setup": {"cpus": [1.0]},
        })
        witness = Witness(default_cpu(), Path(tmp) / "witness.log")
        with contextlib.nullcontext() if args.no_witness else witness:
            run_campaign(spec, out, state_dir=settings.state_dir(), cache_dir=settings.cache_dir(),
                         deps=SampleDeps(bench_pre_idle_s=PRE_IDLE_S), progress=Progress(2 * args.samples, live=False))
        campaign = load_campaign(out)
        pieces = [] if args.no_witness else witness.pieces()
        for case in campaign.cases:
            name = case.case_id
            samples = campaign.samples_of(name)
            ok = [s for s in samples if s.status == "ok" and s.summary.cost is not None]
            bad = [f"s{s.index}: {s.status} ({s.summary.reason})" for s in samples if s.status != "ok"]
            print(f"\n== {name}: {len(ok)} ok samples" +
                  (f"; not ok: {'; '.join(bad)}" if bad else ""))
            print(f"{'definition':<12} {'median us/pkt':>14} {'CV':>7}  samples")
            for definition in cpucost.DEFINITIONS:
                values = [v for s in ok if s.summary.cost is not None
                          and (v := cpucost.us_per_pkt(s.summary.cost, definition)) is not None]
                if not values:
                    print(f"{definition:<12} {'–':>14}")
                    continue
                cv = _cv(values)
                used = " (used)" if definition == cpucost.USED else ""
                print(f"{definition:<12} {statistics.median(values):>14.3f} {cv:>7.2%}  "
                      f"{', '.join(f'{v:.3f}' for v in values)}{used}")
                if definition == cpucost.USED and not cv <= CV_TARGET:
                    misses.append(f"{name}: CV of '{definition}' {cv:.2%} > {CV_TARGET:.0%}")
            idle = [s.summary.cost.pre_idle_cores for s in ok if s.summary.cost and s.summary.cost.pre_idle_cores is not None]
            quiet = [s.summary.cost.idle_cores for s in ok if s.summary.cost and s.summary.cost.idle_cores is not None]
            spans = [s.summary.cost.processed_s for s in ok if s.summary.cost and s.summary.cost.processed_s is not None]
            print(f"idle cores: 3-s window before {', '.join(f'{v:.4f}' for v in idle)}; "
                  f"quiet window after {', '.join(f'{v:.4f}' for v in quiet)}")
            print(f"processing span (s): {', '.join(f'{v:.2f}' for v in spans)}; "
                  f"overhead per sample (s): {', '.join(f'{s.summary.overhead_s or 0:.1f}' for s in ok)}")
            if pieces:
                _print_witness(ok, pieces, witness.cpu)
    return finish(misses)


if __name__ == "__main__":
    sys.exit(main())
