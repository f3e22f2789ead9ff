"""Host facts from procfs/sysfs: CPU topology, NUMA, memory, kernel and boot line, frequency
scaling, clocksource, THP, cgroups, irqbalance. Every reader takes the filesystem root."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from idsbench.probe.sysfs import bracketed_choice, parse_cpulist, read_int, read_text
from idsbench.probemodel import BootParams, CpuFreq, CpuInfo, LogicalCpu, NumaNode, Thp

# Kernel command-line keys -> BootParams fields.
BOOT_KEYS = {
    "isolcpus": "isolcpus",
    "nohz_full": "nohz_full",
    "rcu_nocbs": "rcu_nocbs",
    "intel_iommu": "intel_iommu",
    "iommu": "iommu",
    "processor.max_cstate": "processor_max_cstate",
    "intel_idle.max_cstate": "intel_idle_max_cstate",
    "mitigations": "mitigations",
    "default_hugepagesz": "default_hugepagesz",
    "hugepages": "hugepages",
}


def _cpuinfo_fields(text: str) -> dict[str, str]:
    """The first processor block of /proc/cpuinfo as key -> value."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def read_cpu(root: Path) -> CpuInfo:
    sys_cpu = root / "sys/devices/system/cpu"
    fields = _cpuinfo_fields(read_text(root / "proc/cpuinfo") or "")
    online = parse_cpulist(read_text(sys_cpu / "online"))
    node_of = {cpu: node.id for node in read_numa(root) for cpu in node.cpus}
    topology: list[LogicalCpu] = []
    for cpu in online:
        topo = sys_cpu / f"cpu{cpu}" / "topology"
        topology.append(LogicalCpu(
            cpu=cpu,
            socket=read_int(topo / "physical_package_id"),
            core=read_int(topo / "core_id"),
            node=node_of.get(cpu),
            siblings=parse_cpulist(read_text(topo / "thread_siblings_list")),
        ))
    sockets = {t.socket for t in topology if t.socket is not None}
    cores = {(t.socket, t.core) for t in topology if t.core is not None}
    threads = max((len(t.siblings) for t in topology), default=0)
    return CpuInfo(
        model=fields.get("model name") or fields.get("cpu model") or fields.get("Processor"),
        vendor=fields.get("vendor_id"),
        count=len(online) or (1 if fields else 0),
        flags=sorted(fields.get("flags", fields.get("Features", "")).split()),
        sockets=len(sockets) or None,
        cores_per_socket=(len(cores) // len(sockets)) if sockets and cores else None,
        threads_per_core=threads or None,
        online=online,
        topology=topology,
    )


def read_numa(root: Path) -> list[NumaNode]:
    base = root / "sys/devices/system/node"
    nodes: list[NumaNode] = []
    for path in sorted(base.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        mem = None
        meminfo = read_text(path / "meminfo") or ""
        match = re.search(r"MemTotal:\s+(\d+)\s*kB", meminfo)
        if match:
            mem = int(match.group(1)) * 1024
        nodes.append(NumaNode(id=int(path.name[4:]), cpus=parse_cpulist(read_text(path / "cpulist")),
                              memory_bytes=mem))
    return nodes


def read_memory_bytes(root: Path) -> int | None:
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", read_text(root / "proc/meminfo") or "", re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def kernel_cmdline_args(cmdline: str) -> list[str]:
    """Kernel parameters (everything after a bare `--` goes to init and is not the kernel's)."""
    try:
        words = shlex.split(cmdline)
    except ValueError:
        words = cmdline.split()
    return words[: words.index("--")] if "--" in words else words


def parse_boot(cmdline: str) -> BootParams:
    values: dict[str, str] = {}
    for word in kernel_cmdline_args(cmdline):
        key, sep, value = word.partition("=")
        field = BOOT_KEYS.get(key)
        if field:
            values[field] = value if sep else ""
    return BootParams.model_validate(values)


def read_cpufreq(root: Path, cpus: list[int]) -> CpuFreq:
    sys_cpu = root / "sys/devices/system/cpu"
    governors = sorted({g for c in cpus if (g := read_text(sys_cpu / f"cpu{c}/cpufreq/scaling_governor"))})
    governor = governors[0] if len(governors) == 1 else (f"mixed: {','.join(governors)}" if governors else None)
    first = sys_cpu / f"cpu{cpus[0] if cpus else 0}" / "cpufreq"
    return CpuFreq(
        driver=read_text(first / "scaling_driver"),
        governor=governor,
        min_khz=read_int(first / "cpuinfo_min_freq"),
        max_khz=read_int(first / "cpuinfo_max_freq"),
        cur_khz=read_int(first / "scaling_cur_freq"),
        cpuidle_driver=read_text(sys_cpu / "cpuidle/current_driver"),
        cpuidle_governor=read_text(sys_cpu / "cpuidle/current_governor_ro")
        or read_text(sys_cpu / "cpuidle/current_governor"),
    )


def read_clocksource(root: Path) -> tuple[str | None, list[str]]:
    base = root / "sys/devices/system/clocksource/clocksource0"
    available = (read_text(base / "available_clocksource") or "").split()
    return read_text(base / "current_clocksource"), available


def read_thp(root: Path) -> Thp:
    base = root / "sys/kernel/mm/transparent_hugepage"
    return Thp(enabled=bracketed_choice(read_text(base / "enabled")),
               defrag=bracketed_choice(read_text(base / "defrag")))


def read_cgroups(root: Path) -> tuple[int | None, list[str]]:
    """(1 or 2, usable controllers). Hybrid hosts (v1 controllers + a v2 `unified` mount) are 1:
    the controllers a sensor's limits use live in the v1 hierarchies."""
    unified = read_text(root / "sys/fs/cgroup/cgroup.controllers")
    if unified is not None:
        return 2, sorted(unified.split())
    mounts = read_text(root / "proc/mounts") or ""
    enabled = set()
    for line in (read_text(root / "proc/cgroups") or "").splitlines():
        parts = line.split()
        if len(parts) == 4 and not line.startswith("#") and parts[3] == "1":
            enabled.add(parts[0])
    mounted: set[str] = set()
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "cgroup":
            mounted.update(opt for opt in parts[3].split(",") if opt in enabled)
    if mounted:
        return 1, sorted(mounted)
    return None, []


def irqbalance_running(root: Path) -> bool:
    """True when a process named irqbalance exists (a /proc scan of comm; nothing is signalled)."""
    return any(read_text(comm) == "irqbalance" for comm in (root / "proc").glob("[0-9]*/comm"))


def read_os(root: Path) -> str | None:
    text = read_text(root / "etc/os-release") or ""
    match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.MULTILINE)
    return match.group(1) if match else None
