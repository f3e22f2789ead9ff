"""Which CPUs the sensor gets: workers and management on the capture NIC's NUMA node.

Order of preference on a node: one hardware thread per physical core first (a worker never shares
a core with another worker), the node's first core left to management and the OS, then sibling
threads; only when the node runs out do workers spill to other nodes (with a warning).
"""

from __future__ import annotations

from dataclasses import dataclass

from idsbench.errors import SpecError
from idsbench.probe.sysfs import format_cpulist
from idsbench.probemodel import HostProbe, InterfaceProbe
from idsbench.tune.model import CpuLayout


@dataclass(frozen=True)
class _Node:
    id: int
    cpus: list[int]


def _nodes(probe: HostProbe) -> list[_Node]:
    online = probe.cpu.online or list(range(probe.cpu.count))
    nodes = [_Node(n.id, [c for c in n.cpus if c in online]) for n in probe.numa_nodes if n.cpus]
    return nodes or [_Node(0, online)]


def _core_key(probe: HostProbe, cpu: int) -> tuple[int, int]:
    for t in probe.cpu.topology:
        if t.cpu == cpu and t.core is not None:
            return (t.socket or 0, t.core)
    return (-1, cpu)  # no topology: every CPU its own core


def _by_core(probe: HostProbe, cpus: list[int]) -> list[list[int]]:
    """CPUs grouped by physical core, cores ordered by their lowest CPU, threads ascending."""
    cores: dict[tuple[int, int], list[int]] = {}
    for cpu in sorted(cpus):
        cores.setdefault(_core_key(probe, cpu), []).append(cpu)
    return sorted(cores.values(), key=lambda threads: threads[0])


def _preference(cores: list[list[int]]) -> list[int]:
    """First threads of every core, then the second threads, and so on."""
    order: list[int] = []
    depth = max((len(c) for c in cores), default=0)
    for level in range(depth):
        order += [c[level] for c in cores if len(c) > level]
    return order


def choose_layout(probe: HostProbe, iface: InterfaceProbe | None, cpus: int | None) -> tuple[CpuLayout, list[str]]:
    warnings: list[str] = []
    nodes = _nodes(probe)
    by_id = {n.id: n for n in nodes}
    if iface is not None and iface.numa_node is not None and iface.numa_node in by_id:
        node = by_id[iface.numa_node]
    else:
        node = nodes[0]
        if len(nodes) > 1:
            what = f"the NUMA node of {iface.name}" if iface is not None else "the capture NIC's NUMA node"
            warnings.append(f"{what} is unknown: workers are placed on node {node.id}. "
                            "Fix: pass --iface with an interface whose NUMA node the probe read.")
    cores = _by_core(probe, node.cpus)
    management = [cores[0][0]]
    candidates = _preference(cores[1:]) + cores[0][1:]
    total = sum(len(n.cpus) for n in nodes)
    want = cpus if cpus is not None else max(1, len(candidates))
    if want > total:
        raise SpecError(f"--cpus {want} asks for more worker CPUs than this host has ({total}).",
                        fix=f"use --cpus {max(1, total - 1)} or less (one CPU is kept for management).")
    workers = candidates[:want]
    spilled: list[int] = []
    if len(workers) < want:
        others = [n for n in nodes if n.id != node.id]
        spill = []
        for other in others:
            other_cores = _by_core(probe, other.cpus)
            # Keep CPU 0's core for the OS when other cores are left.
            spill += _preference([c for c in other_cores if 0 not in c]) + _preference([c for c in other_cores if 0 in c])
        spilled = spill[: want - len(workers)]
        workers += spilled
        if spilled:
            warnings.append(
                f"node {node.id} has {len(candidates)} CPU(s) beside management; {len(spilled)} worker(s) "
                f"spill to CPUs {format_cpulist(spilled)} on another node: their packets cross the "
                "interconnect (remote memory). Fix: fewer --cpus, or a NIC per node.")
    if len(workers) < want:  # every other CPU is taken: management shares a worker CPU
        workers.append(management[0])
        warnings.append(f"only {total} CPU(s): management shares worker CPU {management[0]}.")
    return CpuLayout(node=node.id if probe.numa_nodes else None, management=management,
                     workers=sorted(workers), spilled=sorted(spilled)), warnings
