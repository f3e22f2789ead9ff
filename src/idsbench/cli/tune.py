"""`idsbench tune plan`: a tuned Suricata overlay and host plan for a probed topology."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from idsbench import settings
from idsbench.errors import SpecError
from idsbench.probe.collect import collect as collect_probe
from idsbench.probe.diff import load as load_probe
from idsbench.spec import parse_size
from idsbench.tune import ansible, render
from idsbench.tune.apply import apply_plan, require_root
from idsbench.tune.model import PlanOptions
from idsbench.tune.overlay import base_config
from idsbench.tune.plan import make_plan

FORMATS = ("json", "yaml", "shell", "ansible")


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add_parser(subparsers: Any) -> None:
    tune = subparsers.add_parser("tune", help="tuning plans for the sensor and its host")
    sub = tune.add_subparsers(dest="tune_command", metavar="ACTION")
    p = sub.add_parser(
        "plan", help="a Suricata overlay + host plan (ethtool, IRQs, boot line) for a probed host",
        description="Plan a tuned Suricata configuration (runmode, af-packet, CPU affinity on the NIC's "
        "NUMA node, memcaps) and the host settings that go with it (RSS queues and symmetric key, "
        "offloads, rings, coalescing, IRQ affinity, irqbalance, isolcpus). Every knob says why.")
    p.add_argument("--host", type=Path, metavar="PROBE.json",
                   help="plan for this probe (a file or campaign dir; default: probe this host now)")
    p.add_argument("--cpus", type=int, metavar="N", help="worker CPUs for the sensor (default: the NIC's node)")
    p.add_argument("--iface", metavar="IF", help="the capture interface (default: the probe's only one)")
    p.add_argument("--memory", type=_size, metavar="BYTES", help="the sensor's memory budget (e.g. 16g)")
    p.add_argument("--rate-pps", type=int, metavar="R", help="expected packet rate (default: line rate)")
    p.add_argument("--flows", type=int, metavar="N", help="expected concurrent flows")
    p.add_argument("--format", choices=FORMATS, default="json")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="write the output there (ansible: the role; --apply: the undo script)")
    p.add_argument("--apply", action="store_true",
                   help="apply the safe subset (ethtool, IRQ affinity of --iface) on THIS host")
    p.add_argument("--yes", action="store_true", help="with --apply: do not ask for confirmation")
    p.set_defaults(func=run_plan)
    tune.set_defaults(func=lambda _args: tune.print_help() or 2)


def _confirm(yes: bool) -> Any:
    def ask(question: str) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            raise SpecError("--apply asks for confirmation, but there is no terminal to ask on.",
                            fix="review the plan, then add --yes.")
        return input(question).strip().lower() in ("y", "yes")
    return ask


def run_plan(args: argparse.Namespace) -> int:
    if args.apply and args.host:
        raise SpecError("--apply changes THIS host, but --host plans for a probe file.",
                        fix="run `idsbench tune plan --iface IF --apply` on the host itself.")
    if args.yes and not args.apply:
        raise SpecError("--yes only applies to --apply.", fix="add --apply, or drop --yes.")
    if args.format == "ansible" and not args.out:
        raise SpecError("--format ansible writes a role directory.", fix="add --out DIR.")
    if args.host:
        host = load_probe(args.host)
    else:
        host = collect_probe([args.iface] if args.iface else [], sensor=False)
    options = PlanOptions(cpus=args.cpus, iface=args.iface, memory_bytes=args.memory,
                          rate_pps=args.rate_pps, flows=args.flows)
    plan = make_plan(host, options)
    for warning in plan.warnings:
        print(f"idsbench: warning: {warning}", file=sys.stderr)
    base = base_config()
    if args.format == "ansible":
        for path in ansible.write_role(plan, args.out, base):
            print(path)
    else:
        text = {"json": render.to_json(plan), "yaml": render.to_yaml(plan, base),
                "shell": render.to_shell(plan)}[args.format]
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            target = args.out / {"json": "tuning.json", "yaml": "tuning.yaml", "shell": "tuning.sh"}[args.format]
            target.write_text(text if text.endswith("\n") else text + "\n")
            print(target)
        else:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
    if args.apply:
        require_root()
        result = apply_plan(plan, args.out or settings.state_dir() / "tune", confirm=_confirm(args.yes),
                            out=sys.stderr)
        return 1 if result.failed else 0
    return 0
