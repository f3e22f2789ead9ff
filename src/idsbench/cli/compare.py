"""`idsbench compare BASE CONTENDER`: matched cases of two campaigns side by side."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from idsbench.analysis import compare_campaigns, load_campaign
from idsbench.errors import SpecError
from idsbench.report import compare_out


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="compare two campaigns case by case (difference, percent, CI overlap)",
        description="Match the cases of BASE and CONTENDER by their parameters and show the medians side "
                    "by side with the difference, the percent change and whether the 95%% CIs overlap.",
    )
    p.add_argument("base", type=Path, help="baseline campaign directory")
    p.add_argument("contender", type=Path, help="contender campaign directory")
    p.add_argument("--format", choices=("table", "json", "csv", "html"), default="table",
                   help="table (default), json, csv, or a self-contained html page (redirect it to a file)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    cmp = compare_campaigns(load_campaign(args.base), load_campaign(args.contender))
    if not cmp.rows:
        raise SpecError(
            f"no case of {args.base} matches a case of {args.contender} (matched on "
            f"{', '.join(cmp.match_keys) or 'nothing'}).",
            fix="compare campaigns that share setups, loads and traces.",
        )
    render = {"table": compare_out.to_table, "json": compare_out.to_json, "csv": compare_out.to_csv,
              "html": compare_out.to_html}[args.format]
    sys.stdout.write(render(cmp))
    return 0
