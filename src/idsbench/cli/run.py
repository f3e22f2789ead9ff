"""`idsbench run SPEC`: run a campaign and write its results (and the report) to a directory."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from idsbench.analysis.warnings import ci_warning
from idsbench.spec import load_spec


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "run", help="run a benchmark campaign from a TOML spec",
        description="Run every case × sample of SPEC on the embedded wire and write the results to DIR.",
    )
    p.add_argument("spec", type=Path, help="experiment spec (TOML), e.g. examples/quick.toml")
    p.add_argument("--out", type=Path, help="campaign directory (default results/<name>-<timestamp>)")
    p.add_argument("--resume", action="store_true",
                   help="complete the campaign in --out, skipping samples that already finished")
    p.add_argument("--require-quiet", action="store_true",
                   help="refuse to start when the host's noise (steal time, a CPU-bound loop's CV, frequency "
                        "changes) is larger than search.precision")
    p.add_argument("--no-report", action="store_true", help="do not write report.html at the end")
    p.add_argument("--ask-become-pass", action="store_true",
                   help="[hosts] specs: prompt for the hosts' sudo password (hosts with ansible_become)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from idsbench.dispatch import run_campaign  # heavy imports only when running

    spec = load_spec(args.spec)
    if args.resume and not args.out:
        print("idsbench: --resume needs --out DIR (the campaign to complete)", file=sys.stderr)
        return 2
    out = args.out or Path("results") / f"{spec.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if (warning := ci_warning(spec.samples)) is not None:
        print(f"idsbench: warning: {warning}", file=sys.stderr)
    password = None
    if args.ask_become_pass:
        import getpass

        password = getpass.getpass("BECOME (sudo) password: ")
    result = run_campaign(spec, out, resume=args.resume, become_password=password, require_quiet=args.require_quiet)
    print(f"campaign: {out} ({result.ran} samples run, {result.skipped} already complete)")
    for line in result.failed:
        print(f"  failed: {line}")
    for line in result.warnings[:20]:
        print(f"  warning: {line}")
    if len(result.warnings) > 20:
        print(f"  … {len(result.warnings) - 20} more warnings in the sample summaries")
    if not args.no_report:
        from idsbench.report import write_report

        print(f"report: {write_report(out)}")
    return 0 if not result.failed else 1
