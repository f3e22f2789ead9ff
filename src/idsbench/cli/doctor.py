"""`idsbench doctor`: what this host can run, what is missing, and how to install it."""

from __future__ import annotations

import argparse
import os
import shutil

from idsbench import settings
from idsbench.store.environment import tcpreplay_version

Check = tuple[str, bool, str]


def checks() -> list[Check]:
    """(what, ok, detail or fix) for every prerequisite of `idsbench run`."""
    out: list[Check] = []
    root = os.geteuid() == 0
    out.append(("root", root, "running as root" if root else "run as root (namespaces, veth, cgroups need it)"))
    for prog, pkg in (("ip", "iproute2"), ("ethtool", "ethtool"), ("tcpreplay", "tcpreplay"),
                      ("sysctl", "procps"), ("tc", "iproute2")):
        path = shutil.which(prog)
        out.append((prog, path is not None, path or f"apt-get install {pkg}  (or `make setup`)"))
    out.append(("tcpreplay version", tcpreplay_version() not in ("missing", "unknown"), tcpreplay_version()))
    out += _engine_checks()
    out.append(_cgroup_check())
    netns = os.path.exists("/proc/self/ns/net")
    out.append(("network namespaces", netns, "supported" if netns else "the kernel lacks network namespaces"))
    from idsbench.setups.registry import doctor_checks

    out += doctor_checks(settings.cache_dir())
    from idsbench.setups.vfio.checks import nic_lines

    out += nic_lines()  # IOMMU group and SR-IOV per PCI NIC (vm-vfio)
    return out


def _engine_checks() -> list[Check]:
    from idsbench.errors import IdsbenchError
    from idsbench.sensors import registry

    out: list[Check] = []
    for name in registry.names():
        engine = registry.engine(name)
        try:
            engine.require()
            out.append((f"engine {name}", True, engine.version()))
        except IdsbenchError as exc:
            out.append((f"engine {name}", False, str(exc)))
    return out


def _cgroup_check() -> Check:
    from idsbench.errors import IdsbenchError
    from idsbench.infra import cgroups

    try:
        version = cgroups.detect_version()
    except IdsbenchError as exc:
        return ("cgroups", False, str(exc))
    usable = cgroups.usable_controllers()
    needed = {"cpu", "memory"}
    missing = sorted(needed - set(usable))
    detail = f"cgroup v{version}; usable controllers: {', '.join(usable) or 'none'}"
    if missing:
        detail += f"; MISSING {', '.join(missing)} (CPU/memory limits and accounting need them)"
    return ("cgroups", not missing, detail)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("doctor", help="check what this host can run and how to fix what is missing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    results = checks()
    width = max(len(name) for name, _, _ in results)
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'MISS'} {name:<{width}}  {detail}")
    needed = [n for n, ok, _ in results if not ok and not n.startswith(("setup ", "engine "))]
    needed += [n for n, ok, _ in results if not ok and n == "engine suricata"]
    return 1 if needed else 0
