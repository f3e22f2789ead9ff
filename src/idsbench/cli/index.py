"""`idsbench index [ROOT]`: (re)index every campaign under a results root into ROOT/index.duckdb."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from idsbench.store.index_paths import DEFAULT_ROOT, index_file
from idsbench.store.layout import CAMPAIGN_FILE

if TYPE_CHECKING:
    from idsbench.store.index import IndexResult


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "index", help="index all campaigns under a results root (for `results --where` and `compare`)",
        description="Write ROOT/index.duckdb: campaigns, per-case results and per-sample figures of every "
                    "campaign under ROOT, and each campaign's time series as Parquet in <campaign>/series/. "
                    "Only campaigns whose summaries changed are read again. Raw eve.json is not needed.",
    )
    p.add_argument("root", nargs="?", type=Path, default=DEFAULT_ROOT,
                   help="results root holding campaign directories (default results/); a campaign "
                        "directory is indexed into its parent's index")
    p.add_argument("--rebuild", action="store_true", help="re-read every campaign, changed or not")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from idsbench.analysis.publish import index_campaign, index_root  # duckdb: loaded when used

    root: Path = args.root
    if (root / CAMPAIGN_FILE).is_file():
        results = [index_campaign(root, force=args.rebuild)]
        where = index_file(root.resolve().parent)
    else:
        results = index_root(root, force=args.rebuild)
        where = index_file(root)
    for r in results:
        print(_line(r))
        for w in r.warnings:
            print(f"idsbench: warning: {r.campaign_id}: {w}", file=sys.stderr)
    counts = {a: sum(r.action == a for r in results) for a in ("indexed", "unchanged", "removed", "failed")}
    print(f"{where}: " + ", ".join(f"{n} {a}" for a, n in counts.items() if n) if results
          else f"{where}: no campaign (no {CAMPAIGN_FILE}) under {root}")
    return 0


def _line(r: IndexResult) -> str:
    if r.action in ("removed", "failed"):
        return f"{r.action:9}  {r.campaign_id}"
    extra = f", {r.incomplete} incomplete" if r.incomplete else ""
    return f"{r.action:9}  {r.campaign_id}  ({r.cases} cases, {r.samples} samples{extra})"
