"""The duet search (issue 42 item 4): do two identical sides find the same NDR, and what does a setup cost
in NDR?

Run as root, under the machine lock: `.venv/bin/python benchmarks/bench_duet_search.py [--part all|aa|setups]
[--searches N] [--precision P]`.

- aa: N (default 5) A/A duet searches, each its own campaign: two identical Suricatas (0.3-CPU quota each,
  both on the sensor CPU, 400 content-less PCRE rules so the CPU bounds the NDR; the integration test's
  case) searched for their NDR on a generated trace (top 40k pps, 1-s trials). Per search: both sides'
  NDRs and their gap, the duet trials, how many of a's trials b's controller reused, and the shared trials
  the two sides judged differently — by the rule the duet search uses ("allocation": the trial's work
  against what the allocation does over the replay) and by the single search's ("tail": the work left at
  the replay's end), recomputed from the same records. Target: the NDRs within 5% of each other in every
  search.
- setups: bare metal against a container as the duet's side axis (`setup.kinds = ["baremetal",
  "container"]`), the same case: `duet_ndr_ratio` with its CI over `--setup-repeats` repeats (this needs
  setups as a duet side axis; where the spec refuses it the part says so and counts as a miss).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

from common import finish
from idsbench import settings
from idsbench.analysis.duet import duet_results, pair_row
from idsbench.errors import SpecError
from idsbench.search.duet import search_duet_campaign
from idsbench.search.measure import CAPTURE_LATENCY_S
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign
from idsbench.store.schema import SearchResult, TrialRecord

AGREE = 0.05
QUOTA = 0.3
QUOTA_PERIOD_S = 0.1
PREFIX = "ibds"
REUSED = re.compile(r"(\d+) requests answered by a trial")  # search/duet.py's note per repeat


def costly_rules(path: Path) -> Path:
    """400 content-less PCRE rules (tests/integration/conftest.py's `costly_rules`)."""
    path.write_text("".join(
        f'alert tcp any any -> any any (msg:"idsbench cost {i}"; pcre:"/[a-z]{{3}}[0-9]{{2}}q{i}x/i"; '
        f"sid:{1999000 + i}; rev:1;)\n" for i in range(400)))
    return path


def spec(rules: Path, precision: float, repeats: int, duration_sum: float,
         kinds: list[str] | None = None) -> dict[str, object]:
    return {"name": "bench-duet-search", "mode": "duet", "timing": {"settle_s": 0.3},
            "traffic": {"traces": ["builtin:mixed?packets=20000"], "rate": {"pps": 40000}},
            "setup": {"cpus": QUOTA, **({"kinds": kinds} if kinds else {})},
            "sensor": {"set": {"af-packet.0.ring-size": 32768}, "rules": [str(rules)]},
            "search": {"precision": precision, "trial_s": 1, "initial_trial_s": 0.5, "duration_sum": duration_sum,
                       "final_s": 2, "repeats": repeats}}


def kept_up(t: TrialRecord, rule: str) -> bool | None:
    """Whether a trial passed as an NDR trial by `rule` (None: not judged: failed or did not add up)."""
    if t.sensor_failed or not t.accounted or t.waterfall is None or t.ceiling:
        return None
    if t.waterfall.loss_ratio > 0:
        return False
    if rule == "allocation" or t.tail_work_s is None:
        return not t.fell_behind
    tail_allowance = QUOTA * (CAPTURE_LATENCY_S + QUOTA_PERIOD_S)  # the single search's (measure.Allocation)
    return t.tail_work_s <= tail_allowance


def differ(a: SearchResult, b: SearchResult, rule: str) -> int:
    """Shared trials the two sides judged differently by `rule`."""
    out = 0
    for ta, tb in zip(a.trials, b.trials):
        ja, jb = kept_up(ta, rule), kept_up(tb, rule)
        out += ja is not None and jb is not None and ja != jb
    return out


def part_aa(args: argparse.Namespace, tmp: Path, rules: Path) -> list[str]:
    misses: list[str] = []
    pairs = []
    print(f"\n== A/A duet searches ({args.searches}; precision {args.precision:g}, duration_sum "
          f"{args.duration_sum:g}, both sides {QUOTA} CPU on the "
          "sensor CPU, 400 PCRE rules, top 40k pps)")
    print(f"{'search':>6} {'NDR a':>9} {'NDR b':>9} {'b/a-1':>7} {'trials':>6} {'reused':>6} "
          f"{'differ(alloc)':>13} {'differ(tail)':>12} {'s':>5}")
    for k in range(args.searches):
        started = time.monotonic()
        with open("/proc/loadavg") as fh:
            load = fh.read().split()[0]
        out = tmp / f"aa{k}"
        (results,) = search_duet_campaign(spec_from_dict(spec(rules, args.precision, 1, args.duration_sum)), out,
                                          state_dir=settings.state_dir(), cache_dir=settings.cache_dir(),
                                          name_prefix=PREFIX)
        a, b = results["a"], results["b"]
        na = next((r.value for r in a.results if r.tolerance == 0), None)
        nb = next((r.value for r in b.results if r.tolerance == 0), None)
        note = next((m for n in a.notes if (m := REUSED.search(n))), None)
        reused = note.group(1) if note else "-"
        gap = nb / na - 1 if na and nb else None
        pairs.append((na, nb))
        print(f"{k + 1:>6} {na or 0:>9,.0f} {nb or 0:>9,.0f} {gap if gap is not None else float('nan'):>+7.1%} "
              f"{len(a.trials):>6} {reused:>6} "
              f"{differ(a, b, 'allocation'):>13} {differ(a, b, 'tail'):>12} {time.monotonic() - started:>5.0f}"
              f"  (load {load})")
        if gap is None or abs(gap) > AGREE:
            misses.append(f"A/A duet search {k + 1}: NDRs {na} and {nb} not within {AGREE:.0%}")
    agree = sum(1 for na, nb in pairs if na and nb and abs(nb / na - 1) <= AGREE)
    print(f"the sides' NDRs within {AGREE:.0%} of each other in {agree} of {len(pairs)} searches (target: all)")
    return misses


def part_setups(args: argparse.Namespace, tmp: Path, rules: Path) -> list[str]:
    print(f"\n== bare metal against a container as a duet search ({args.setup_repeats} repeats)")
    try:
        doc = spec_from_dict(spec(rules, args.precision, args.setup_repeats, args.duration_sum,
                                  ["baremetal", "container"]))
    except SpecError as exc:
        print(f"not measured: this build refuses setups as a duet side axis ({exc})")
        return ["setups duet search: setup.kinds is not a duet side axis in this build"]
    started = time.monotonic()
    out = tmp / "setups"
    search_duet_campaign(doc, out, state_dir=settings.state_dir(), cache_dir=settings.cache_dir(), name_prefix=PREFIX)
    rows = [pair_row(r) for r in duet_results(load_campaign(out))]
    for row in rows:
        print(f"{row.get('duet_a_value')} -> {row.get('duet_b_value')}: NDR a {row.get('duet_a_ndr_pps')} "
              f"b {row.get('duet_b_ndr_pps')} pps, duet_ndr_ratio {row.get('duet_ndr_ratio')} "
              f"{row.get('duet_ndr_ratio_ci')} ({row.get('duet_ndr_ratio_ci_kind')}, level "
              f"{row.get('duet_ndr_ratio_ci_level')}); ratios per repeat {row.get('duet_ndr_ratios')}; "
              f"{time.monotonic() - started:.0f} s")
    if not rows or any(r.get("duet_ndr_ratio") is None or r.get("duet_ndr_ratio_ci") is None for r in rows):
        return ["setups duet search: no duet_ndr_ratio with a CI"]
    return []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="all", choices=("all", "aa", "setups"))
    ap.add_argument("--searches", type=int, default=5)
    ap.add_argument("--precision", type=float, default=0.05)
    ap.add_argument("--duration-sum", type=float, default=1.0, help="search.duration_sum (1: the integration "
                    "test's, one 1-s trial decides a load)")
    ap.add_argument("--setup-repeats", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="keep the campaigns in this directory (default: a temporary one)")
    args = ap.parse_args()
    misses: list[str] = []
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-duet-search-") as tmp_name:
        tmp = args.keep or Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        rules = costly_rules(tmp / "costly.rules")
        if args.part in ("all", "aa"):
            misses += part_aa(args, tmp, rules)
        if args.part in ("all", "setups"):
            misses += part_setups(args, tmp, rules)
    return finish(misses)


if __name__ == "__main__":
    sys.exit(main())
