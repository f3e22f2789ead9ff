"""`idsbench cleanup`: remove what killed runs left behind (processes, namespaces, links, cgroups)."""

from __future__ import annotations

import argparse
from pathlib import Path

from idsbench.teardown import cleanup_stale, state_dir_from_env


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "cleanup", help="remove leftovers of interrupted runs",
        description="Remove the processes, network namespaces, links and cgroups that runs killed "
                    "before their teardown (e.g. by SIGKILL) left behind, as listed in their state files.",
    )
    p.add_argument("--state-dir", type=Path, help="state directory (default /run/idsbench or $IDSBENCH_STATE_DIR)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    removed, failures = cleanup_stale(args.state_dir or state_dir_from_env())
    for line in removed:
        print(f"removed {line}")
    for line in failures:
        print(f"could not remove {line}")
    if not removed and not failures:
        print("nothing to clean up")
    return 1 if failures else 0
