"""`idsbench probe`: what about this host can change a result; `--diff A B`: what changed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from idsbench.errors import SpecError
from idsbench.probe.collect import collect
from idsbench.probe.diff import diff_paths
from idsbench.probe.render import summary


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "probe", help="record the host (CPU, NUMA, hypervisor, boot line, NIC, timers, sensor build)",
        description="Probe this host: CPU/NUMA topology, hypervisor, kernel and boot parameters, "
        "frequency, clocksource, THP, cgroups, irqbalance, timer costs, the sensor's build, and "
        "per interface driver/queues/RSS/offloads/IRQs. With --diff A B: what differs between two "
        "probe files or campaigns (exit 1 when something relevant differs).")
    p.add_argument("--json", action="store_true", help="print the probe as JSON (the stored format)")
    p.add_argument("--iface", action="append", default=[], metavar="IF",
                   help="also probe this interface (repeatable)")
    p.add_argument("--netns", metavar="NS", help="look the interfaces up in this network namespace")
    p.add_argument("--no-sensor", action="store_true", help="skip the sensor's --build-info")
    p.add_argument("--diff", nargs=2, metavar=("A", "B"), type=Path,
                   help="compare two probe JSON files or campaign directories")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.diff:
        if args.iface or args.netns or args.json:
            raise SpecError("--diff compares two stored probes; --iface/--netns/--json do not apply.",
                            fix="run `idsbench probe --diff A B` alone.")
        a, b = args.diff
        differences = diff_paths(a, b)
        if not differences:
            print(f"no relevant difference between {a} and {b}")
            return 0
        print(f"{len(differences)} difference(s) from {a} to {b}:")
        for d in differences:
            print(f"  {d}")
        return 1
    if args.netns and not args.iface:
        raise SpecError("--netns names where to find interfaces, but no --iface was given.",
                        fix="add --iface IF for each interface to probe inside the namespace.")
    host = collect(args.iface, netns=args.netns, sensor=not args.no_sensor)
    if args.json:
        sys.stdout.write(host.to_json() + "\n")
    else:
        print(summary(host))
    return 0
