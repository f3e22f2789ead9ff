"""`idsbench results DIR`: print the per-case table (medians over samples, with 95% CIs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from idsbench.analysis import case_table, load_campaign
from idsbench.report import tables


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "results", help="print the per-case results of a campaign (json, csv or a table)",
        description="Print one row per case of campaign DIR: medians over its samples with 95%% "
                    "confidence intervals of the median, status, labels and warnings.",
    )
    p.add_argument("dir", type=Path, help="campaign directory (written by `idsbench run --out DIR`)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="json: an array, one object per case; csv: one line per case; table (default)")
    p.add_argument("--cv-threshold", type=float, default=0.10, metavar="X",
                   help="warn when samples disagree more than this coefficient of variation (default 0.10)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    campaign = load_campaign(args.dir)
    rows = case_table(campaign, cv_threshold=args.cv_threshold)
    render = {"json": tables.to_json, "csv": tables.to_csv, "table": tables.to_table}[args.format]
    sys.stdout.write(render(rows))
    for warning in campaign.warnings:
        print(f"idsbench: warning: {warning}", file=sys.stderr)
    return 0
