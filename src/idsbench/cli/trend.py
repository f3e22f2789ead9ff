"""`idsbench trend [--index DIR | DIRS...]`: each case over many campaigns, its changes and why."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from idsbench.analysis.effect import DEFAULT_MIN_EFFECT_PCT
from idsbench.cli import checks
from idsbench.errors import SpecError
from idsbench.store.index_paths import DEFAULT_ROOT, index_file


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from idsbench.metrics import TREND_METRICS

    p = subparsers.add_parser(
        "trend", help="one case over many campaigns: changes found (jumpavg), judged by effect size, explained",
        description="Follow each case across campaigns (the result index, or the campaign directories "
                    "given): per metric its medians with CIs in time order, segments found by jumpavg and "
                    "confirmed by the effect-size rules of `compare` (--min-effect), each change classed "
                    "regression or progression with its size and what differed (build, rules, config, host).",
    )
    p.add_argument("dirs", nargs="*", type=Path, help="campaign directories (instead of the index)")
    p.add_argument("--index", type=Path, metavar="DIR",
                   help=f"results root whose index.duckdb is read (default {DEFAULT_ROOT}/ when no DIRS)")
    p.add_argument("--metric", action="append", metavar="NAME",
                   help=f"a metric to follow (repeatable; default: {', '.join(TREND_METRICS)})")
    p.add_argument("--case", metavar="TEXT", help="only cases whose id contains TEXT")
    p.add_argument("--series", metavar="ID", help="only the series with this key id (index: a fast lookup)")
    p.add_argument("--min-effect", type=float, default=DEFAULT_MIN_EFFECT_PCT, metavar="PCT",
                   help="smallest change worth reporting, in percent (default 2)")
    p.add_argument("--format", choices=("table", "json", "html"), default="table",
                   help="table (default), json (docs/trend.schema.json), or a self-contained html page")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 (one line per series) when a series' newest segment began with a regression")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from idsbench.analysis import trend as tr
    from idsbench.analysis.trend_load import from_dirs, from_index
    from idsbench.metrics import TREND_METRICS
    from idsbench.report import trend_out

    if not args.min_effect > 0:
        raise SpecError(f"--min-effect {args.min_effect} is not a positive percentage.",
                        fix="give the smallest relevant change in percent, e.g. --min-effect 2.")
    if args.dirs and args.index is not None:
        raise SpecError("give either --index DIR or campaign directories, not both.",
                        fix="drop --index to follow the directories given, or drop the directories.")
    metrics = tuple(args.metric or TREND_METRICS)
    checks.metric_names("--metric", metrics)
    if args.dirs:
        cases, explain = from_dirs(args.dirs)
    else:
        root = args.index if args.index is not None else DEFAULT_ROOT
        if not index_file(root).is_file():
            raise SpecError(f"there is no result index at {index_file(root)}.",
                            fix=f"build it with `idsbench index {root}`, or give campaign directories.")
        cases, explain = from_index(root, args.series.split("/")[0] if args.series else None)
    if args.case:
        cases = [c for c in cases if args.case in c.result.case]
    series = tr.build_series(cases, metrics, min_effect_pct=args.min_effect, explain=explain)
    if args.series:
        series = [s for s in series if s.series_id == args.series or s.series_id.startswith(args.series + "/")
                  or s.series_id.split("/")[0] == args.series]
    failures = tr.regression_failures(series, args.min_effect) if args.fail_on_regression else []
    render = {"table": trend_out.to_table, "json": trend_out.to_json}
    sys.stdout.write(trend_out.to_html(series, failures) if args.format == "html" else render[args.format](series))
    for line in failures:
        print(line, file=sys.stderr)
    if args.fail_on_regression:
        print(f"gate: {len(failures)} series regressed (of {len(series)})", file=sys.stderr)
    return 1 if failures else 0
