"""A sample's fixed cost (its wall time beyond the replay) and a warm search trial's, per phase, with
the sequence before issue 23 and now, side by side in one run.

Run as root: `.venv/bin/python benchmarks/bench_overhead.py [--samples N] [--no-search]`.
Samples: Suricata, bundled rules, bare metal, a 5 s replay (builtin:mixed at its recorded rate, the
native sender), N samples per path, the two paths alternating so both see the same host. Search: a
warm search of the same trace (2 s trials). The old path is `SampleDeps.bench_old_path`, a switch
only this benchmark sets. Targets (issue 23): median fixed cost ≤ 2.5 s per sample; warm trials
≤ 1.0 s of overhead each (median).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from common import finish
from idsbench.run.campaign import run_campaign
from idsbench.run.progress import Progress
from idsbench.run.session import SampleDeps
from idsbench.search.campaign import search_campaign
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign
from idsbench.store.schema import PHASES, phase_seconds

SAMPLE_TARGET_S = 2.5
TRIAL_TARGET_S = 1.0
TRACE = "builtin:mixed?duration_s=5&rate_pps=2000"
PATHS = (("before", True), ("now", False))


def sample_phases(root: Path, samples: int, prefix: str) -> dict[str, list[dict[str, float]]]:
    """Per path, one {phase: s, wall, overhead} per ok sample."""
    out: dict[str, list[dict[str, float]]] = {label: [] for label, _ in PATHS}
    for k in range(samples):
        for label, old in PATHS:
            spec = spec_from_dict({
                "name": f"bench-overhead-{label}-{k}", "samples": 1,
                "traffic": {"traces": [TRACE], "replayers": [1], "rate": "recorded", "sender": "native"},
                "sensor": {"rules": ["builtin:events"], "ground_truth": False},
                "setup": {"cpus": 1.0, "memory": "2g"},
            })
            out_dir = root / f"{label}-{k}"
            run_campaign(spec, out_dir, state_dir=root / "state", name_prefix=prefix,
                         deps=SampleDeps(bench_old_path=old), progress=Progress(1, live=False))
            for s in load_campaign(out_dir).samples:
                if s.summary.status != "ok":
                    print(f"  {label} sample {k}: {s.summary.status} ({s.summary.reason})", file=sys.stderr)
                    continue
                row = phase_seconds(s.summary.phases)
                row["wall"] = s.summary.wall_s
                row["overhead"] = s.summary.overhead_s or 0.0
                out[label].append(row)
    return out


def trial_phases(root: Path, prefix: str) -> dict[str, list[dict[str, float]]]:
    out: dict[str, list[dict[str, float]]] = {}
    for label, old in PATHS:
        spec = spec_from_dict({
            "name": f"bench-overhead-search-{label}",
            "traffic": {"traces": ["builtin:mixed?packets=20000"], "replayers": [1], "rate": "topspeed"},
            "sensor": {"rules": ["builtin:events"], "ground_truth": False,
                       "set": {"af-packet.0.ring-size": 32768}},
            "setup": {"cpus": 1.0},
            "search": {"warm": True, "trial_s": 2.0, "final_s": 2.0, "max_trials": 6},
        })
        (result,) = search_campaign(spec, root / f"search-{label}", state_dir=root / "state", name_prefix=prefix,
                                    deps=SampleDeps(bench_old_path=old)).results
        rows = []
        for t in result.trials:
            if t.phases:
                row = phase_seconds(t.phases)
                row["overhead"] = t.overhead_s or 0.0
                rows.append(row)
        out[label] = rows
    return out


def table(title: str, rows: dict[str, list[dict[str, float]]], keys: tuple[str, ...]) -> dict[str, float]:
    """Prints the medians per key, before and now; returns the medians of 'overhead'."""
    print(f"\n{title}  (medians, seconds; n = " + ", ".join(f"{k} {len(v)}" for k, v in rows.items()) + ")")
    print(f"{'phase':<14}" + "".join(f"{label:>10}" for label in rows))
    medians: dict[str, float] = {}
    for key in keys:
        cells = []
        for samples in rows.values():
            values = [r[key] for r in samples if key in r]
            cells.append(f"{statistics.median(values):>10.3f}" if values else f"{'-':>10}")
        print(f"{key:<14}" + "".join(cells))
    for label, samples in rows.items():
        values = [r["overhead"] for r in samples]
        medians[label] = statistics.median(values) if values else float("nan")
    return medians


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--no-search", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_overhead: run as root (namespaces, cgroups)", file=sys.stderr)
        return 2
    prefix = os.environ.get("IDSBENCH_PREFIX", "ibo")
    misses: list[str] = []
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-overhead-") as tmp:
        root = Path(tmp)
        rows = sample_phases(root, args.samples, prefix)
        sample = table(f"a sample: bundled rules, bare metal, {TRACE}", rows, (*PHASES, "wall", "overhead"))
        if not rows["now"] or sample["now"] > SAMPLE_TARGET_S:
            misses.append(f"a sample's median fixed cost is {sample['now']:.2f} s (target ≤ {SAMPLE_TARGET_S} s)")
        if not args.no_search:
            trials = trial_phases(root, prefix)
            trial = table("a warm search trial (2 s)", trials, ("setup", "replay", "drain", "analysis", "overhead"))
            if not trials["now"] or trial["now"] > TRIAL_TARGET_S:
                misses.append(f"a warm trial's median overhead is {trial['now']:.2f} s (target ≤ {TRIAL_TARGET_S} s)")
    return finish(misses)


if __name__ == "__main__":
    sys.exit(main())
