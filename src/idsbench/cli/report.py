"""`idsbench report DIR`: write DIR/report.html (self-contained), DIR/figures/ and DIR/tables/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from idsbench.cli import checks


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "report", help="write a self-contained HTML report of a campaign",
        description="Analyse campaign DIR and write DIR/report.html (one file, no external URLs), the "
                    "figures as SVG and PNG in DIR/figures/ and the per-case table in DIR/tables/.",
    )
    p.add_argument("dir", type=Path, help="campaign directory (written by `idsbench run --out DIR`)")
    p.add_argument("--baseline", default="baremetal",
                   help="setup the others are compared with in the overhead section (default baremetal)")
    p.add_argument("--cv-threshold", type=float, default=0.10, metavar="X",
                   help="warn when samples disagree more than this coefficient of variation (default 0.10)")
    p.add_argument("--no-index", action="store_true",
                   help="do not (re)index the campaign into its parent's index.duckdb (see `idsbench index`)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from idsbench.report import write_report

    checks.setup_kind("--baseline", args.baseline)
    checks.positive("--cv-threshold", args.cv_threshold, "0.10")
    print(write_report(args.dir, baseline=args.baseline, cv_threshold=args.cv_threshold))
    if not args.no_index:
        from idsbench.analysis.publish import index_campaign
        from idsbench.errors import IdsbenchError

        try:  # the report is written; a busy or broken index only warrants a warning
            index_campaign(args.dir)
        except IdsbenchError as exc:
            print(f"idsbench: warning: the campaign was not indexed: {exc}", file=sys.stderr)
    return 0
