"""What vm-vfio needs of a host, checked before any sample (preflight) and by `idsbench doctor`.

Every problem names what is missing and how to enable it (probe/iommu.py holds the sysfs logic and
the texts; `root` points at a fake tree in tests).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from idsbench import proc
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.probe.iommu import (
    Problem,
    device_problems,
    hugepage_problems,
    interface_bdf,
    iommu_facts,
    iommu_problems,
    pci_device,
    sriov_problems,
)

if TYPE_CHECKING:
    from idsbench.spec import Spec

DEFAULT_MEMORY = 1024**3  # the vm setup's default guest RAM


def interface_bdf_anywhere(ifname: str, netns: str | None = None, root: Path = Path("/")) -> str | None:
    """The PCI function of an interface, also inside a namespace (whose sysfs only `ip netns exec` shows)."""
    if netns is None:
        return interface_bdf(ifname, root)
    done = proc.run(["readlink", f"/sys/class/net/{ifname}/device"], netns=netns, check=False)
    name = Path(done.stdout.strip()).name
    return name or None


def passthrough_problems(*, vfio_device: str | None, sriov_pf: str | None, memory_bytes: int,
                         hugepages: bool, root: Path = Path("/")) -> list[Problem]:
    """Everything this host lacks for the vm-vfio setup (empty: it can run)."""
    facts = iommu_facts(root)
    problems = iommu_problems(facts)
    if vfio_device is not None:
        problems += device_problems(pci_device(vfio_device, root), what=f"setup.vfio_device {vfio_device}")
    if sriov_pf is not None:
        bdf = interface_bdf(sriov_pf, root)
        if bdf is None:
            problems.append(Problem("setup.sriov_pf", f"{sriov_pf} is not a PCI network interface of this host "
                                    f"(/sys/class/net/{sriov_pf}/device)",
                                    "name the PF of an SR-IOV NIC (`ls /sys/class/net/*/device/sriov_totalvfs`)"))
        else:
            problems += sriov_problems(pci_device(bdf, root), sriov_pf)
    if hugepages:
        problems += hugepage_problems(facts, memory_bytes)
    return problems


def require_passthrough(spec: Spec, root: Path = Path("/")) -> None:
    """Preflight of a campaign with vm-vfio cases: a SpecError or EnvironmentMissing before any sample."""
    s = spec.setup
    if "vm-vfio" not in s.kinds:
        return
    if spec.hosts is None and spec.wire.sender_interface is None:
        raise SpecError(
            "setup kind 'vm-vfio' gives the sensor VM a NIC of its own, which the replayers' veth pair cannot "
            "reach.", fix="cable a second port of this host to it and name that port in [wire] sender_interface "
            "(wire.sensor_interface: the port the sensor side gets; default setup.sriov_pf).")
    from idsbench.spec import parse_size

    memory = max((parse_size(m) for m in s.memory if m is not None), default=DEFAULT_MEMORY)
    problems = passthrough_problems(vfio_device=s.vfio_device, sriov_pf=s.sriov_pf, memory_bytes=memory,
                                    hugepages=s.hugepages, root=root)
    if shutil.which("qemu-system-x86_64") is None:
        problems.append(Problem("qemu", "qemu-system-x86_64 is not installed",
                                "apt-get install qemu-system-x86  (or `make setup`)"))
    if problems:
        raise EnvironmentMissing(
            "setup kind 'vm-vfio' cannot run on this host: " + "; ".join(f"{p.what}: {p.detail}" for p in problems)
            + ".", fix="; ".join(dict.fromkeys(p.fix for p in problems)) + ".")


def doctor_check(cache_dir: Path) -> tuple[bool, str]:
    """`idsbench doctor`: can this host pass a NIC through (IOMMU on, vfio-pci)?"""
    problems = iommu_problems(iommu_facts())
    if problems:
        return False, "; ".join(f"{p.what}: {p.detail} (fix: {p.fix})" for p in problems)
    facts = iommu_facts()
    return True, f"IOMMU on ({facts.groups} groups), vfio-pci {'loaded' if facts.vfio_pci_loaded else 'available'}"


def nic_lines(root: Path = Path("/")) -> list[tuple[str, bool, str]]:
    """`idsbench doctor`: per PCI network interface of this host, its IOMMU group and SR-IOV (informative)."""
    out = []
    net = root / "sys/class/net"
    for name in sorted(p.name for p in net.iterdir()) if net.is_dir() else []:
        bdf = interface_bdf(name, root)
        if bdf is None:
            continue
        dev = pci_device(bdf, root)
        blockers = ", ".join(m.bdf for m in dev.blockers())
        group = "no IOMMU group" if dev.iommu_group is None else \
            f"IOMMU group {dev.iommu_group}" + (f" (not viable: {blockers} bound)" if blockers else "")
        sriov = "no SR-IOV" if dev.sriov_totalvfs is None else f"SR-IOV {dev.sriov_numvfs}/{dev.sriov_totalvfs} VFs"
        out.append((f"nic {name}", True, f"{bdf} driver {dev.driver or 'none'}: {group}, {sriov}"))
    return out
