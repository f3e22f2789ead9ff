"""`idsbench compare BASE CONTENDER`: matched cases of two campaigns side by side."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from idsbench.analysis import case_table, compare_tables
from idsbench.errors import SpecError
from idsbench.report import compare_out
from idsbench.store.index_paths import DEFAULT_ROOT, index_file
from idsbench.store.reader import load_campaign
from idsbench.store.schema import CaseResult


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "compare", help="compare two campaigns case by case (difference, percent, CI overlap)",
        description="Match the cases of BASE and CONTENDER by their parameters and show the medians side "
                    "by side with the difference, the percent change and whether the CIs of the medians "
                    "overlap (each at the coverage its sample count reaches: 95%% needs 6 samples). "
                    "Each is a campaign directory, or a campaign id (or unique name) in the result index.",
    )
    p.add_argument("base", help="baseline: campaign directory, or campaign id in the index")
    p.add_argument("contender", help="contender: campaign directory, or campaign id in the index")
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT,
                   help="results root whose index.duckdb resolves campaign ids (default results/)")
    p.add_argument("--format", choices=("table", "json", "csv", "html"), default="table",
                   help="table (default), json, csv, or a self-contained html page (redirect it to a file)")
    p.set_defaults(func=run)


def _cases(ref: str, root: Path) -> tuple[str, list[CaseResult]]:
    """(label, case rows): from the directory when `ref` is one (or there is no index), else from the
    index, where `ref` is a campaign id or a unique campaign name."""
    if Path(ref).is_dir() or not index_file(root).is_file():
        campaign = load_campaign(ref)
        return campaign.name, case_table(campaign)
    from idsbench.store.index_query import campaign_cases  # duckdb: only loaded when used

    return campaign_cases(root, ref)


def run(args: argparse.Namespace) -> int:
    (b_name, b_rows), (c_name, c_rows) = _cases(args.base, args.root), _cases(args.contender, args.root)
    cmp = compare_tables(b_name, b_rows, c_name, c_rows)
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
