"""Per-trial overhead of a search on a warm sensor vs a fresh sensor per trial (cold), with the
Emerging Threats Open ruleset (a ~13 s rule load here) and the bundled rules, on the same case.

Run as root: `.venv/bin/python benchmarks/bench_search.py [--quick]`. Prints, per ruleset and mode,
the trials, the total time, and the overhead per trial (wall time of the trial loop / trials −
trial_s), side by side; exits 1 when a target is missed: the ET Open search must take less than half
the time in warm mode than in cold mode (issue 11).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from idsbench.search.campaign import search_campaign
from idsbench.spec import spec_from_dict

SHARED = Path(__file__).resolve().parents[2] / "shared"
ET_OPEN = SHARED / "data" / "rules" / "et-open-2024-04-12.rules"
TRIAL_S = 2.0


def one(label: str, rules: list[str], warm: bool, root: Path, ready_timeout_s: float) -> tuple[int, float, float]:
    """(trials, wall seconds of the whole search, overhead seconds per trial)."""
    name = f"bench-{label.lower().replace(' ', '-')}-{'warm' if warm else 'cold'}"
    spec = spec_from_dict({
        "name": name, "traffic": {"traces": ["builtin:mixed?packets=20000"], "replayers": [1], "rate": "topspeed"},
        "sensor": {"rules": rules, "ready_timeout_s": ready_timeout_s, "ground_truth": False},
        "setup": {"cpus": 1.0},
        "search": {"warm": warm, "trial_s": TRIAL_S, "final_s": TRIAL_S, "max_trials": 8},
    })
    t0 = time.monotonic()
    (result,) = search_campaign(spec, root / name, state_dir=root / "state", name_prefix="ibbs").results
    wall = time.monotonic() - t0
    trials = len(result.trials)
    span = (result.trials[-1].ended_unix - result.trials[0].started_unix) if trials else 0.0
    per_trial = span / trials if trials else 0.0
    return trials, wall, max(0.0, per_trial - TRIAL_S)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="bundled rules only (no ET Open)")
    args = parser.parse_args()
    rulesets = [("bundled", ["builtin:events"], 120.0)]
    if not args.quick:
        if not ET_OPEN.is_file():
            print(f"bench_search: the ET Open ruleset is not at {ET_OPEN} (../shared/data/rules)", file=sys.stderr)
            return 2
        rulesets.append(("ET Open", [str(ET_OPEN)], 300.0))
    print(f"{'ruleset':<10} {'mode':<5} {'trials':>6} {'search s':>9} {'overhead/trial s':>17}")
    misses = []
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-search-") as tmp:
        for label, rules, ready in rulesets:
            totals = {}
            for warm in (True, False):
                trials, wall, overhead = one(label, rules, warm, Path(tmp), ready)
                totals[warm] = wall
                print(f"{label:<10} {'warm' if warm else 'cold':<5} {trials:>6} {wall:>9.1f} {overhead:>17.2f}")
            ratio = totals[True] / totals[False]
            print(f"{label:<10} warm/cold time: {ratio:.2f} (target for ET Open: < 0.5)")
            if label == "ET Open" and ratio >= 0.5:
                misses.append(f"ET Open warm search took {ratio:.2f} of the cold search's time (target < 0.5)")
    for miss in misses:
        print(f"MISS: {miss}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
