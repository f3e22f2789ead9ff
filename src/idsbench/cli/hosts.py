"""`idsbench hosts check|trust|provision`: the sender/sensor hosts of an inventory (or a spec's [hosts])."""

from __future__ import annotations

import argparse
import getpass
import sys
from dataclasses import dataclass
from pathlib import Path

from idsbench.errors import SpecError


@dataclass(frozen=True)
class Target:
    inventory: object  # hosts.inventory.Inventory (imported lazily)
    inventory_file: Path | None
    known_hosts: Path
    tune: Path | None


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("hosts", help="check, trust and provision remote sender/sensor hosts",
                              description="Work on the hosts of an Ansible inventory (or of a spec's [hosts]).")
    sub = p.add_subparsers(dest="hosts_command", metavar="ACTION")

    def common(q: argparse.ArgumentParser) -> None:
        src = q.add_mutually_exclusive_group(required=True)
        src.add_argument("--inventory", type=Path, help="Ansible inventory (YAML), e.g. the one `lab up` wrote")
        src.add_argument("--spec", type=Path, help="a spec whose [hosts] names the hosts")
        q.add_argument("--known-hosts", type=Path,
                       help="known_hosts file (default: the inventory's idsbench_known_hosts, else "
                            "<cache>/hosts/known_hosts)")

    c = sub.add_parser("check", help="per host: what is ready, what is missing and the fix")
    common(c)
    c.set_defaults(func=check)
    t = sub.add_parser("trust", help="show the hosts' key fingerprints and record them in known_hosts")
    common(t)
    t.add_argument("--yes", action="store_true", help="record without asking")
    t.add_argument("--replace", action="store_true", help="also replace CHANGED keys (only when you know why)")
    t.set_defaults(func=trust)
    v = sub.add_parser("provision", help="install Suricata/tcpreplay where missing and this idsbench build (Ansible)")
    common(v)
    v.add_argument("--ask-become-pass", action="store_true", help="prompt for the sudo password of the hosts")
    v.add_argument("--tune", type=Path, help="an Ansible role (`idsbench tune plan --format ansible --out DIR`) "
                                             "applied to the sensor hosts")
    v.set_defaults(func=provision)
    p.set_defaults(func=lambda _a: _usage(p))


def _target(args: argparse.Namespace) -> Target:
    from idsbench.hosts import hostkeys
    from idsbench.hosts.campaign import hosts_inventory, known_hosts_file
    from idsbench.hosts.inventory import load_inventory
    from idsbench.spec import load_spec

    tune = getattr(args, "tune", None)
    if args.spec:
        spec = load_spec(args.spec)
        if spec.hosts is None:
            raise SpecError(f"{args.spec} has no [hosts] section.", fix="add one, or pass --inventory FILE.")
        inv = hosts_inventory(spec)
        file = spec.resolve_path(spec.hosts.inventory) if spec.hosts.inventory else None
        known = args.known_hosts or known_hosts_file(spec, inv)
        tune = tune or (spec.resolve_path(spec.hosts.tune) if spec.hosts.tune else None)
        return Target(inv, file, known, tune)
    inv = load_inventory(args.inventory)
    return Target(inv, args.inventory, args.known_hosts or inv.known_hosts or hostkeys.default_known_hosts(), tune)


def check(args: argparse.Namespace) -> int:
    from idsbench.hosts.check import check_hosts, render
    from idsbench.hosts.inventory import Inventory

    t = _target(args)
    assert isinstance(t.inventory, Inventory)
    items = check_hosts(list(t.inventory.hosts), t.known_hosts)
    print(render(items))
    missing = sum(not i.ok for i in items)
    print(f"{len(t.inventory.hosts)} host(s), {missing} item(s) missing" if missing else
          f"{len(t.inventory.hosts)} host(s) ready")
    return 1 if missing else 0


def trust(args: argparse.Namespace) -> int:
    from idsbench.hosts import hostkeys
    from idsbench.hosts.inventory import Inventory

    t = _target(args)
    assert isinstance(t.inventory, Inventory)
    statuses = hostkeys.check(list(t.inventory.hosts), t.known_hosts)
    for s in statuses:
        print(s.describe())
    todo = [s for s in statuses if s.state == "unknown" or (s.state == "changed" and args.replace)]
    if not todo:
        print(f"nothing to record in {t.known_hosts}")
        return 1 if any(s.state in ("changed", "unreachable") for s in statuses) else 0
    if not args.yes:
        if not sys.stdin.isatty():
            raise SpecError("hosts trust needs a confirmation and stdin is not a terminal.",
                            fix="compare the fingerprints above with the hosts', then pass --yes.")
        answer = input(f"record these {len(todo)} host key(s) in {t.known_hosts}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing recorded")
            return 1
    for line in hostkeys.trust(todo, t.known_hosts, replace=args.replace):
        print(f"recorded {line}")
    return 0


def provision(args: argparse.Namespace) -> int:
    from idsbench import settings
    from idsbench.hosts.inventory import Inventory
    from idsbench.hosts.provision import provision as run_provision

    t = _target(args)
    assert isinstance(t.inventory, Inventory)
    password = getpass.getpass("BECOME (sudo) password: ") if args.ask_become_pass else None
    result = run_provision(t.inventory, t.inventory_file, t.known_hosts, settings.cache_dir(), tune_role=t.tune,
                           become_password=password, log_dir=settings.cache_dir() / "hosts")
    for host, n in sorted(result.changed.items()):
        print(f"{host}: {n} change(s)")
    for line in result.failures:
        print(f"failed: {line}")
    if result.log:
        print(f"ansible log: {result.log}")
    print("provisioned" if result.ok else "provisioning failed")
    return 0 if result.ok else 1


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2
