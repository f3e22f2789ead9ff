"""`idsbench lab up|down|status`: sender/sensor test hosts on this machine (containers over SSH)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("lab", help="build or remove a local lab of SSH test hosts",
                              description="A lab: per pair a sender and a sensor host (podman containers with "
                                          "their own root filesystem, running sshd) on a management network, "
                                          "and a veth wire per pair. Its inventory drives `idsbench run` with "
                                          "[hosts] like real hosts.")
    sub = p.add_subparsers(dest="lab_command", metavar="ACTION")
    up = sub.add_parser("up", help="build the lab and write its inventory")
    up.add_argument("--pairs", type=int, default=1, help="sender/sensor pairs (default 1)")
    up.add_argument("--inventory", type=Path, required=True, help="where to write the Ansible inventory (YAML)")
    up.add_argument("--name", help="lab name (default <prefix>lab, e.g. iblab)")
    up.add_argument("--mtu", type=int, default=1500, help="MTU of the pair wires (default 1500)")
    up.set_defaults(func=run_up)
    down = sub.add_parser("down", help="remove everything a lab built")
    which = down.add_mutually_exclusive_group()
    which.add_argument("--name", help="lab name (default <prefix>lab)")
    which.add_argument("--all", action="store_true", help="every lab of this machine")
    down.set_defaults(func=run_down)
    status = sub.add_parser("status", help="the labs of this machine and their hosts")
    status.set_defaults(func=run_status)
    vfio = sub.add_parser("vfio", help="the nested VFIO lab: run a spec's vm/vm-vfio cases inside an emulated "
                                       "host with an IOMMU and an SR-IOV NIC (TCG: slow; see README)",
                          description="Boots an outer VM under TCG (q35, intel-iommu, an igb SR-IOV NIC and a "
                                      "virtio sender port on one wire) and runs SPEC's campaign inside it "
                                      "(setup.sriov_pf and wire.sender_interface are filled in). Results in "
                                      "OUT/campaign, labelled emulated; OUT/inner.json lists anything left behind.")
    vfio.add_argument("spec", type=Path, help="the campaign spec (e.g. examples/vfio-lab.toml)")
    vfio.add_argument("--out", type=Path, required=True, help="output directory")
    vfio.add_argument("--memory", type=int, help="outer VM memory in MiB (default 2560; at most 2815, which keeps "
                      "all of it below 4 GiB)")
    vfio.add_argument("--vcpus", type=int, default=2, help="outer VM vCPUs (default 2)")
    vfio.set_defaults(func=run_vfio)
    p.set_defaults(func=lambda _a: _usage(p))


def run_up(args: argparse.Namespace) -> int:
    from idsbench.lab import lab

    record = lab.up(args.pairs, args.inventory, name=args.name, mtu=args.mtu, log=lambda line: print(f"lab: {line}"))
    for h in record.hosts:
        cpus = ",".join(map(str, h.cpus)) if h.cpus else "all"
        print(f"{h.name:<12} {h.role:<7} {h.address:<15} container {h.container}, netns {h.netns}, cpus {cpus}")
    print(f"inventory: {record.inventory}")
    print(f"known_hosts: {record.known_hosts} (the lab's own host keys)")
    print(f"next: idsbench hosts provision --inventory {record.inventory}")
    return 0


def run_down(args: argparse.Namespace) -> int:
    from idsbench.lab import lab

    names = lab.all_labs() if args.all else [args.name or lab.default_name()]
    failed = 0
    for name in names:
        removed, failures = lab.down(name)
        print(f"lab {name}: removed {len(removed)} resource(s)")
        for line in failures:
            print(f"  could not remove {line}")
        failed += len(failures)
    if not names:
        print("no lab")
    return 1 if failed else 0


def run_status(args: argparse.Namespace) -> int:
    from idsbench.lab import lab

    names = lab.all_labs()
    for name in names:
        record = lab.load(name)
        print(f"lab {name}: {record.subnet}, inventory {record.inventory}")
        for h in record.hosts:
            pid = lab.container_pid(record, h.name)
            print(f"  {h.name:<12} {h.role:<7} {h.address:<15} {'running (pid ' + str(pid) + ')' if pid else 'stopped'}")
    if not names:
        print("no lab")
    return 0


def run_vfio(args: argparse.Namespace) -> int:
    from idsbench.lab.vfio import LabOptions, run_lab

    options = LabOptions(vcpus=args.vcpus, **({"memory_mib": args.memory} if args.memory else {}))
    run = run_lab(args.spec, args.out, options=options,
                  log=lambda line: print(f"lab vfio: {line}"))
    g, inner = run.guest, run.inner
    print(f"lab vfio: outer VM booted in {g.boot_s:.0f} s, command ran {g.run_s:.0f} s (exit {g.exit_code}"
          f"{', timed out' if g.timed_out else ''}); whole lab {run.wall_s:.0f} s")
    if inner is not None and inner.error is not None:
        print(f"lab vfio: the campaign inside failed: {inner.error}")
    for line in inner.leftovers if inner is not None else ():
        print(f"lab vfio: LEFT BEHIND {line}")
    for line in run.problems:
        print(f"lab vfio: NOT AS EXPECTED {line}")
    if run.qemu_events:
        print("lab vfio: outer qemu's data-path events: " + ", ".join(f"{k} {v}" for k, v in sorted(run.qemu_events.items())))
    if g.failure:
        print(f"lab vfio: {g.failure}\n{g.console_tail}")
    print(f"results: idsbench results {run.out_dir / 'campaign'}")
    return 0 if run.ok else 1


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2
