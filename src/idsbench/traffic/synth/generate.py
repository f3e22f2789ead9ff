"""The deterministic generator: same profile, parameters and seed -> byte-identical capture."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import random
from dataclasses import asdict, dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np

from idsbench.errors import SpecError
from idsbench.store import atomic
from idsbench.traffic.synth import apps
from idsbench.traffic.synth import flows as fl
from idsbench.traffic.synth.dnsbatch import DnsBatch
from idsbench.traffic.synth.profiles import PROFILES, Profile
from idsbench.traffic.synth.rng import Rng
from idsbench.traffic.synth.stream import PcapStream
from idsbench.traffic.synth.tcp import FlowBuf

GENERATOR_VERSION = 3  # 2: DNS lookups built in numpy batches, flow plan drawn from numpy; 3: flows in
# start order (Poisson starts), written while generated (memory bounded)
START_UNIX = 1_700_000_000  # fixed epoch of every generated capture (2023-11-14 22:13:20 UTC)
START_NS = START_UNIX * 1_000_000_000
SERVICES = {"web": 24, "dns": 2, "mail": 2, "ssh": 6, "bulk": 4, "icmp": 12}
MAX_PACKETS = 50_000_000


@dataclass(frozen=True)
class SynthParams:
    profile: str
    packets: int
    duration_s: float
    rate_pps: float
    flows: int | None
    seed: int
    marker_rate: float
    client_net: str
    server_net: str

    def key(self) -> str:
        doc = json.dumps({"v": GENERATOR_VERSION, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(doc.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SynthResult:
    path: Path
    sha256: str
    packets: int
    bytes: int
    flows: int
    duration_s: float
    markers: int  # exact number of marker alerts markers.rules raises on this capture
    markers_by_sid: dict[int, int] = field(default_factory=dict)
    params: SynthParams | None = None

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["path"] = str(self.path)
        d["markers_by_sid"] = {str(k): v for k, v in self.markers_by_sid.items()}
        d["generator_version"] = GENERATOR_VERSION
        return d


def make_params(profile: str, *, packets: int | None = None, duration_s: float | None = None,
                flows: int | None = None, rate_pps: float | None = None, seed: int = 1,
                marker_rate: float | None = None, client_net: str = "10.10.0.0/16",
                server_net: str = "203.0.113.0/24") -> SynthParams:
    """Validate and complete the parameters (packets = rate x duration when not given)."""
    prof = profile_named(profile)
    rate = float(rate_pps) if rate_pps else prof.rate_pps
    if rate <= 0:
        raise SpecError(f"synth rate must be positive, got {rate_pps}.", fix="give --rate > 0.")
    if packets is not None and duration_s is not None and rate_pps is not None:
        raise SpecError("give at most two of packets, duration and rate.", fix="drop one of them.")
    if packets is not None and duration_s is not None:
        rate = packets / duration_s
    if packets is None:
        duration = float(duration_s) if duration_s is not None else prof.duration_s
        packets = round(rate * duration)
    else:
        duration = float(duration_s) if duration_s is not None else packets / rate
    if not 1 <= packets <= MAX_PACKETS or duration <= 0:
        raise SpecError(f"synth needs 1..{MAX_PACKETS} packets and a positive duration "
                        f"(got {packets} packets over {duration} s).", fix="adjust --packets/--duration/--rate.")
    if flows is not None and flows < 1:
        raise SpecError(f"synth flows must be >= 1, got {flows}.", fix="give --flows >= 1.")
    mr = prof.marker_rate if marker_rate is None else float(marker_rate)
    if not 0.0 <= mr <= 1.0:
        raise SpecError(f"marker rate {mr} is not a share of flows in [0, 1].", fix="give --markers 0..1.")
    for net in (client_net, server_net):
        try:
            if ipaddress.ip_network(net).version != 4 or ipaddress.ip_network(net).num_addresses < 8:
                raise ValueError
        except ValueError as exc:
            raise SpecError(f"address range {net!r} is not an IPv4 network of at least 8 addresses.",
                            fix="give a CIDR such as 10.10.0.0/16.") from exc
    return SynthParams(profile, int(packets), round(duration, 6), round(rate, 3), flows, int(seed), mr,
                       client_net, server_net)


def profile_named(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise SpecError(f"unknown traffic profile {name!r}.",
                        fix=f"choose one of: {', '.join(PROFILES)}.") from None


def _address_plan(rng: random.Random, p: SynthParams, n_clients: int) -> tuple[list[bytes], dict[str, list[bytes]]]:
    cnet = ipaddress.ip_network(p.client_net)
    snet = ipaddress.ip_network(p.server_net)
    c_hosts = cnet.num_addresses - 2
    picks = rng.sample(range(1, c_hosts + 1), min(n_clients, c_hosts))
    clients = [(cnet.network_address + k).packed for k in sorted(picks)]
    s_hosts = snet.num_addresses - 2
    servers: dict[str, list[bytes]] = {}
    k = 1
    for service, count in SERVICES.items():
        servers[service] = []
        for _ in range(count):
            servers[service].append((snet.network_address + 1 + (k - 1) % s_hosts).packed)
            k += 1
    return clients, servers


def _squeeze(buf: FlowBuf, t0: int, end: int) -> None:
    """Compress a flow's timeline so its last packet falls before `end` (order is kept)."""
    last = max(buf.ts)
    if last < end:
        return
    num, den = max(end - t0, 1), max(last - t0, 1)
    buf.ts = [t0 + (t - t0) * num // den for t in buf.ts]


@dataclass(frozen=True)
class Generated:
    """What one generation run wrote (the capture itself is in its PcapStream)."""

    markers: dict[int, int]
    flows: int
    stream: PcapStream


def generate(p: SynthParams, out: Path) -> Generated:
    """Generate the capture for the parameters into `out` (streamed: memory stays bounded).

    With a target flow count, flow sizes are scaled and the generation repeated (deterministically)
    until the count is within 10 % of the target, or the closest of a few attempts is kept."""
    prof = profile_named(p.profile)
    if p.flows is None:
        return _generate(p, 1.0, PcapStream(out, START_NS))
    scale = min(max(p.packets / p.flows / prof.pkts_per_flow, 0.01), 100_000.0)
    best: Generated | None = None
    try:
        for attempt in range(6):
            run = _generate(p, scale, PcapStream(out.with_name(f"{out.name}.try{attempt}"), START_NS))
            if best is None or abs(run.flows - p.flows) < abs(best.flows - p.flows):
                if best is not None:
                    best.stream.discard()
                best = run
            else:
                run.stream.discard()
            ratio = run.flows / p.flows
            if abs(ratio - 1) <= 0.1:
                break
            scale *= min(max(ratio, 0.25), 4.0)
    except BaseException:
        if best is not None:
            best.stream.discard()
        raise
    assert best is not None
    best.stream.path = out
    return best


PLAN_BLOCK = 4096
PRIOR_FLOWS = 8  # weight (in flows) of the profile's packets-per-flow before any flow was made


def _generate(p: SynthParams, scale: float, sink: PcapStream) -> Generated:
    """Flows in increasing start time, so every packet before the latest start is final and can be
    written: starts follow a Poisson process whose rate is steered so the packet budget runs out as
    the trace span ends (expected flows left = packets left / mean packets per flow so far). Flow
    kinds, markers and gaps come from a numpy stream (drawn in blocks), TCP/ICMP flows are built
    one by one with the Python Rng, DNS lookups are batched (numpy) between flushes."""
    try:
        return _generate_into(p, scale, sink)
    except BaseException:
        sink.discard()
        raise


def _generate_into(p: SynthParams, scale: float, sink: PcapStream) -> Generated:
    prof = profile_named(p.profile)
    rng = Rng(p.seed)
    plan = np.random.Generator(np.random.PCG64(np.random.SeedSequence([p.seed, 1])))
    n_target = p.packets
    est_flows = max(1, n_target // max(int(prof.pkts_per_flow), 1)) if p.flows is None else p.flows
    clients, servers = _address_plan(rng, p, max(16, min(4096, est_flows // 3)))
    ctx = fl.Ctx(rng, apps.Pool(rng), clients, servers, scale)
    lookups = DnsBatch(p.seed, clients, servers["dns"])
    flow_types = [fl.FLOW_TYPES[kind] for kind in prof.mix]
    cum = np.array(list(accumulate(prof.mix.values())), dtype=np.float64)
    end = int(p.duration_s * 1e9)
    span = max(int(end * 0.95), 1)
    prior = prof.pkts_per_flow * scale if p.flows is None else n_target / p.flows
    markers: dict[int, int] = {}
    n_flows = n_markers = n_pkts = 0
    kinds: list[int] = []
    marked: list[bool] = []
    gaps: list[float] = []
    j = 0
    t = 0.0
    dns = fl.dns
    buf: FlowBuf | None
    while n_pkts < n_target:
        if j == len(kinds):
            u = plan.random((2, PLAN_BLOCK))
            kinds = np.minimum(np.searchsorted(cum, u[0] * cum[-1], side="right"), len(cum) - 1).tolist()
            marked = (u[1] < p.marker_rate).tolist()
            gaps = plan.standard_exponential(PLAN_BLOCK).tolist()
            j = 0
        remaining = n_target - n_pkts
        per_flow = (prior * PRIOR_FLOWS + n_pkts) / (PRIOR_FLOWS + n_flows)
        t = min(t + gaps[j] * (span - t) / max(remaining / per_flow, 1.0), span - 1.0)
        t0 = int(t)
        flow = flow_types[kinds[j]]
        marker = apps.marker_token(n_markers + 1) if marked[j] else None
        j += 1
        n_flows += 1
        if flow is dns:
            lookups.add(t0, marker, remaining >= 2)
            n_pkts += 2 if remaining >= 2 else 1
            sid = fl.SID_UDP if marker else 0
        else:
            ctx.budget = remaining
            ctx.buf = buf = FlowBuf()
            sid = flow(ctx, t0, marker)
            if len(buf) > remaining:
                buf, sid = _rebuild_smaller(ctx, flow, t0, marker, remaining, scale)
            if buf is None:  # fill the last few packets with a DNS lookup
                lookups.add(t0, None, remaining >= 2)
                n_pkts += 2 if remaining >= 2 else 1
            else:
                if max(buf.ts) >= end:
                    _squeeze(buf, t0, end)
                sink.add(buf.ts, buf.frames)
                sink.add_bytes(buf.size)
                n_pkts += len(buf)
        if sid:
            markers[sid] = markers.get(sid, 0) + 1
            n_markers += 1
        if len(lookups) >= LOOKUP_BATCH or sink.due():
            _flush(sink, lookups, end, t0)
            ctx.forget_before(t0)
    _flush(sink, lookups, end, 1 << 62)
    return Generated(markers, n_flows, sink)


LOOKUP_BATCH = 1 << 15


def _flush(sink: PcapStream, lookups: DnsBatch, end: int, watermark: int) -> None:
    """Build the DNS lookups collected so far, then write every packet before `watermark`."""
    if len(lookups):
        ts, frames = lookups.build(end)
        sink.add(ts, frames)
    if sink.due() or watermark >= 1 << 62:
        sink.flush(watermark)


def _rebuild_smaller(ctx: fl.Ctx, flow: fl.FlowFn, t0: int, marker: bytes | None, remaining: int,
                     scale: float) -> tuple[FlowBuf | None, int]:
    """The flow in ctx.buf has more packets than the trace still needs: build it again smaller (up to
    three times); (None, 0) when it still does not fit (the caller adds a DNS lookup instead)."""
    prev = len(ctx.buf)
    sid = 0
    for attempt in range(1, 4 if remaining > 24 else 1):
        ctx.buf = FlowBuf()
        ctx.scale = scale * min(1.0, 0.7 * remaining / prev) ** attempt
        sid = flow(ctx, t0, marker)
        prev = len(ctx.buf)
        if prev <= remaining:
            break
    ctx.scale = scale
    if len(ctx.buf) > remaining:
        return None, 0
    return ctx.buf, sid


def synthesize(profile: str, out: Path | str, **params: Any) -> SynthResult:
    """Generate a capture to `out` and a sidecar `<out>.json` with its ground truth (marker alerts)."""
    p = params.pop("params", None) or make_params(profile, **params)
    out = Path(out)
    run = generate(p, out)
    stream = run.stream
    sha256 = stream.close()
    result = SynthResult(
        path=out, sha256=sha256, packets=stream.packets, bytes=stream.bytes, flows=run.flows,
        duration_s=round(stream.span_ns / 1e9, 6) if stream.packets else 0.0,
        markers=sum(run.markers.values()), markers_by_sid=dict(sorted(run.markers.items())), params=p,
    )
    atomic.write_text(out.with_name(out.name + ".json"), json.dumps(result.to_dict(), indent=1))
    return result
