"""Which pair runs which case, and the rule that keeps pairs of different hardware apart.

Cases go to pairs round robin in plan order: all samples of a case run on one pair, so a case's
medians never mix pairs. On --resume a case stays on the pair its samples ran on; if that pair is
gone from the inventory, the case moves, and its samples would be pooled across two pairs: allowed
only when both pairs' hosts have the same hardware (from their probes), or with
`[hosts] pool_pairs = true`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from idsbench.errors import SpecError
from idsbench.hosts.inventory import Pair
from idsbench.plan import Case
from idsbench.store.layout import PROBES_DIR, SUMMARY_FILE, CampaignDir


@dataclass(frozen=True)
class Move:
    case_id: str
    previous: str   # the pair label its samples ran on
    pair: Pair      # where the rest now runs


def pairs_used(layout: CampaignDir, case: Case) -> list[str]:
    found = []
    for sample in case.samples:
        try:
            doc = json.loads((layout.sample_dir(case.case_id, sample.index) / SUMMARY_FILE).read_text())
        except (OSError, ValueError):
            continue
        label = doc.get("pair") if isinstance(doc, dict) else None
        if isinstance(label, str) and label not in found:
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


def hardware(probe: dict[str, Any]) -> dict[str, Any]:
    """What makes two hosts' results incomparable (volatile and naming facts left out); the NIC is
    the one interface the probe holds (the host's capture or transmit interface)."""
    cpu = probe.get("cpu") or {}
    nics = list((probe.get("interfaces") or {}).values())
    nic = nics[0] if len(nics) == 1 and isinstance(nics[0], dict) else {}
    memory = probe.get("memory_bytes")
    return {"cpu_model": cpu.get("model"), "cpus": cpu.get("count"), "sockets": cpu.get("sockets"),
            "threads_per_core": cpu.get("threads_per_core"), "numa_nodes": len(probe.get("numa_nodes") or []),
            "memory_gib": round(memory / 2**30) if isinstance(memory, int) else None,
            "hypervisor": probe.get("hypervisor"), "nic_driver": nic.get("driver"), "nic_speed_mbps": nic.get("speed_mbps")}


def check_pooling(moves: Sequence[Move], layout: CampaignDir, pool: bool) -> None:
    """SpecError when a moved case would pool pairs whose hosts differ in hardware."""
    if pool:
        return
    for move in moves:
        old_sender, old_sensor = move.previous.split("/", 1)
        for role, old, new in (("sensor", old_sensor, move.pair.sensor.name), ("sender", old_sender, move.pair.sender.name)):
            a, b = _probe(layout, old), _probe(layout, new)
            if a is None or b is None:
                raise SpecError(f"case {move.case_id} ran on pair {move.previous}, which the inventory no longer has; "
                                f"without both {role}s' probes ({old}, {new}) its samples cannot be shown to "
                                "come from the same hardware.",
                                fix="restore the pair in the inventory, or set [hosts] pool_pairs = true.")
            ha, hb = hardware(a), hardware(b)
            if ha != hb:
                diff = {k: (ha[k], hb[k]) for k in ha if ha[k] != hb[k]}
                raise SpecError(f"case {move.case_id} ran on pair {move.previous}; the inventory now sends it to "
                                f"{move.pair.label}, whose {role} differs in hardware {diff}: its samples would be "
                                "pooled across different machines.",
                                fix="restore the original pair, re-run the case from scratch (delete its directory), "
                                    "or set [hosts] pool_pairs = true to pool anyway.")


def _probe(layout: CampaignDir, host: str) -> dict[str, Any] | None:
    try:
        doc = json.loads((layout.root / PROBES_DIR / f"{host}.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
