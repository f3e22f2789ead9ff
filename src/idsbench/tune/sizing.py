"""Ring, packet-pool, flow and memcap sizes from the memory budget, the expected rate and flows.

Budget split (of the sensor's memory budget): capture rings <= 25%, flow table 10%, TCP sessions
10%, reassembly 30%, defrag 2%; the rest stays for the detection engine and app-layer state.
Never below Suricata's own defaults.
"""

from __future__ import annotations

import math

from idsbench.probemodel import HostProbe, InterfaceProbe
from idsbench.tune.model import DOCS, SEPTUN, THESIS, Knob, Sizing

MIB = 2**20
GIB = 2**30
BUDGET_SHARE = 0.25  # default budget: a quarter of the NIC node's memory
RING_SHARE, FLOW_SHARE, STREAM_SHARE, REASSEMBLY_SHARE, DEFRAG_SHARE = 0.25, 0.10, 0.10, 0.30, 0.02
AVG_FRAME = 800  # bytes per packet assumed to turn a link speed into a packet rate
WIRE_OVERHEAD = 20  # preamble + inter-frame gap per packet on Ethernet
RING_SECONDS = 0.1  # a worker's ring absorbs this much traffic while the worker is busy
TPACKET_HEADROOM = 80  # tpacket3 header + sockaddr_ll + alignment per frame slot
MIN_BLOCK, MAX_BLOCK = 128 * 1024, 4 * MIB
MIN_RING, MAX_RING = 2048, 1_000_000
FLOW_BYTES = 1280  # a flow (struct + hash bucket + small app-layer state), conservatively
SURICATA_DEFAULTS = {"flow": 128 * MIB, "stream": 64 * MIB, "reassembly": 256 * MIB, "defrag": 32 * MIB,
                     "hash_size": 65536, "prealloc": 10000, "max_pending": 1024}


def pow2_at_least(n: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1.0, n))))


def suricata_size(n: int) -> str:
    """Bytes as Suricata's size syntax, whole MiB ("1536mb")."""
    return f"{max(1, n // MIB)}mb"


def _human(n: int) -> str:
    return f"{n / GIB:.1f} GiB" if n >= GIB else f"{n // MIB} MiB"


def size(probe: HostProbe, iface: InterfaceProbe | None, node: int | None, threads: int, *,
         memory_bytes: int | None, rate_pps: int | None, flows: int | None) -> tuple[Sizing, list[Knob], list[str]]:
    knobs: list[Knob] = []
    warnings: list[str] = []
    node_mem = next((n.memory_bytes for n in probe.numa_nodes if n.id == node), None)
    if memory_bytes is None:
        base = node_mem or probe.memory_bytes or 4 * GIB
        budget = int(base * BUDGET_SHARE)
        knobs.append(Knob(name="budget.memory", value=_human(budget),
                          why=f"default: {BUDGET_SHARE:.0%} of {'node ' + str(node) if node_mem else 'host'} memory "
                          f"({_human(base)}), node-local, the rest left to the host ({THESIS}); set --memory."))
    else:
        budget = memory_bytes
        knobs.append(Knob(name="budget.memory", value=_human(budget), why="--memory"))
        if node_mem and budget > node_mem:
            warnings.append(f"the memory budget {_human(budget)} exceeds node {node}'s {_human(node_mem)}: "
                            "part of the sensor's memory will be remote.")
    if rate_pps is None:
        speed = iface.speed_mbps if iface is not None else None
        rate = int((speed or 1000) * 1e6 / 8 / (AVG_FRAME + WIRE_OVERHEAD))
        if speed is None:
            warnings.append("link speed unknown: the expected rate assumes 1 Gb/s. Fix: pass --rate-pps.")
        knobs.append(Knob(name="budget.rate_pps", value=str(rate),
                          why=f"default: line rate of {speed or 1000} Mb/s at {AVG_FRAME}-byte packets; set --rate-pps."))
    else:
        rate = rate_pps
        knobs.append(Knob(name="budget.rate_pps", value=str(rate), why="--rate-pps"))
    per_thread = rate / max(1, threads)
    mtu = (iface.mtu if iface is not None else None) or 1500
    frame = 16 * math.ceil((mtu + 22 + TPACKET_HEADROOM) / 16)

    ring = 1024 * math.ceil(min(MAX_RING, max(MIN_RING, per_thread * RING_SECONDS)) / 1024)
    ring_cap = int(budget * RING_SHARE / (max(1, threads) * frame))
    if ring > ring_cap:
        ring = max(MIN_RING, 1024 * (ring_cap // 1024))
        warnings.append(f"capture rings limited by the memory budget to {ring} packets per thread "
                        f"(< {RING_SECONDS * 1000:.0f} ms at the expected rate). Fix: a larger --memory.")
    block = min(MAX_BLOCK, pow2_at_least(max(MIN_BLOCK, per_thread * frame / 1000)))
    while block > MIN_BLOCK and ring * frame < 8 * block:
        block //= 2
    max_pending = min(65534, max(SURICATA_DEFAULTS["max_pending"], pow2_at_least(per_thread * 0.01)))

    flow_memcap = max(SURICATA_DEFAULTS["flow"], int(budget * FLOW_SHARE))
    want_flows = flows if flows is not None else max(SURICATA_DEFAULTS["prealloc"], rate)
    fit = flow_memcap // FLOW_BYTES
    if flows is not None and want_flows > fit:
        warnings.append(f"{want_flows} expected flows do not fit the flow memcap {_human(flow_memcap)}; "
                        f"sized for {fit}. Fix: a larger --memory or a smaller --flows.")
    planned_flows = min(want_flows, fit)
    knobs.append(Knob(name="budget.flows", value=str(planned_flows),
                      why="--flows" if flows is not None else
                      "default: about one second of packets (a new flow every ~20 packets, living ~20 s)"
                      + (f", limited to what the flow memcap holds ({FLOW_BYTES} B per flow)" if want_flows > fit else "")
                      + "; set --flows."))
    sizing = Sizing(
        memory_bytes=budget, rate_pps=rate, flows=planned_flows, frame_bytes=frame, ring_size=ring,
        block_size=block, max_pending_packets=max_pending, flow_memcap=flow_memcap,
        flow_hash_size=max(SURICATA_DEFAULTS["hash_size"], pow2_at_least(planned_flows)),
        flow_prealloc=max(SURICATA_DEFAULTS["prealloc"], planned_flows),
        stream_memcap=max(SURICATA_DEFAULTS["stream"], int(budget * STREAM_SHARE)),
        reassembly_memcap=max(SURICATA_DEFAULTS["reassembly"], int(budget * REASSEMBLY_SHARE)),
        defrag_memcap=max(SURICATA_DEFAULTS["defrag"], int(budget * DEFRAG_SHARE)),
    )
    knobs += _sizing_knobs(sizing, threads, per_thread)
    return sizing, knobs, warnings


def _sizing_knobs(s: Sizing, threads: int, per_thread: float) -> list[Knob]:
    ring_mem = s.ring_size * s.frame_bytes * threads
    return [
        Knob(name="af-packet.ring-size", value=str(s.ring_size),
             why=f"~{RING_SECONDS * 1000:.0f} ms of the expected {per_thread:.0f} pps per thread "
             f"({_human(ring_mem)} of rings, <= {RING_SHARE:.0%} of the budget): bursts wait in the ring, not dropped ({SEPTUN})."),
        Knob(name="af-packet.block-size", value=str(s.block_size),
             why=f"a tpacket-v3 block holds ~1 ms of a thread's traffic (>= 128 KiB so a defragmented 64 KiB "
             f"packet fits, >= 8 blocks per ring) ({DOCS}: af-packet)."),
        Knob(name="max-pending-packets", value=str(s.max_pending_packets),
             why=f"packets in flight per thread: ~10 ms of a thread's traffic, at least Suricata's 1024 ({DOCS}: tuning considerations)."),
        Knob(name="flow.memcap", value=suricata_size(s.flow_memcap),
             why=f"{FLOW_SHARE:.0%} of the budget: the flow table must not hit its memcap (emergency mode) ({SEPTUN})."),
        Knob(name="flow.hash-size", value=str(s.flow_hash_size),
             why="power of two >= expected concurrent flows: short hash chains per lookup."),
        Knob(name="flow.prealloc", value=str(s.flow_prealloc),
             why="expected concurrent flows allocated at start, not on the packet path."),
        Knob(name="stream.memcap", value=suricata_size(s.stream_memcap),
             why=f"{STREAM_SHARE:.0%} of the budget for TCP sessions ({SEPTUN})."),
        Knob(name="stream.reassembly.memcap", value=suricata_size(s.reassembly_memcap),
             why=f"{REASSEMBLY_SHARE:.0%} of the budget: reassembly is the largest consumer; a full memcap skips inspection ({SEPTUN})."),
        Knob(name="defrag.memcap", value=suricata_size(s.defrag_memcap),
             why=f"{DEFRAG_SHARE:.0%} of the budget, at least Suricata's 32 MiB."),
    ]
