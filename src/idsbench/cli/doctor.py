"""`idsbench doctor`: what this host can run, what is missing, and how to install it."""

from __future__ import annotations

import argparse
import os
import shutil

from idsbench.store.environment import cgroup_version, tcpreplay_version


def checks() -> list[tuple[str, bool, str]]:
    """(what, ok, detail or fix) for every prerequisite of `idsbench run`."""
    out: list[tuple[str, bool, str]] = []
    root = os.geteuid() == 0
    out.append(("root", root, "running as root" if root else "run as root (namespaces, veth, cgroups need it)"))
    for prog, pkg in (("ip", "iproute2"), ("ethtool", "ethtool"), ("tcpreplay", "tcpreplay"),
                      ("sysctl", "procps")):
        path = shutil.which(prog)
        out.append((prog, path is not None, path or f"apt-get install {pkg}  (or `make setup`)"))
    suricata = shutil.which("suricata")
    if suricata:
        from idsbench.sensors.suricata import Suricata

        info = Suricata().build_info()
        af = bool(info.get("af_packet"))
        out.append(("suricata", af, f"{info.get('version')} af-packet={'yes' if af else 'NO'}"))
    else:
        out.append(("suricata", False, "Debian: enable <codename>-backports and "
                    "`apt-get install -t <codename>-backports suricata`; Ubuntu: `apt-get install "
                    "suricata` (`make setup` does it)"))
    out.append(("tcpreplay version", tcpreplay_version() not in ("missing", "unknown"), tcpreplay_version()))
    cg = cgroup_version()
    out.append(("cgroups", cg != "none", f"cgroup {cg}" if cg != "none" else "mount cgroup v1 or v2"))
    netns = os.path.exists("/proc/self/ns/net")
    out.append(("network namespaces", netns, "supported" if netns else "the kernel lacks network namespaces"))
    out.append(("setup baremetal", True, "usable"))
    out += _container_checks()
    from idsbench.run.context import default_cache_dir
    from idsbench.setups.vm_qemu import doctor_check

    out.append(("setup vm", *doctor_check(default_cache_dir())))
    return out


def _container_checks() -> list[tuple[str, bool, str]]:
    from idsbench.proc import Supervisor
    from idsbench.run.context import default_cache_dir
    from idsbench.setups.container_runtime import doctor_checks
    from idsbench.teardown import TeardownStack

    return doctor_checks(Supervisor(TeardownStack()), default_cache_dir())


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("doctor", help="check what this host can run and how to fix what is missing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    results = checks()
    width = max(len(name) for name, _, _ in results)
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'MISS'} {name:<{width}}  {detail}")
    needed = [n for n, ok, _ in results if not ok and not n.startswith("setup ")]
    return 1 if needed else 0
