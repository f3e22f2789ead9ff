"""`idsbench results DIR` (one campaign) or `idsbench results --where …` (every indexed campaign)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING

from idsbench.analysis import case_table
from idsbench.analysis.cases import DEFAULT_CV_THRESHOLD
from idsbench.analysis.duet import with_duet
from idsbench.errors import SpecError
from idsbench.report import duet_out, tables
from idsbench.report.fmt import count_text
from idsbench.store.index_paths import DEFAULT_ROOT
from idsbench.store.reader import Campaign, load_campaign
from idsbench.store.schema import CaseResult

if TYPE_CHECKING:
    from idsbench.analysis.rules import RuleTime


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "results", help="print the per-case results of a campaign, or of all indexed campaigns (--where)",
        description="Print one row per case of campaign DIR: medians over its ok samples with "
                    "confidence intervals of the median (their actual coverage, `ci_level`, depends on "
                    "the sample count: 3 samples give 75%%, 95%% needs 6), the verdict counts of its "
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
    if args.dir is None:
        return _from_index(args)
    if args.where is not None:
        raise SpecError(f"--where filters the result index, not campaign directory {args.dir}.",
                        fix=f"drop DIR (and give --root {args.dir.parent} if that is its results root), "
                            "or drop --where.")
    campaign = load_campaign(args.dir)
    if args.rules:
        sys.stdout.write(_render_rules(args.format, campaign))
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


def _render_rules(fmt: str, campaign: Campaign) -> str:
    """`results DIR --rules`: one row per case and rule (analysis/rules.py)."""
    from idsbench.analysis.rules import case_rule_time, rule_rows

    rows = [r.as_dict() for r in rule_rows(campaign)]
    if not rows:
        raise SpecError(f"{campaign.root} holds no rule profile (rule_profile.csv in an ok sample).",
                        fix="run the campaign with a profiling engine, e.g. sensor.engine = "
                            "\"suricata@8.0.6+profiling\" or \"snort+profiling\".")
    if fmt == "json":
        return json.dumps(rows, indent=1) + "\n"
    columns = ["case", "engine", "gid", "sid", "msg", "file", "category", "checks", "matches", "ticks_total",
               "ticks_avg", "ticks_max", "unit", "share", "time_share"]
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(columns)
        writer.writerows([["" if r[c] is None else r[c] for c in columns] for r in rows])
        return out.getvalue()
    lines = [f"{'sid':>9} {'total':>14} {'unit':<5} {'share':>6} {'of CPU':>8} {'checks':>9} {'matches':>7}  msg"]
    for case, group in groupby(rows, key=lambda r: r["case"]):
        lines.append(f"case {case}: {_rule_time_line(case_rule_time(campaign, str(case)))}")
        lines += [f"{r['sid']:>9} {r['ticks_total']:>14,.0f} {r['unit']:<5} {float(str(r['share'])):>6.1%} "
                  f"{_pct(r['time_share']):>8} {r['checks']:>9.0f} {count_text(r['matches']):>7}  {str(r['msg'])[:70]}"
                  for r in group]
    lines.append("share: of all rule time; of CPU: of the sensor's CPU time in the sample (medians over ok samples); "
                 "matches –: the profiler gave no count (Suricata 8 subtracts a transaction rule's \"cannot match\" checks)")
    return "\n".join(lines) + "\n"


def _pct(value: object) -> str:
    return "–" if not isinstance(value, (int, float)) else f"{value:.3%}"


def _rule_time_line(t: RuleTime | None) -> str:
    """A case's rules together against the sensor's CPU time."""
    if t is None:
        return "no rule profile"
    if t.time_share is None or t.rule_time_s is None or t.sensor_cpu_s is None:
        return f"{t.engine}, time in {t.unit}; share of the sensor's CPU time unknown: {t.why_none}"
    rate = f", TSC {t.tsc_hz / 1e9:.4f} GHz" if t.tsc_hz else ""
    line = (f"{t.engine}: the rules took {t.rule_time_s * 1e3:,.2f} ms of the sensor's {t.sensor_cpu_s:,.3f} s "
            f"CPU time ({t.time_share:.2%}{rate}; medians over {t.samples} samples)")
    warning = t.timer_warning()
    return f"{line}; {warning}" if warning else line
