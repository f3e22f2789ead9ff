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

Where a spread comes from: every sample's host-speed witness (monitor/witness.py; `--no-witness` leaves it
out) gives its `host_speed`; per case it prints them, their correlation with the CPU per packet, and the
CV of the CPU per packet normalised by them (printed, not targeted here: benchmarks/bench_host_speed.py
targets it; it says whether the host's speed or the sensor moved).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import tempfile
from pathlib import Path

from common import finish
from idsbench import cpucost, settings
from idsbench.analysis.cases import CaseSamples, case_samples
from idsbench.run.campaign import run_campaign
from idsbench.run.progress import Progress
from idsbench.run.session import SampleDeps
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "pcaps"
CV_TARGET = 0.03
PRE_IDLE_S = 3.0


def _cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else math.nan


def _print_witness(cs: CaseSamples) -> None:
    """Per sample the host-speed witness's relative speed (the product's, every sample's `host_speed`);
    how the CPU per packet follows it, and its CV normalised by it."""
    pairs = [(f.sensor_us_per_pkt, f.host_speed) for f in cs.figures
             if f.sensor_us_per_pkt is not None and f.host_speed is not None]
    if len(pairs) < 2:
        print("witness: fewer than two samples with a host speed")
        return
    us_values, speeds = [p[0] for p in pairs], [p[1] for p in pairs]
    normalised = [u * v for u, v in pairs]
    r = statistics.correlation(us_values, [1 / v for v in speeds]) if len(pairs) > 2 else math.nan
    print(f"host speed per sample (1.0 = the campaign's median): {', '.join(f'{v:.3f}' for v in speeds)} "
          f"(CV {_cv(speeds):.2%}); correlation of us/pkt with 1/host_speed r = {r:+.2f}; "
          f"us/pkt x host_speed: CV {_cv(normalised):.2%} ({', '.join(f'{v:.3f}' for v in normalised)})")


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
        deps = SampleDeps(bench_pre_idle_s=PRE_IDLE_S)
        if args.no_witness:
            deps = dataclasses.replace(deps, make_witness=lambda *_: None)
        run_campaign(spec, out, state_dir=settings.state_dir(), cache_dir=settings.cache_dir(), deps=deps,
                     progress=Progress(2 * args.samples, live=False))
        campaign = load_campaign(out)
        groups = {cs.info.case_id: cs for cs in case_samples(campaign)}
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
            if not args.no_witness:
                _print_witness(groups[name])
    return finish(misses)


if __name__ == "__main__":
    sys.exit(main())
