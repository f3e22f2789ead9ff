"""The Suricata half of the plan: a config overlay (loaded with `--include`, or as idsbench's
`sensor.config`).

Suricata's `--include` replaces whole top-level sections (measured with 7.0.10: an included
`stream: {memcap: ...}` drops the base config's `stream.reassembly.depth`), so the file written
for it has every section it touches completed from a base config (`complete_sections`); the plan's
own mapping (`TuningPlan.suricata`) holds only what the plan decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import JsonValue

from idsbench.errors import EnvironmentMissing
from idsbench.probe.sysfs import format_cpulist
from idsbench.sensors.suricata.config import DEFAULT_CONFIG, load_default_config
from idsbench.tune.model import DOCS, SEPTUN, THESIS, CpuLayout, Knob, Sizing
from idsbench.tune.sizing import suricata_size

CLUSTER_ID = 99


def _cpu_list(cpus: list[int]) -> list[JsonValue]:
    return [part for part in format_cpulist(cpus).split(",") if part]


def overlay(interface: str | None, threads: int, cluster_type: str, layout: CpuLayout,
            sizing: Sizing) -> dict[str, JsonValue]:
    afp: dict[str, JsonValue] = {
        "interface": interface or "default",
        "threads": threads,
        "cluster-id": CLUSTER_ID,
        "cluster-type": cluster_type,
        "defrag": True,
        "use-mmap": True,
        "mmap-locked": True,
        "tpacket-v3": True,
        "ring-size": sizing.ring_size,
        "block-size": sizing.block_size,
        "block-timeout": 10,
    }
    return {
        "runmode": "workers",
        "max-pending-packets": sizing.max_pending_packets,
        "af-packet": [afp],
        "threading": {
            "set-cpu-affinity": True,
            "cpu-affinity": [
                {"management-cpu-set": {"cpu": _cpu_list(layout.management)}},
                {"worker-cpu-set": {"cpu": _cpu_list(layout.workers[:threads]), "mode": "exclusive",
                                    "prio": {"default": "high"}}},
            ],
            "detect-thread-ratio": 1.0,
        },
        "flow": {"memcap": suricata_size(sizing.flow_memcap), "hash-size": sizing.flow_hash_size,
                 "prealloc": sizing.flow_prealloc},
        "stream": {"memcap": suricata_size(sizing.stream_memcap),
                   "reassembly": {"memcap": suricata_size(sizing.reassembly_memcap)}},
        "defrag": {"memcap": suricata_size(sizing.defrag_memcap)},
    }


def _merge(base: JsonValue, ours: JsonValue) -> JsonValue:
    if isinstance(base, dict) and isinstance(ours, dict):
        merged = dict(base)
        for key, value in ours.items():
            merged[key] = _merge(base.get(key), value)
        return merged
    return ours  # scalars and lists: the plan's value replaces the base's


def complete_sections(overlay: Mapping[str, JsonValue], base: Mapping[str, JsonValue] | None) -> dict[str, JsonValue]:
    """`overlay` with each top-level mapping completed from `base` (lists are the plan's, whole)."""
    if not base:
        return dict(overlay)
    return {key: _merge(base.get(key), value) for key, value in overlay.items()}


def base_config(path: Path = DEFAULT_CONFIG) -> dict[str, JsonValue] | None:
    """The distro's suricata.yaml as the base of `complete_sections`, or None when it is absent."""
    try:
        config: dict[str, JsonValue] = load_default_config(path)
        return config
    except EnvironmentMissing:
        return None


def overlay_knobs(layout: CpuLayout, threads: int) -> list[Knob]:
    node = f"node {layout.node}" if layout.node is not None else "the only node"
    return [
        Knob(name="runmode", value="workers",
             why=f"each thread captures, decodes, detects and logs its packets: no queue between threads "
             f"({DOCS}: runmodes; {SEPTUN})."),
        Knob(name="af-packet.tpacket-v3", value="yes",
             why=f"block ring: one wakeup hands over many packets ({DOCS}: af-packet)."),
        Knob(name="af-packet.use-mmap", value="yes", why="the ring is shared with the kernel, no copy per packet."),
        Knob(name="af-packet.mmap-locked", value="yes",
             why=f"ring pages locked in RAM: never swapped out under memory pressure ({DOCS}: af-packet)."),
        Knob(name="af-packet.defrag", value="yes",
             why="the kernel reassembles IP fragments before hashing, so fragments of a flow reach one thread."),
        Knob(name="threading.management-cpu-set", value=format_cpulist(layout.management),
             why=f"flow manager, stats and logging on {node} with the NIC, off the worker CPUs; the node's "
             f"first core, shared with the host's housekeeping (not counted in --cpus) ({THESIS})."),
        Knob(name="threading.worker-cpu-set", value=format_cpulist(layout.workers[:threads]),
             why=f"one worker per CPU on the capture NIC's {node}: packets, rings and flow state stay in "
             f"node-local memory ({THESIS}; {SEPTUN})."),
        Knob(name="threading.worker-cpu-set.mode", value="exclusive (prio high)",
             why=f"each worker pinned alone to its CPU at high priority ({DOCS}: cpu affinity)."),
        Knob(name="threading.detect-thread-ratio", value="1.0",
             why="one detection thread per worker CPU (workers runmode: detection runs in the capture thread)."),
    ]
