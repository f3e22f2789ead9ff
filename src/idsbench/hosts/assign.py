"""Which pair runs which case, and the rule that keeps pairs of different hardware apart.

Cases go to pairs round robin in plan order: all samples of a case run on one pair, so a case's
medians never mix pairs. On --resume a case stays on the pair its samples ran on; if that pair is
gone from the inventory, the case moves, and its samples would be pooled across two pairs: allowed
only when both pairs' hosts have the same hardware (from their probes), or with
`[hosts] pool_pairs = true`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from idsbench.errors import SpecError
from idsbench.hosts.inventory import Pair
from idsbench.plan import Case
from idsbench.probemodel import HostProbe
from idsbench.store.layout import SUMMARY_FILE, CampaignDir
from idsbench.store.reader import read_host_probe
from idsbench.store.summaryfile import read_summary


@dataclass(frozen=True)
class Move:
    case_id: str
    previous: str   # the pair label its samples ran on
    pair: Pair      # where the rest now runs


def pairs_used(layout: CampaignDir, case: Case) -> list[str]:
    found = []
    for sample in case.samples:
        try:
            label = read_summary(layout.sample_dir(case.case_id, sample.index) / SUMMARY_FILE).pair
        except (OSError, ValueError):
            continue
        if label is not None and label not in found:
            found.append(label)
    return found


def assign(cases: Sequence[Case], pairs: Sequence[Pair], layout: CampaignDir) -> tuple[dict[str, Pair], list[Move]]:
    by_label = {p.label: p for p in pairs}
    out: dict[str, Pair] = {}
    moves: list[Move] = []
    for i, case in enumerate(cases):
        default = pairs[i % len(pairs)]
        previous = pairs_used(layout, case)
        kept = next((by_label[label] for label in previous if label in by_label), None)
        out[case.case_id] = kept or default
        if previous and kept is None:
            moves.append(Move(case.case_id, previous[0], default))
    return out, moves


@dataclass(frozen=True)
class Hardware:
    """What makes two hosts' results incomparable (volatile and naming facts left out)."""

    cpu_model: str | None
    cpus: int
    sockets: int | None
    threads_per_core: int | None
    numa_nodes: int
    memory_gib: int | None
    hypervisor: str | None
    nic_driver: str | None
    nic_speed_mbps: int | None

    def differences(self, other: Hardware) -> dict[str, tuple[object, object]]:
        return {f.name: (getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
                if getattr(self, f.name) != getattr(other, f.name)}


def hardware(probe: HostProbe) -> Hardware:
    """The hardware of a probed host; the NIC is the one interface the probe holds (the host's
    capture or transmit interface)."""
    nics = list(probe.interfaces.values())
    nic = nics[0] if len(nics) == 1 else None
    memory = probe.memory_bytes
    return Hardware(cpu_model=probe.cpu.model, cpus=probe.cpu.count, sockets=probe.cpu.sockets,
                    threads_per_core=probe.cpu.threads_per_core, numa_nodes=len(probe.numa_nodes),
                    memory_gib=round(memory / 2**30) if memory is not None else None, hypervisor=probe.hypervisor,
                    nic_driver=nic.driver if nic else None, nic_speed_mbps=nic.speed_mbps if nic else None)


def check_pooling(moves: Sequence[Move], layout: CampaignDir, pool: bool) -> None:
    """SpecError when a moved case would pool pairs whose hosts differ in hardware."""
    if pool:
        return
    for move in moves:
        old_sender, old_sensor = move.previous.split("/", 1)
        for role, old, new in (("sensor", old_sensor, move.pair.sensor.name), ("sender", old_sender, move.pair.sender.name)):
            a, b = read_host_probe(layout, old), read_host_probe(layout, new)
            if a is None or b is None:
                raise SpecError(f"case {move.case_id} ran on pair {move.previous}, which the inventory no longer has; "
                                f"without both {role}s' probes ({old}, {new}) its samples cannot be shown to "
                                "come from the same hardware.",
                                fix="restore the pair in the inventory, or set [hosts] pool_pairs = true.")
            diff = hardware(a).differences(hardware(b))
            if diff:
                raise SpecError(f"case {move.case_id} ran on pair {move.previous}; the inventory now sends it to "
                                f"{move.pair.label}, whose {role} differs in hardware {diff}: its samples would be "
                                "pooled across different machines.",
                                fix="restore the original pair, re-run the case from scratch (delete its directory), "
                                    "or set [hosts] pool_pairs = true to pool anyway.")
