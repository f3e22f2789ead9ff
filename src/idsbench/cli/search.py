"""`idsbench search SPEC`: the highest load each case takes without loss (NDR) or within tolerances
(PDR), over a rate, replayers or cpus axis, found by trials on a warm sensor and verified."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from idsbench.spec import load_spec


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "search", help="find each case's lossless throughput (NDR/PDR) or its minimum CPUs",
        description="For every case of SPEC, search the highest offered load whose loss (every drop point "
                    "of the loss waterfall, not only capture drops) stays within each tolerance of "
                    "[search] tolerances (default [0]: NDR), to [search] precision (default 5%), over "
                    "[search] axis: rate (default; traffic.rate gives the unit and the top, topspeed = "
                    "the sender's measured maximum), replayers, or cpus (the smallest CPU allocation "
                    "that stays lossless at the case's load). Trials run on one warm sensor "
                    "([search] warm = false: a fresh sensor each); the result is verified by a "
                    "[search] final_s cold sample. Results: `idsbench results DIR` (ndr_pps, pdr, "
                    "min_cpus …) and the report.",
    )
    p.add_argument("spec", type=Path, help="experiment spec (TOML), e.g. examples/search.toml")
    p.add_argument("--out", type=Path, help="campaign directory (default results/<name>-search-<timestamp>)")
    p.add_argument("--resume", action="store_true", help="complete the search campaign in --out")
    p.add_argument("--require-quiet", action="store_true",
                   help="refuse to start when the host's noise (steal time, a CPU-bound loop's CV, frequency "
                        "changes) is larger than search.precision")
    p.add_argument("--no-report", action="store_true", help="do not write report.html at the end")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from idsbench.search.campaign import search_campaign

    spec = load_spec(args.spec)
    out = args.out or Path("results") / f"{spec.name}-search-{time.strftime('%Y%m%d-%H%M%S')}"
    if spec.mode == "duet":  # both sides' NDR from trials that feed both (search/duet.py)
        from idsbench.search.duet import search_duet_campaign

        pairs = search_duet_campaign(spec, out, resume=args.resume, require_quiet=args.require_quiet)
        print(f"duet search campaign: {out} ({len(pairs)} pairs searched)")
    else:
        result = search_campaign(spec, out, resume=args.resume, require_quiet=args.require_quiet)
        print(f"search campaign: {out} ({result.searched} cases searched, {result.skipped} already done)")
    if not args.no_report:
        from idsbench.report import write_report

        print(f"report: {write_report(out)}")
    return 0
