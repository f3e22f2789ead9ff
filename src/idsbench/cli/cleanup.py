"""`idsbench cleanup`: remove what killed runs left behind (processes, namespaces, links, cgroups)."""

from __future__ import annotations

import argparse
from pathlib import Path

from idsbench import settings
from idsbench.teardown import cleanup_stale


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "cleanup", help="remove leftovers of interrupted runs",
        description="Remove the processes, network namespaces, links, cgroups, containers, daemons and "
                    "VM directories that runs killed before their teardown (e.g. by SIGKILL) left "
                    "behind, as listed in their state files. Nothing else is touched: names that look "
                    "like idsbench's but are not recorded survive.",
    )
    p.add_argument("--state-dir", type=Path, help="state directory (default /run/idsbench or $IDSBENCH_STATE_DIR)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    removed, failures = cleanup_stale(args.state_dir or settings.state_dir())
    for line in removed:
        print(f"removed {line}")
    for line in failures:
        print(f"could not remove {line}")
    if not removed and not failures:
        print("nothing to clean up")
    return 1 if failures else 0
