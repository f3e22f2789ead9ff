"""`idsbench compare BASE CONTENDER`: matched cases of two campaigns side by side."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from idsbench.analysis import case_table, compare_tables
from idsbench.analysis.effect import DEFAULT_MIN_EFFECT_PCT, LEVEL
from idsbench.errors import SpecError
from idsbench.report import compare_out
from idsbench.store.index_paths import DEFAULT_ROOT, index_file
from idsbench.store.reader import load_campaign
from idsbench.store.schema import CaseResult


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "compare", help="compare two campaigns case by case (difference, percent, CI overlap)",
        description="Match the cases of BASE and CONTENDER by their parameters and show the medians side "
                    "by side (CIs at the coverage each sample count reaches: 95% needs 6 samples) with the "
                    "effect (ratio of the medians, its bootstrap CI at the level the samples reach) and a verdict: "
                    "higher, lower, same (no difference beyond --min-effect) or inconclusive (with the samples per "
                    "side that would settle it); below 95% (fewer than 6 samples or rounds per side) there is no "
                    "verdict, only inconclusive. "
                    "Each is a campaign directory, or a campaign id (or unique name) in the result index.",
    )
    p.add_argument("base", help="baseline: campaign directory, or campaign id in the index")
    p.add_argument("contender", nargs="?",
                   help="contender: campaign directory, or campaign id in the index; left out when BASE is a "
                        "mode = \"duet\" campaign: its side a against side b, CPU per packet judged on the "
                        "paired per-sample ratios")
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT,
                   help="results root whose index.duckdb resolves campaign ids (default results/)")
    p.add_argument("--format", choices=("table", "json", "csv", "html"), default="table",
                   help="table (default), json, csv, or a self-contained html page (redirect it to a file)")
    p.add_argument("--min-effect", type=float, default=DEFAULT_MIN_EFFECT_PCT, metavar="PCT",
                   help="smallest effect worth a verdict, in percent (default 2): 'same' when the effect's CI "
                        "stays within ±PCT, 'higher'/'lower' when it excludes 0 and the effect reaches PCT")
    p.add_argument("--level", type=float, default=LEVEL * 100, metavar="PCT",
                   help="the confidence a verdict needs, in percent (default 95: 6 samples per side; 75 with 3, "
                        "50 with 2): below it a comparison is inconclusive")
    p.add_argument("--fail-on", metavar="CONDITIONS",
                   help="a gate: e.g. \"ndr_pps:-5%%,sensor_us_per_pkt:+5%%\" exits 1 with one line per "
                        "condition that failed (the effect reaches the threshold and its CI excludes 0); "
                        "exit 0 when all pass, 2 on bad input")
    p.set_defaults(func=run)


def _cases(ref: str, root: Path) -> tuple[str, list[CaseResult]]:
    """(label, case rows): from the directory when `ref` is one (or there is no index), else from the
    index, where `ref` is a campaign id or a unique campaign name."""
    if Path(ref).is_dir() or not index_file(root).is_file():
        campaign = load_campaign(ref)
        return campaign.name, case_table(campaign)
    from idsbench.store.index_query import campaign_cases  # duckdb: only loaded when used

    return campaign_cases(root, ref)


def _level(pct: float) -> float:
    if not 50 <= pct < 100:
        raise SpecError(f"--level {pct:g} is not a confidence level in percent.",
                        fix="give one from 50 to 99.9, e.g. --level 95 (the default: 6 samples per side).")
    return pct / 100


def same_campaign(base: str, contender: str) -> bool:
    """BASE and CONTENDER name one campaign: the same directory (however written), or the same index id."""
    a, b = Path(base), Path(contender)
    if a.is_dir() and b.is_dir():
        return a.resolve() == b.resolve()
    return base == contender


def run(args: argparse.Namespace) -> int:
    from idsbench.analysis import gate

    # every argument is checked before anything is read or printed
    conditions = gate.parse_conditions(args.fail_on) if args.fail_on is not None else []
    level = _level(args.level)
    if not args.min_effect > 0:
        raise SpecError(f"--min-effect {args.min_effect} is not a positive percentage.",
                        fix="give the smallest relevant change in percent, e.g. --min-effect 2.")
    if args.contender is None:
        return _duet(args, level)
    if same_campaign(args.base, args.contender):
        print(f"idsbench: warning: BASE and CONTENDER are the same campaign ({args.base}): it is compared with "
              "itself, so every difference is 0 by construction; give two campaigns to compare.", file=sys.stderr)
    (b_name, b_rows), (c_name, c_rows) = _cases(args.base, args.root), _cases(args.contender, args.root)
    cmp = compare_tables(b_name, b_rows, c_name, c_rows, min_effect_pct=args.min_effect, level=level)
    if not cmp.rows:
        raise SpecError(
            f"no case of {args.base} matches a case of {args.contender} (matched on "
            f"{', '.join(cmp.match_keys) or 'nothing'}).",
            fix="compare campaigns that share setups, loads and traces.",
        )
    # judged before the table is printed: a condition on a metric neither side has is an error, not a table
    result = gate.check(b_name, b_rows, c_name, c_rows, conditions, level) if conditions else None
    render = {"table": compare_out.to_table, "json": compare_out.to_json, "csv": compare_out.to_csv,
              "html": compare_out.to_html}[args.format]
    sys.stdout.write(render(cmp))
    if result is None:
        return 0
    for line in (*result.notes, *result.failures):
        print(line, file=sys.stderr)
    print(f"gate: {len(result.failures)} of {result.checked} condition(s) failed "
          f"({', '.join(map(str, conditions))})", file=sys.stderr)
    return 1 if result.failures else 0


def _duet(args: argparse.Namespace, level: float) -> int:
    """`compare DUET`: a duet campaign's side a against its side b (report/duet_out.py)."""
    from idsbench.analysis.duet import duet_results
    from idsbench.report import duet_out

    if args.fail_on is not None:
        raise SpecError("--fail-on compares two campaigns; a duet campaign's verdict is its pair row's duet_verdict.",
                        fix="drop --fail-on, or compare two campaigns.")
    if not Path(args.base).is_dir():
        raise SpecError(f"compare with one argument takes a duet campaign directory; {args.base} is none.",
                        fix="give BASE and CONTENDER, or the directory of a mode = \"duet\" campaign.")
    campaign = load_campaign(args.base)
    results = duet_results(campaign, min_effect_pct=args.min_effect, level=level)
    if not results:
        raise SpecError(f"{args.base} is no duet campaign (it has no duet/ pair records), so it has nothing to "
                        "compare on its own.", fix="give a second campaign to compare it with.")
    rows = case_table(campaign)
    for result in results:
        cmp = duet_out.duet_comparison(campaign.name, rows, result)
        sys.stdout.write(duet_out.compare_text(args.format, cmp, result))
    return 0
