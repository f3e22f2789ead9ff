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

SUBCOMMANDS = ["run", "search", "report", "results", "compare", "gate", "index", "trend", "trace", "doctor", "cleanup",
               "probe", "tune", "hosts", "lab", "spec-reference"]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or with `only` just that subcommand's (so `idsbench trace ...` does not
    import the modules of every other subcommand: pandas, matplotlib... cost ~0.4 s)."""
    parser = argparse.ArgumentParser(
        prog="idsbench",
        description="Reproducible performance testbed for network intrusion-detection sensors.",
    )
    parser.add_argument("--version", action="version", version=f"idsbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if only is None else [only]:
        importlib.import_module(f"idsbench.cli.{name.replace('-', '_')}").add_parser(subparsers)
    return parser


def _subcommand(argv: list[str]) -> str | None:
    """The subcommand named by the first argument, if the command line starts with one."""
    return argv[0] if argv and argv[0] in SUBCOMMANDS else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(_subcommand(argv))
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
