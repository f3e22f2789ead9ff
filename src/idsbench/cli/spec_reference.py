"""`idsbench spec-reference`: print the spec reference (docs/spec.md) generated from the spec model."""

from __future__ import annotations

import argparse
import sys


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "spec-reference", help="print every spec key with its type, default, allowed values and meaning",
        description="Print the spec reference as Markdown: every section and key of a spec file with its type, "
                    "default, allowed values and meaning, generated from the spec model (what docs/spec.md "
                    "holds; `make docs` writes it).",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from idsbench.specdoc import render

    sys.stdout.write(render())
    return 0
