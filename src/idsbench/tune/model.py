"""The tuning plan: a Suricata overlay, host steps (with their undo) and the knobs that explain them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

# Where each knob's reason comes from.
SEPTUN = "SEPTun"
THESIS = "Telenor NUMA thesis"
DOCS = "Suricata docs"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanOptions(_Frozen):
    cpus: int | None = Field(None, ge=1)  # worker CPUs reserved for the sensor (None: the NIC's node)
    iface: str | None = None
    memory_bytes: int | None = Field(None, ge=64 * 2**20)  # the sensor's memory budget
    rate_pps: int | None = Field(None, ge=1)  # expected packet rate at the capture interface
    flows: int | None = Field(None, ge=1)  # expected concurrent flows


class Knob(_Frozen):
    name: str
    value: str
    why: str


StepKind = Literal["ethtool", "irq", "service", "boot"]


class HostStep(_Frozen):
    """One host change. `command` is a shell line; ethtool steps also carry `argv` (what --apply
    runs) and IRQ steps `irq`/`cpus`. `safe` steps are the ones --apply may make on a test host."""

    kind: StepKind
    command: str
    undo: str | None
    why: str
    safe: bool
    argv: list[str] | None = None
    irq: int | None = None
    cpus: list[int] | None = None


class CpuLayout(_Frozen):
    node: int | None  # the capture NIC's NUMA node (None: unknown / no NUMA information)
    management: list[int]
    workers: list[int]
    spilled: list[int] = Field(default_factory=list)  # worker CPUs taken from another node


class Sizing(_Frozen):
    memory_bytes: int
    rate_pps: int
    flows: int
    frame_bytes: int
    ring_size: int
    block_size: int
    max_pending_packets: int
    flow_memcap: int
    flow_hash_size: int
    flow_prealloc: int
    stream_memcap: int
    reassembly_memcap: int
    defrag_memcap: int


class TuningPlan(_Frozen):
    interface: str | None
    queues: int | None  # RSS queues the plan sets (None: the NIC's are left alone)
    cluster_type: str
    layout: CpuLayout
    sizing: Sizing
    suricata: dict[str, JsonValue]
    host: list[HostStep]
    knobs: list[Knob]
    warnings: list[str] = Field(default_factory=list)
    boot_args: str | None = None

    def contract(self) -> dict[str, JsonValue]:
        """`tune plan --format json`: exactly {suricata, host, knobs}."""
        return {
            "suricata": self.suricata,
            "host": [s.command for s in self.host],
            "knobs": [{"name": k.name, "value": k.value, "why": k.why} for k in self.knobs],
        }
