"""The native replayer on a real veth wire between two namespaces (the runner's NamespaceWire):
exact packet and byte counts at the far end for 1-4 replayers (and the same invariant for
tcpreplay), recorded timing on an absolute schedule (never ahead of it, every packet accounted to
its second, a median lateness under 1 ms), and a replay cut short by the supervisor still reporting
what it sent. The timing targets (within 1% of the requested rate, p99 lateness < 1 ms) are figures
of benchmarks/bench_sender.py: a stall of this shared VM moves a tail, and a test must not fail on it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from idsbench import settings
from idsbench.proc import Supervisor
from idsbench.spec import Rate
from idsbench.teardown import TeardownStack
from idsbench.traffic.pcap import read_info
from idsbench.traffic.resolve import resolve_trace
from idsbench.traffic.rewrite import distinct_copy
from idsbench.traffic.sender import NativeSender, ReplayJob, SenderRun, get_sender, run_senders
from idsbench.wire.netns import NamespaceWire, WireEnds, mtu_for

from .conftest import PCAPS, TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")

REAL = ["zeek_modbusBig.pcap", "ndpi_pinterest.pcap", "ppa_email-troubles.pcap", "ppa3_synscan.pcap"]
P50_LATENESS_MS = 1.0  # the median packet's lateness: a host stall moves the tail, not the median
AHEAD_SLACK = 1e-3        # achieved/requested above 1 + this: packets left before their deadlines


@dataclass(frozen=True)
class Wire:
    sup: Supervisor
    ends: WireEnds

    def rx(self) -> tuple[int, int]:
        """(packets, bytes) received so far by the far end's interface."""
        for line in Path(f"/proc/{self.ends.sensor_holder_pid}/net/dev").read_text().splitlines():
            name, _, counters = line.partition(":")
            if name.strip() == self.ends.sensor_if:
                fields = counters.split()
                return int(fields[1]), int(fields[0])
        raise AssertionError(f"{self.ends.sensor_if} not found in the sensor namespace")


@pytest.fixture
def make_wire(state_dir) -> Iterator:
    stacks: list[TeardownStack] = []

    def make(mtu: int) -> Wire:
        td = TeardownStack(state_dir=state_dir)
        stacks.append(td)
        sup = Supervisor(td)
        return Wire(sup, NamespaceWire(sup, prefix=TEST_PREFIX, mtu=mtu).up())

    try:
        yield make
    finally:
        for td in reversed(stacks):
            td.close()


def _require_pcaps() -> None:
    if not PCAPS.is_dir():
        reason = f"shared test captures not found at {PCAPS}"
        pytest.fail(reason) if settings.strict() else pytest.skip(reason)


def _job(wire: Wire, pcaps: list[Path], rate: Rate, loops: int, cache: Path,
         duration_s: float | None = None) -> ReplayJob:
    info = read_info(pcaps[0], cache_dir=cache)
    return ReplayJob(wire.ends.sender_if, tuple(pcaps), rate, loops, duration_s, info.packets, info.duration_s,
                     info.bytes, cpus=(0, 1))


def _send(wire: Wire, sender_name: str, job: ReplayJob, out: Path, timeout_s: float = 120) -> tuple[SenderRun, int, int]:
    out.mkdir(parents=True, exist_ok=True)
    before = wire.rx()
    run = run_senders(wire.sup, get_sender(sender_name), job, out, netns=wire.ends.sender_ns, timeout_s=timeout_s)
    after = wire.rx()
    return run, after[0] - before[0], after[1] - before[1]


@pytest.mark.parametrize("sender", ["native", "tcpreplay"])
@pytest.mark.parametrize("replayers", [1, 2, 3, 4])
def test_exact_counts_arrive_for_real_and_generated_traces(tmp_path, make_wire, cache_dir, sender, replayers):
    _require_pcaps()
    traces = [PCAPS / name for name in REAL] + [resolve_trace("builtin:small-packets?packets=20000", cache_dir)]
    infos = [read_info(t, cache_dir=cache_dir) for t in traces]
    wire = make_wire(mtu_for(max(i.max_frame for i in infos)))
    loops = 2
    for trace, info in zip(traces, infos):
        copies = [distinct_copy(trace, i, cache_dir) for i in range(replayers)]
        job = _job(wire, copies, Rate(kind="topspeed"), loops, cache_dir)
        run, rx_pkts, rx_bytes = _send(wire, sender, job, tmp_path / f"{trace.stem}-{sender}")
        assert run.finished and not run.failures, (trace.name, run.failures)
        want_pkts, want_bytes = replayers * loops * info.packets, replayers * loops * info.bytes
        assert [r.pkts_sent for r in run.results] == [loops * info.packets] * replayers, trace.name
        assert sum(r.bytes_sent for r in run.results) == want_bytes, trace.name
        assert sum(r.failed for r in run.results) == 0, trace.name
        assert (rx_pkts, rx_bytes) == (want_pkts, want_bytes), trace.name


@pytest.mark.parametrize("replayers,multiplier", [(1, None), (2, None), (4, None), (1, 2.0), (1, 4.0)])
def test_recorded_timing_keeps_an_absolute_schedule(tmp_path, make_wire, cache_dir, replayers, multiplier):
    trace = resolve_trace("builtin:mixed", cache_dir)  # the demo trace (examples/quick.toml)
    info = read_info(trace, cache_dir=cache_dir)
    wire = make_wire(mtu_for(info.max_frame))
    copies = [distinct_copy(trace, i, cache_dir) for i in range(replayers)]
    rate = Rate(kind="recorded") if multiplier is None else Rate(kind="multiplier", value=multiplier)
    job = _job(wire, copies, rate, 1, cache_dir)
    run, rx_pkts, _ = _send(wire, "native", job, tmp_path)
    assert run.finished and not run.failures, run.failures
    assert rx_pkts == replayers * info.packets
    for r in run.results:
        figures = (rate.label, r.index, r.rate_ratio, r.lateness, r.elapsed_s, r.planned_s)
        assert r.pkts_sent == info.packets and r.lateness is not None and r.rate_ratio is not None, figures
        assert r.rate_ratio <= 1 + AHEAD_SLACK, figures  # an absolute schedule never runs ahead
        assert r.planned_s is not None and r.elapsed_s >= r.planned_s * (1 - AHEAD_SLACK), figures
        assert 0 <= r.lateness.p50_ms <= r.lateness.p99_ms <= r.lateness.max_ms, figures
        assert r.lateness.p50_ms < P50_LATENESS_MS, figures
        assert sum(sec.pkts for sec in r.per_second) == r.pkts_sent, figures
        assert sum(sec.due_pkts or 0 for sec in r.per_second) == r.pkts_sent, figures  # every packet was due once
        print(f"{replayers} replayer(s) at {rate.label} #{r.index}: achieved/requested {r.rate_ratio:.4f}, "
              f"lateness p50 {r.lateness.p50_ms * 1e3:.0f} µs, p99 {r.lateness.p99_ms * 1e3:.0f} µs")


def test_stopped_by_the_supervisor_it_still_reports(tmp_path, make_wire, cache_dir):
    trace = resolve_trace("builtin:mixed", cache_dir)
    info = read_info(trace, cache_dir=cache_dir)
    wire = make_wire(mtu_for(info.max_frame))
    job = _job(wire, [trace, distinct_copy(trace, 1, cache_dir)], Rate(kind="recorded"), 1, cache_dir)
    run, rx_pkts, _ = _send(wire, "native", job, tmp_path, timeout_s=1.5)
    assert not run.finished  # the 4.9 s replay was cut at 1.5 s: SIGTERM, then the report
    assert run.schedule_start_unix is not None and run.schedule_start_unix >= run.start_unix
    sent = [r.pkts_sent for r in run.results]
    assert all(0 < n < info.packets for n in sent) and sum(sent) == rx_pkts
    assert all(r.per_second and sum(s.pkts for s in r.per_second) == r.pkts_sent for r in run.results)


def test_native_sender_names_a_bad_interface(tmp_path, make_wire, cache_dir):
    trace = resolve_trace("builtin:dns?packets=200", cache_dir)
    info = read_info(trace, cache_dir=cache_dir)
    wire = make_wire(1500)
    job = ReplayJob("ibn-nosuchif", (trace,), Rate(kind="topspeed"), 1, None, info.packets, info.duration_s,
                    info.bytes)
    run = run_senders(wire.sup, NativeSender(), job, tmp_path, netns=wire.ends.sender_ns, timeout_s=30)
    assert run.failures and "bad interface ibn-nosuchif" in run.failures[0]
    assert [r.pkts_sent for r in run.results] == [0]
