"""Time of a search on a warm sensor vs a fresh sensor per trial (cold), with the Emerging Threats
Open ruleset and with the bundled rules, on the same case.

Run as root: `.venv/bin/python benchmarks/bench_search.py [--quick]`. Prints, per ruleset and mode,
the trials, the time of the trial phase (warm: with the sensor's one start and stop), the cold
verification samples, the whole search, and the overhead per trial (span of the trials / trials −
trial_s), side by side. Exits 1 when the target is missed: with ET Open the whole search, its
verification included, must take less than half the time in warm mode than in cold mode (issue 11).

ET Open runs under a 0.3-core quota: with its rules (which alert little on this traffic) half a
core keeps up with the sender here, the search would end at its first trial and there would be
nothing to compare. Under the quota the sensor's limit (~250k pps) lies inside the sender's range,
and the rule load a cold trial repeats takes ~45 s.

`--repeatability [CASE…]`: the search's repeatability instead — three back-to-back searches of one case
(Suricata bare metal, bundled rules, a generated trace and a ../shared/data capture, at 1 and 0.3 CPU):
each NDR, the largest deviation from their median (target ±5% on an idle machine) and the time per search
(target ≤ 180 s). With the MLRsearch controller that is one `search.repeats = 3` search; code without
`search.repeats` (the old bracket search, run with PYTHONPATH pointing at its checkout) runs three.
Measured on the shared, loaded 2-core VM of the issue (load average 5–10, a CPU-bound loop's CV 30–90%):
old search (9e19e76) gen-0.3cpu 2.6% / 90 s, gen-1cpu 30.8% / 109 s, pcap-1cpu 25.8% / 42 s, pcap-0.3cpu
18.8% / 25 s; MLRsearch gen-0.3cpu 16.7% / 136 s, gen-1cpu 25.9% / 104 s, pcap-1cpu 38.1% / 24 s,
pcap-0.3cpu 15.4% / 46 s (both pcap cases sender-limited: the sensor took the sender's top, ≥ 224k and
≥ 358k pps, each verified lossless by a cold 5 s sample; the spread is the sender's own ceiling moving).
Measured again on the idle machine (2026-11-26 23:32, load < 0.1, yet the noise probe's CPU-bound loop CV
9.9–11.5%: this VM's own speed moves): gen-1cpu 3.8% / 65 s, gen-0.3cpu 2.4% / 39 s, pcap-1cpu 14.1% / 23 s
(sender-limited: NDR ≥ the sender's top, which moves), pcap-0.3cpu 6.4% / 56 s. With a `while True` hog
beside it: gen-0.3cpu 3.3% (median 98.5k vs 83.1k idle, verification failed), gen-1cpu 10.5% (median 169k vs
277k idle): the noise probe's `other_load_pct` (49%) now labels such rows `noisy-host`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from idsbench.search.campaign import search_campaign
from idsbench.spec import spec_from_dict

SHARED = Path(__file__).resolve().parents[2] / "shared"
ET_OPEN = SHARED / "data" / "rules" / "et-open-2024-04-12.rules"
TRIAL_S = 2.0
# The capture ring a user tuning for NDR deploys (README): Suricata's default (~2k frames) turns every
# scheduling pause of this shared host into loss, so which trials and verifications pass becomes noise
# and the comparison measures that noise rather than the cost of a trial.
RING = {"af-packet.0.ring-size": 32768}


@dataclass(frozen=True)
class Timing:
    trials: int
    verifications: int
    trials_s: float       # the trial phase
    verification_s: float
    search_s: float       # the whole search
    overhead_s: float     # per trial, beyond trial_s


def one(label: str, rules: list[str], cpus: float, warm: bool, root: Path, ready_timeout_s: float) -> Timing:
    name = f"bench-{label.lower().replace(' ', '-')}-{'warm' if warm else 'cold'}"
    spec = spec_from_dict({
        "name": name, "traffic": {"traces": ["builtin:mixed?packets=20000"], "replayers": [1], "rate": "topspeed"},
        "sensor": {"rules": rules, "ready_timeout_s": ready_timeout_s, "ground_truth": False, "set": RING},
        "setup": {"cpus": cpus},
        "search": {"warm": warm, "trial_s": TRIAL_S, "final_s": TRIAL_S, "max_trials": 8},
    })
    (result,) = search_campaign(spec, root / name, state_dir=root / "state", name_prefix="ibbs").results
    trials = len(result.trials)
    span = (result.trials[-1].ended_unix - result.trials[0].started_unix) if trials else 0.0
    per_trial = span / trials if trials else 0.0
    return Timing(trials, len(result.verification), result.trials_s, result.verification_s, result.elapsed_s,
                  max(0.0, per_trial - TRIAL_S))


# --- repeatability: three back-to-back searches of one case --------------------------------------
# (label, trace, CPU quota): Suricata bare metal with the bundled rules, on a generated trace and on a
# ../shared/data capture, at a whole CPU and at 0.3 CPU.
REPEAT_CASES = {
    "gen-1cpu": ("builtin:mixed?packets=20000", 1.0),
    "gen-0.3cpu": ("builtin:mixed?packets=20000", 0.3),
    "pcap-1cpu": (str(SHARED / "data" / "pcaps" / "zeek_modbusBig.pcap"), 1.0),
    "pcap-0.3cpu": (str(SHARED / "data" / "pcaps" / "zeek_modbusBig.pcap"), 0.3),
}
SEARCHES = 3
REPEAT_TARGET = 0.05      # every NDR within ±5% of the median of the three (an idle machine)
SEARCH_TIME_TARGET_S = 180.0


def _has_repeats() -> bool:
    """The code under test knows `search.repeats` (the MLRsearch controller; the old search does not)."""
    from idsbench.spec import Search
    return "repeats" in Search.model_fields


def repeatability(label: str, root: Path) -> tuple[list[float], list[float]]:
    """(each search's NDR in pps, each search's time in s) for SEARCHES searches of one case."""
    trace, cpus = REPEAT_CASES[label]
    doc: dict[str, object] = {
        "traffic": {"traces": [trace], "replayers": [1], "rate": "topspeed"},
        "sensor": {"ground_truth": False, "set": RING}, "setup": {"cpus": cpus}}
    name = f"rep-{label}"
    if _has_repeats():
        spec = spec_from_dict({**doc, "name": name, "search": {
            "repeats": SEARCHES, "trial_s": 2, "initial_trial_s": 1, "duration_sum": 6, "final_s": 5}})
        (result,) = search_campaign(spec, root / name, state_dir=root / "state", name_prefix="j2b").results
        ndrs = [float(r.ndr_pps or 0.0) for r in result.repeats]  # type: ignore[attr-defined]
        times = [float(r.elapsed_s) for r in result.repeats]  # type: ignore[attr-defined]
        return ndrs, times
    ndrs, times = [], []
    for i in range(SEARCHES):
        spec = spec_from_dict({**doc, "name": f"{name}-{i}", "search": {"trial_s": 2, "final_s": 5}})
        (result,) = search_campaign(spec, root / f"{name}-{i}", state_dir=root / "state", name_prefix="j2b").results
        ndr = next(r for r in result.results if r.tolerance == 0)
        ndrs.append(float(ndr.value_pps or 0.0))
        times.append(result.elapsed_s)
    return ndrs, times


def print_repeatability(labels: list[str]) -> list[str]:
    import statistics

    which = "MLRsearch controller" if _has_repeats() else "old bracket search"
    print(f"repeatability of {SEARCHES} back-to-back searches ({which}; this 2-core VM is shared with other "
          "jobs: figures are noisy)")
    print(f"{'case':<12} {'NDRs pps':<36} {'median':>10} {'max dev':>8} {'s/search':>9}")
    misses = []
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-repeat-") as tmp:
        for label in labels:
            ndrs, times = repeatability(label, Path(tmp))
            mid = statistics.median(ndrs)
            dev = max(abs(x / mid - 1) for x in ndrs) if mid > 0 else float("inf")
            per = statistics.mean(times)
            print(f"{label:<12} {', '.join(f'{x:,.0f}' for x in ndrs):<36} {mid:>10,.0f} {dev:>7.1%} {per:>9.1f}",
                  flush=True)
            if dev > REPEAT_TARGET:
                misses.append(f"{label}: NDRs {dev:.1%} from their median (target ±{REPEAT_TARGET:.0%})")
            if max(times) > SEARCH_TIME_TARGET_S:
                misses.append(f"{label}: a search took {max(times):.0f} s (target ≤ {SEARCH_TIME_TARGET_S:.0f} s)")
    return misses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="bundled rules only (no ET Open)")
    parser.add_argument("--repeatability", nargs="*", metavar="CASE", choices=sorted(REPEAT_CASES),
                        help=f"only the repeatability of {SEARCHES} searches (cases: {', '.join(REPEAT_CASES)}; "
                             "default all)")
    args = parser.parse_args()
    if args.repeatability is not None:
        misses = print_repeatability(args.repeatability or list(REPEAT_CASES))
        for miss in misses:
            print(f"MISS: {miss}")
        return 1 if misses else 0
    # (label, rules, CPU quota, readiness allowance): see the module's docstring for ET Open's quota
    rulesets = [("bundled", ["builtin:events"], 1.0, 120.0)]
    if not args.quick:
        if not ET_OPEN.is_file():
            print(f"bench_search: the ET Open ruleset is not at {ET_OPEN} (../shared/data/rules)", file=sys.stderr)
            return 2
        rulesets.append(("ET Open", [str(ET_OPEN)], 0.3, 300.0))
    print(f"{'ruleset':<10} {'mode':<5} {'trials':>6} {'trials s':>9} {'verif':>5} {'verif s':>8} "
          f"{'search s':>9} {'overhead/trial s':>17}")
    misses = []
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-search-") as tmp:
        for label, rules, cpus, ready in rulesets:
            t: dict[bool, Timing] = {}
            for warm in (True, False):
                x = t[warm] = one(label, rules, cpus, warm, Path(tmp), ready)
                print(f"{label:<10} {'warm' if warm else 'cold':<5} {x.trials:>6} {x.trials_s:>9.1f} "
                      f"{x.verifications:>5} {x.verification_s:>8.1f} {x.search_s:>9.1f} {x.overhead_s:>17.2f}")
            phase = t[True].trials_s / t[False].trials_s
            whole = t[True].search_s / t[False].search_s
            per_trial = (t[True].trials_s / max(1, t[True].trials)) / (t[False].trials_s / max(1, t[False].trials))
            print(f"{label:<10} warm/cold: whole search {whole:.2f} (target for ET Open: < 0.5), trial phase "
                  f"{phase:.2f}, per trial {per_trial:.2f}")
            if label == "ET Open" and whole >= 0.5:
                misses.append(f"the warm ET Open search took {whole:.2f} of the cold search's time (target < 0.5)")
    for miss in misses:
        print(f"MISS: {miss}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
