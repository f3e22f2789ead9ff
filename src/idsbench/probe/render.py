"""A readable summary of a probe (what `idsbench probe` prints without --json)."""

from __future__ import annotations

from idsbench.probe.sysfs import format_cpulist
from idsbench.probe.warnings import TICK_TRAP_NS, warnings
from idsbench.probemodel import HostProbe, InterfaceProbe, IommuProbe, PassthroughProbe, SensorBuild

# Offloads worth a glance on a capture interface (ethtool -k long names -> short).
SHOWN_OFFLOADS = (
    ("generic-receive-offload", "gro"), ("large-receive-offload", "lro"),
    ("tcp-segmentation-offload", "tso"), ("generic-segmentation-offload", "gso"),
    ("rx-checksumming", "rx"), ("tx-checksumming", "tx"), ("scatter-gather", "sg"),
    ("rx-vlan-offload", "rxvlan"), ("receive-hashing", "rxhash"), ("ntuple-filters", "ntuple"),
)


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**30:.1f} GiB"


def _ns(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v / 1000:.2f} µs" if v >= 1000 else f"{v:.1f} ns"


def _opt(v: object) -> str:
    return "?" if v is None else str(v)


def _interface_lines(i: InterfaceProbe) -> list[str]:
    where = f" (netns {i.netns})" if i.netns else ""
    lines = [f"  {i.name}{where}: driver {_opt(i.driver)} {i.driver_version or ''}".rstrip()
             + f", firmware {i.firmware or '-'}, bus {i.bus_info or '-'}, NUMA node {_opt(i.numa_node)}",
             (f"    speed {_opt(i.speed_mbps)} Mb/s, MTU {_opt(i.mtu)}, state {_opt(i.operstate)}, "
              f"RX queues {_opt(i.queues)}")]
    if i.channels:
        c = i.channels
        lines.append(f"    channels: combined {_opt(c.combined)}/{_opt(c.combined_max)}, "
                     f"rx {_opt(c.rx)}/{_opt(c.rx_max)}, tx {_opt(c.tx)}/{_opt(c.tx_max)}")
    if i.rings:
        lines.append(f"    rings: rx {_opt(i.rings.rx)}/{_opt(i.rings.rx_max)}, tx {_opt(i.rings.tx)}/{_opt(i.rings.tx_max)}")
    if i.offloads:
        shown = [f"{short} {'on' if i.offloads[long] else 'off'}" for long, short in SHOWN_OFFLOADS
                 if long in i.offloads]
        lines.append(f"    offloads: {', '.join(shown)}")
    if i.rss:
        table = i.rss.indirection
        lines.append(f"    RSS: {i.rss.hash_function or '?'}, key {i.rss.hash_key or '?'} "
                     f"(symmetric: {_opt(i.rss.symmetric)}), indirection "
                     f"{'?' if table is None else f'{len(table)} entries over {len(set(table))} queues'}")
    if i.rx_flow_hash:
        lines.append("    rx-flow-hash: " + ", ".join(f"{k} {v or 'none'}" for k, v in i.rx_flow_hash.items()))
    if i.coalesce:
        lines.append(f"    coalesce: adaptive-rx {_opt(i.coalesce.adaptive_rx)}, rx-usecs {_opt(i.coalesce.rx_usecs)}")
    if i.pause:
        lines.append(f"    pause: rx {_opt(i.pause.rx)}, tx {_opt(i.pause.tx)}")
    if i.passthrough:
        lines.append("    " + passthrough_text(i.passthrough))
    for irq in i.irqs:
        affinity = "?" if irq.affinity is None else format_cpulist(irq.affinity)
        lines.append(f"    IRQ {irq.number} {irq.name}: CPUs {affinity}")
    return lines


def iommu_text(m: IommuProbe) -> str:
    """The host's IOMMU and VFIO in one line (probe, doctor)."""
    if m.groups:
        head = f"on, {m.groups} groups"
    else:
        firmware = "DMAR" if m.dmar_table else "IVRS" if m.ivrs_table else None
        head = f"off ({'firmware has it (' + firmware + '), the kernel does not use it' if firmware else 'none'})"
    params = " ".join(f"{k}={v}" for k, v in m.cmdline.items())
    vfio = "loaded" if m.vfio_pci_loaded else "available" if m.vfio_pci_available else "missing"
    huge = f"{_opt(m.hugepages_free)}/{_opt(m.hugepages_total)} free of {(m.hugepage_bytes or 0) // 1024} KiB"
    return f"{head}{', ' + params if params else ''}; vfio-pci {vfio}; hugepages {huge}"


def passthrough_text(t: PassthroughProbe) -> str:
    """A NIC's IOMMU group and SR-IOV in one line."""
    group = "no IOMMU group" if t.iommu_group is None else (
        f"IOMMU group {t.iommu_group} ({t.group_size} function(s), "
        f"{'viable for VFIO' if t.vfio_viable else 'NOT viable: another member has a driver'})")
    sriov = "no SR-IOV" if t.sriov_totalvfs is None else f"SR-IOV {t.sriov_numvfs}/{t.sriov_totalvfs} VFs"
    return f"passthrough: {group}, {sriov}" + (f", a VF of {t.physfn}" if t.physfn else "")


def facts(p: HostProbe) -> list[tuple[str, str]]:
    """The host-wide facts of a probe as (label, text) rows (the report's host table)."""
    cpu = p.cpu
    rows = [
        ("host", f"{p.hostname or '?'}  ({p.os or '?'}, kernel {p.kernel or '?'})"),
        ("CPU", f"{cpu.model or '?'}: {cpu.count} logical CPUs, {_opt(cpu.sockets)} socket(s) x "
                f"{_opt(cpu.cores_per_socket)} cores x {_opt(cpu.threads_per_core)} threads"),
        ("memory", _gib(p.memory_bytes)),
    ]
    for node in p.numa_nodes:
        rows.append((f"NUMA {node.id}", f"CPUs {format_cpulist(node.cpus) or '-'}, {_gib(node.memory_bytes)}"))
    hv = p.hypervisor or "none (bare metal)"
    rows.append(("hypervisor", hv + (f"  [{'; '.join(p.hypervisor_evidence)}]" if p.hypervisor_evidence else "")))
    boot = {k: v for k, v in p.boot.model_dump().items() if v is not None}
    rows.append(("boot", ", ".join(f"{k}={v}" for k, v in boot.items()) or "no tuning parameters"))
    f = p.cpufreq
    rows.append(("frequency", f"governor {_opt(f.governor)}, driver {_opt(f.driver)}, "
                              f"{_opt(f.min_khz)}-{_opt(f.max_khz)} kHz, cpuidle {_opt(f.cpuidle_driver)}"))
    rows.append(("clock", f"{_opt(p.clocksource)} (available: {' '.join(p.clocksources_available) or '?'})"))
    rows.append(("THP", f"enabled {_opt(p.thp.enabled)}, defrag {_opt(p.thp.defrag)}"))
    rows.append(("cgroups", f"v{_opt(p.cgroup_version)}: {' '.join(p.cgroup_controllers) or '-'}"))
    rows.append(("irqbalance", "running" if p.irqbalance else "not running"))
    if p.iommu is not None:
        rows.append(("IOMMU", iommu_text(p.iommu)))
    t = p.timers
    timers = (f"cpuid;rdtsc;cpuid {_ns(t.cpuid_rdtsc_ns)}, lfence;rdtsc {_ns(t.lfence_rdtsc_ns)}, "
              f"rdtsc {_ns(t.rdtsc_ns)}, rdtscp {_ns(t.rdtscp_ns)}, "
              f"clock_gettime {_ns(t.clock_gettime_ns)} (per call, median)")
    if t.cpuid_rdtsc_ns is not None and t.cpuid_rdtsc_ns > TICK_TRAP_NS:
        timers += ("; cpuid traps here (a VM exit per call): harmless unless the sensor is built with "
                   "upstream's profiling, whose per-packet tick uses it (idsbench's builds read lfence;rdtsc)")
    rows.append(("timers", timers))
    if p.tsc is not None:
        rows.append(("TSC", f"{p.tsc.hz:,.0f} Hz (rdtsc against CLOCK_MONOTONIC_RAW, {p.tsc.rounds} x "
                            f"{p.tsc.round_ms} ms, spread {_opt(p.tsc.spread_ppm)} ppm)" if p.tsc.hz is not None
                     else f"not measured: {p.tsc.error or '?'}"))
    if p.noise is not None:  # the quietness probe a campaign starts with (probe/noise.py)
        n = p.noise
        loop = "–" if n.loop_cv is None else f"{n.loop_cv:.1%} over {n.piece_s or 1:g}-s pieces"
        if n.loop_cv_10ms is not None:
            loop += f" ({n.loop_cv_10ms:.1%} over 10-ms pieces)"
        freq = "not visible" if n.freq_changes is None else str(n.freq_changes)
        other = "–" if n.other_load_pct is None else f"{n.other_load_pct:.0f}%"
        rows.append(("noise", f"steal {n.steal_pct:.1f}%, CPU-bound loop CV {loop} on CPUs "
                              f"{format_cpulist(list(n.cpus)) or '-'}, frequency changes {freq}, "
                              f"other processes' CPU {other}"))
    s = p.sensor
    if s is not None:
        rows.append(("sensor", f"{s.engine} {s.version}: profiling {'COMPILED IN' if s.profiling else 'off'}, "
                               f"hyperscan {_opt(s.hyperscan)}, capture {' '.join(s.capture_methods)}"))
    rows += [("build", _build_line(b)) for b in p.builds]
    return rows


def _build_line(b: SensorBuild) -> str:
    """One cached sensor build: what it is, its id, its source and flags (None shown as '?')."""
    extra = [f"options {b.options}"] if b.options else []
    if b.daq_version:
        extra.append(f"libdaq {b.daq_version}")
    if b.profiling_rules is not None:
        extra.append(f"rule profiling {'yes' if b.profiling_rules else 'no'}")
    if b.current:
        extra.append("current")
    head = f"{b.engine} {_opt(b.version)}" + (f" ({', '.join(extra)})" if extra else "")
    line = (f"{head}: id {_opt(b.build_id)}, source sha256 {_opt(b.source_sha256)}, "
            f"configure {_opt(b.configure_flags)}, at {b.prefix}")
    return line + (f" [flags and sha256 from {b.completed_from}]" if b.completed_from else "")


def summary(p: HostProbe) -> str:
    lines = [f"{label:<10} {text}" for label, text in facts(p)]
    if p.interfaces:
        lines.append("interfaces")
        for iface in p.interfaces.values():
            lines += _interface_lines(iface)
    lines += [f"note       {n}" for n in p.notes]
    lines += [f"WARNING    {w}" for w in warnings(p)]
    return "\n".join(lines)
