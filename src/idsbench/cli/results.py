"""`idsbench results DIR` (one campaign) or `idsbench results --where …` (every indexed campaign)."""

from __future__ import annotations

import argparse
import sys
from itertools import groupby
from pathlib import Path

from idsbench.analysis import case_table
from idsbench.analysis.cases import DEFAULT_CV_THRESHOLD
from idsbench.analysis.duet import with_duet
from idsbench.cli import checks
from idsbench.errors import SpecError
from idsbench.report import duet_out, tables
from idsbench.store.index_paths import DEFAULT_ROOT
from idsbench.store.reader import load_campaign
from idsbench.store.schema import CaseResult


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "results", help="print the per-case results of a campaign, or of all indexed campaigns (--where)",
        description="Print one row per case of campaign DIR: medians over its ok samples with "
                    "confidence intervals of the median (their actual coverage, `ci_level`, depends on "
                    "the sample count: 3 samples give 75%, 95% needs 6), the verdict counts of its "
                    "samples (ok, invalid, failed, oom, incomplete), labels and warnings. Without DIR, "
                    "print the cases of every campaign in the result index (ROOT/index.duckdb, built by "
                    "`idsbench index`), filtered by --where; each row then also names its `campaign`.",
    )
    p.add_argument("dir", type=Path, nargs="?", help="campaign directory (written by `idsbench run --out DIR`)")
    p.add_argument("--where", metavar="SQL",
                   help="SQL condition over the indexed cases, e.g. \"setup='container' and replayers=4\" "
                        "(columns: campaign, setup, trace, replayers, rate, loops, cpus, memory, status, "
                        "every median and <metric>_ci_lo/_hi …; a bad clause lists them all)")
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT,
                   help="results root whose index.duckdb is queried (default results/)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="json: an array, one object per case; csv: one line per case; table (default)")
    p.add_argument("--cv-threshold", type=float, default=DEFAULT_CV_THRESHOLD, metavar="X",
                   help="warn when samples disagree more than this coefficient of variation (default 0.10)")
    p.add_argument("--rules", action="store_true",
                   help="per case and rule, what the rule profiler counted (suricata@8.0.6+profiling: CPU "
                        "ticks; snort+profiling: µs, no maximum): sid, msg, file, checks, matches, "
                        "ticks_total/avg/max in `unit`, share of all rule time, time_share of the sensor's "
                        "CPU time, medians over the ok samples, costliest first")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    checks.positive("--cv-threshold", args.cv_threshold, "0.10")
    if args.dir is None:
        return _from_index(args)
    if args.where is not None:
        raise SpecError(f"--where filters the result index, not campaign directory {args.dir}.",
                        fix=f"drop DIR (and give --root {args.dir.parent} if that is its results root), "
                            "or drop --where.")
    campaign = load_campaign(args.dir)
    if args.rules:
        from idsbench.report import rules_out

        sys.stdout.write(rules_out.render(args.format, campaign))
        return 0
    rows = case_table(campaign, cv_threshold=args.cv_threshold)
    rows, pairs = with_duet(campaign, rows)  # a duet campaign: side rows marked, one row per pair
    sys.stdout.write(duet_out.results_text(args.format, rows, pairs) if pairs else _render(args.format, rows))
    for warning in campaign.warnings:
        print(f"idsbench: warning: {warning}", file=sys.stderr)
    return 0


def _from_index(args: argparse.Namespace) -> int:
    from idsbench.store.index_query import query_cases  # duckdb: only loaded when used

    if args.cv_threshold != DEFAULT_CV_THRESHOLD:
        raise SpecError("--cv-threshold applies to `results DIR` only: the index stores warnings computed "
                        f"at the default {DEFAULT_CV_THRESHOLD}.",
                        fix="run `idsbench results DIR --cv-threshold X` on the campaign directory.")
    rows = query_cases(args.root, args.where)
    if args.format != "table":
        export = tables.to_json if args.format == "json" else tables.to_csv
        sys.stdout.write(export([r for _, r in rows], [cid for cid, _ in rows]))
        return 0
    if not rows:
        print(f"no indexed case matches {args.where!r}" if args.where else "the index holds no case")
    for cid, group in groupby(rows, key=lambda r: r[0]):
        print(f"campaign {cid}")
        sys.stdout.write(tables.to_table([r for _, r in group]))
    return 0


def _render(fmt: str, rows: list[CaseResult]) -> str:
    return {"json": tables.to_json, "csv": tables.to_csv, "table": tables.to_table}[fmt](rows)
