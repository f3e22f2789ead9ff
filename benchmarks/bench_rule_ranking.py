"""Do rule rankings repeat? The top 5 rules of each pair of samples, ranked by raw profiler ticks and by the
ticks net of the profiler's own clock (issue 28 item 7).

Run as root: `.venv/bin/python benchmarks/bench_rule_ranking.py [--samples N] [--trace PCAP] [--pps R]`.
One campaign of `suricata@8.0.6+profiling` with ET Open (../shared/data/rules) on a capture the tests do
not use (default ndpi_pinterest), N samples (default 4). Per pair of samples: how many of the top 5 they
share, by `ticks_total` and by `ticks_net` (ticks_total − checks × one read of the build's profiling clock
from the host probe, at the TSC rate: lfence;rdtsc for idsbench's builds, cpuid;rdtsc;cpuid upstream); and
per sample the top 5 both ways with the clock's share of the rule time.
Target (issue 28's "done when"): every pair shares at least 4 of its top 5 by the figure the report ranks by.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
from pathlib import Path

from common import finish
from idsbench import settings
from idsbench.analysis.rules import case_rule_time, clock_ticks_per_check, net_ticks, top_sids
from idsbench.run.campaign import run_campaign
from idsbench.run.progress import Progress
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign, rule_profile
from idsbench.store.rule_profile import RuleCost

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
ET = SHARED / "rules" / "et-open-2024-04-12.rules"
BUILD = "suricata@8.0.6+profiling"
TOP = 5
TARGET = 4


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--trace", type=Path, default=SHARED / "pcaps" / "ndpi_pinterest.pcap")
    ap.add_argument("--pps", type=int, default=500)
    ap.add_argument("--loops", type=int, default=1)
    ap.add_argument("--keep", type=Path, default=None, help="write the campaign here (default: a temp dir)")
    args = ap.parse_args()
    misses: list[str] = []
    with open("/proc/loadavg") as fh:
        print(f"load average before: {' '.join(fh.read().split()[:3])}")
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-ranking-") as tmp:
        out = args.keep or Path(tmp) / "ranking"
        spec = spec_from_dict({
            "name": "bench-rule-ranking", "samples": args.samples, "timing": {"settle_s": 1.0},
            "traffic": {"traces": [str(args.trace)], "replayers": [1], "rate": [{"pps": args.pps}],
                        "loops": args.loops, "sender": "native"},
            "sensor": {"engine": [BUILD], "rules": [str(ET)], "ready_timeout_s": 600, "ground_truth": False},
            "setup": {"cpus": [1.0]},
        })
        run_campaign(spec, out, state_dir=settings.state_dir(), cache_dir=settings.cache_dir(),
                     progress=Progress(args.samples, live=False))
        campaign = load_campaign(out)
        (case,) = campaign.cases
        samples = [s for s in campaign.samples_of(case.case_id) if s.status == "ok"]
        for s in campaign.samples_of(case.case_id):
            if s.status != "ok":
                print(f"s{s.index}: {s.status} ({s.summary.reason})")
        profiles = {s.index: rule_profile(s) or [] for s in samples}
        clock = clock_ticks_per_check(campaign, BUILD, "ticks")
        timing = case_rule_time(campaign, case.case_id)
        print(f"{args.trace.name} at {args.pps} pps x{args.loops}, {len(samples)} ok samples; the profiler's clock: "
              f"{clock or 0:,.0f} ticks per check"
              + (f", ~{timing.timer_share:.0%} of all rule time" if timing and timing.timer_share is not None else ""))
        if clock is None:
            misses.append("no clock cost (the probe's timer figure for the build's clock or the TSC rate missing): nothing to correct")
            return finish(misses)
        for k, costs in profiles.items():
            by_sid = {c.sid: c for c in costs}
            raw, net = top_sids(costs, TOP), top_sids(costs, TOP, clock)
            total = sum(c.ticks_total for c in costs) or 1
            clock_share = min(1.0, sum(c.checks for c in costs) * clock / total)
            print(f"s{k}: {len(costs)} rules, clock {clock_share:.0%} of rule time; top {TOP} raw {raw}; net {net}")
            for sid in net:
                c = by_sid[sid]
                print(f"      {sid:>8}: {c.checks:>8,} checks, {c.ticks_total:>14,} ticks, "
                      f"net {max(0.0, c.ticks_total - c.checks * clock):>14,.0f}")
        print(f"\n{'pair':<10} {'raw ticks':>10} {'net of clock':>13}   (rules shared among the top {TOP})")
        for (a, pa), (b, pb) in itertools.combinations(profiles.items(), 2):
            shared_raw = len(set(top_sids(pa, TOP)) & set(top_sids(pb, TOP)))
            shared_net = len(set(top_sids(pa, TOP, clock)) & set(top_sids(pb, TOP, clock)))
            print(f"s{a}-s{b:<6} {shared_raw:>10} {shared_net:>13}")
            if shared_net < TARGET:
                misses.append(f"s{a} and s{b} share {shared_net} of their top {TOP} net of the clock (target {TARGET})")
        if len(profiles) >= 4:  # what the report ranks by: medians over samples; two halves of the samples
            keys = sorted(profiles)
            halves = (keys[: len(keys) // 2], keys[len(keys) // 2:])
            tops = {name: [_median_top([profiles[k] for k in half], clock if name == "net" else None) for half in halves]
                    for name in ("raw", "net")}
            print(f"medians over samples {halves[0]} vs {halves[1]}: top {TOP} shared raw "
                  f"{len(set(tops['raw'][0]) & set(tops['raw'][1]))}, net {len(set(tops['net'][0]) & set(tops['net'][1]))}")
    return finish(misses)


def _median_top(profiles: list[list[RuleCost]], clock: float | None) -> list[int]:
    """The top sids by the median over `profiles` (a rule a sample did not check counts 0), raw or net."""
    figures: dict[int, list[float]] = {}
    for costs in profiles:
        for c in costs:
            figures.setdefault(c.sid, []).append(c.ticks_total if clock is None else net_ticks(c, clock))
    n = len(profiles)
    med = {sid: statistics.median([*v, *([0.0] * (n - len(v)))]) for sid, v in figures.items()}
    return [sid for sid, _ in sorted(med.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]]


if __name__ == "__main__":
    sys.exit(main())
