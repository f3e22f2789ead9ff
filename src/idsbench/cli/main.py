"""`idsbench` entry point: builds the parser from the subcommand modules and maps errors to exit codes.

Each subcommand module exposes `add_parser(subparsers)`, which registers its parser and sets
`func=<callable(args) -> int>` as the parser default.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from idsbench import __version__
from idsbench.errors import IdsbenchError

SUBCOMMANDS = ["run", "report", "results", "compare", "index", "trace", "doctor", "cleanup"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="idsbench",
        description="Reproducible performance testbed for network intrusion-detection sensors.",
    )
    parser.add_argument("--version", action="version", version=f"idsbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"idsbench.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except IdsbenchError as exc:
        print(f"idsbench: {exc.who}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("idsbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
