"""`collect()`: probe this host (and some of its interfaces, optionally inside a network namespace)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from idsbench.native.tsc import measure_tsc
from idsbench.probe import host, iommu
from idsbench.probe.builds import cached_builds
from idsbench.probe.hypervisor import detect
from idsbench.probe.netif import probe_in_netns, probe_interface
from idsbench.probe.sensor import probe_suricata
from idsbench.probe.sysfs import read_text
from idsbench.probe.timers import measure
from idsbench.probemodel import SCHEMA, HostProbe, InterfaceProbe, IommuProbe, TimerCosts, TscRate


def collect(interfaces: Sequence[str] = (), netns: str | None = None, sensor: bool = True, *,
            timers: bool = True, sensor_binary: str = "suricata", root: Path = Path("/")) -> HostProbe:
    """Everything about this host that can change a result. `interfaces` are looked up in `netns`
    when given (root needed), else in this namespace; an unknown interface is an InputError."""
    notes: list[str] = []
    cpu = host.read_cpu(root)
    costs = measure() if timers else TimerCosts(error="not measured (timers=False)")
    tsc = measure_tsc() if timers else TscRate(error="not measured (timers=False)")
    hyper = detect(root, cpu.flags, costs.cpuid_hypervisor_vendor)
    cmdline = read_text(root / "proc/cmdline") or ""
    clocksource, clocksources = host.read_clocksource(root)
    cgroup_version, controllers = host.read_cgroups(root)
    if cgroup_version is None:
        notes.append("cgroups: no cgroup v1 controller or v2 hierarchy is mounted under /sys/fs/cgroup")
    sensor_probe = None
    if sensor:
        sensor_probe, why_not = probe_suricata(sensor_binary)
        if why_not:
            notes.append(why_not)
    # The cache's builds whatever the engine (a campaign of `suricata@8.0.6` or Snort records them too).
    builds, build_notes = cached_builds()
    notes.extend(build_notes)
    return HostProbe(
        schema=SCHEMA,
        created_unix=time.time(),
        hostname=read_text(root / "proc/sys/kernel/hostname"),
        cpu=cpu,
        numa_nodes=host.read_numa(root),
        memory_bytes=host.read_memory_bytes(root),
        hypervisor=hyper.name,
        hypervisor_evidence=list(hyper.evidence),
        kernel=read_text(root / "proc/sys/kernel/osrelease"),
        os=host.read_os(root),
        cmdline=cmdline,
        boot=host.parse_boot(cmdline),
        cpufreq=host.read_cpufreq(root, cpu.online),
        clocksource=clocksource,
        clocksources_available=clocksources,
        thp=host.read_thp(root),
        cgroup_version=cgroup_version,
        cgroup_controllers=controllers,
        irqbalance=host.irqbalance_running(root),
        timers=costs,
        tsc=tsc,
        interfaces={p.name: p for p in _interfaces(interfaces, netns, root)},
        sensor=sensor_probe,
        builds=builds,
        notes=notes,
        iommu=iommu_probe(root),
    )


def iommu_probe(root: Path = Path("/")) -> IommuProbe:
    f = iommu.iommu_facts(root)
    return IommuProbe(groups=f.groups, dmar_table=f.dmar_table, ivrs_table=f.ivrs_table, cmdline=f.cmdline,
                      vfio_pci_loaded=f.vfio_pci_loaded, vfio_pci_available=f.vfio_pci_available,
                      hugepages_total=f.hugepages_total, hugepages_free=f.hugepages_free,
                      hugepage_bytes=f.hugepage_bytes)


def _interfaces(names: Sequence[str], netns: str | None, root: Path) -> list[InterfaceProbe]:
    unique = list(dict.fromkeys(names))
    if not unique:
        return []
    if netns:
        return probe_in_netns(unique, netns)
    return [probe_interface(n, root=root) for n in unique]
