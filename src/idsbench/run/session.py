"""A running sensor on its wire, ready for one replay (a sample) or many (the trials of a search).

    with stack:
        session = SensorSession(ctx, case, sample_dir, deps, stack, name)
        if session.open():                 # setup, wire, sensor config, monitor, launch, ready
            outcome = session.trial(plan)  # replay, drain, counters over the trial, wire accounting
            ...
        session.close()                    # monitor stop, graceful sensor stop, OOM check

Every part comes from `SampleDeps`, so the sequence is unit-tested with fakes; the real parts are the
defaults. Everything created goes into the caller's teardown stack.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from idsbench.accounting import waterfall_of
from idsbench.bypass.counting import xdp_drops
from idsbench.errors import SensorFailed
from idsbench.infra import cgroups
from idsbench.infra.cgroups import CgroupResource
from idsbench.monitor import Sampler, Source, standard_sources
from idsbench.monitor.sensor import CgroupSource, CgroupStats, ProcessGroup
from idsbench.monitor.witness import HostWitness, start_witness
from idsbench.plan import Case
from idsbench.proc import Supervisor
from idsbench.run.context import CampaignContext
from idsbench.run.drain import (
    QUIET_S,
    DrainResult,
    QuietWatch,
    WireSnapshot,
    any_runnable,
    drain,
    near_idle_cores,
    wire_record,
    wire_snapshot,
)
from idsbench.run.facts import allocation_cores, case_capture, case_facts
from idsbench.run.replay import ReplayOutcome, ReplayPlan, Sender, TrafficSender, replay_plan
from idsbench.run.timeline import Timeline
from idsbench.run.verdict import describe_exit
from idsbench.sensors.base import CounterPoint, Counters, SensorRun
from idsbench.setups.base import Launched, Setup, SetupRequest
from idsbench.setups.registry import make_setup
from idsbench.store.layout import CONSOLE_FILE, MONITOR_FILE, WITNESS_FILE
from idsbench.store.schema import Placement, WireRecord
from idsbench.store.waterfall import Waterfall
from idsbench.teardown import TeardownStack
from idsbench.wire.netns import NamespaceWire, WireEnds, XdpResource, impair, mtu_for
from idsbench.wire.nic import NicWire

Phase = Callable[[str], None]
FIRST_STATS_TIMEOUT_S = 15.0
IDLE_PROBE_S = 0.25  # how long the sensor's idle CPU use is measured before a trial that measures CPU


class Wire(Protocol):
    def up(self) -> WireEnds: ...


class Monitor(Protocol):
    def start(self) -> None: ...

    def sample_now(self) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class SenderGroup:
    """The replayers' own cgroup (their CPU is measured apart from the sensor's)."""

    procs_files: Sequence[Path]
    source: Source | None


def real_wire(sup: Supervisor, prefix: str, mtu: int, sensor_ns: str | None) -> Wire:
    return NamespaceWire(sup, prefix=prefix, mtu=mtu, sensor_ns=sensor_ns)


def real_monitor(out_csv: Path, interval_s: float, wire: WireEnds, stats: CgroupStats,
                 extra: Sequence[Source]) -> Monitor:
    """Host, sensor, both wire ends and the setup's own sources, at the stats interval."""
    netdevs = [("sender", wire.sender_holder_pid, wire.sender_if),
               ("sensor", wire.sensor_holder_pid, wire.sensor_if)]
    return Sampler(out_csv, interval_s, standard_sources(stats, netdevs) + list(extra))


def real_sender_group(stack: TeardownStack, name: str) -> SenderGroup:
    group = cgroups.create(name, realtime=True)  # the native sender keeps its schedule with SCHED_FIFO
    stack.push(CgroupResource.of(group))
    return SenderGroup(group.procs_files, CgroupSource(group, prefix="sender"))


@dataclass(frozen=True)
class SampleDeps:
    """What a sample (or a search's trials) is made of; tests pass fakes."""

    make_wire: Callable[[Supervisor, str, int, str | None], Wire] = real_wire
    make_setup: Callable[[str, SetupRequest], Setup] = make_setup
    sender: Sender = field(default_factory=TrafficSender)  # runs the replayers of the case's `traffic.sender`
    make_monitor: Callable[[Path, float, WireEnds, CgroupStats, Sequence[Source]], Monitor] = real_monitor
    make_sender_group: Callable[[TeardownStack, str], SenderGroup] = real_sender_group
    # the host-speed witness on the sensor's CPUs (monitor/witness.py); None: no witness (the benchmark's
    # comparison without one)
    make_witness: Callable[[Supervisor, Sequence[int], Path], HostWitness | None] = start_witness
    snapshot: Callable[[WireEnds], WireSnapshot] = wire_snapshot
    impair: Callable[..., None] = impair
    make_stack: Callable[[Path], TeardownStack] = lambda state_dir: TeardownStack(state_dir=state_dir)
    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    available_cpus: Callable[[], list[int]] = lambda: sorted(os.sched_getaffinity(0))
    # Benchmark-only switch (benchmarks/bench_overhead.py compares both paths in one run): True runs a
    # sample as before issue 23 — wait for the sensor's first published counters before the replay,
    # and drain by published counters only (no quiet drain). Nothing else sets it.
    bench_old_path: bool = False
    # Benchmark-only switches of the CPU per packet (benchmarks/bench_cpu_per_packet.py; issue 28 item 8's
    # before/after): `bench_old_cost` makes a sample's cost the definition before issue 28 ("quiet-idle",
    # idsbench.cpucost); `bench_pre_idle_s` > 0 measures the idle sensor that long before the replay (the
    # "pre-idle" definition's reading; it lengthens every sample). Nothing else sets them.
    bench_old_cost: bool = False
    bench_pre_idle_s: float = 0.0


@dataclass(frozen=True)
class SensorCpu:
    """The sensor's CPU time (seconds, its cgroup) around one replay: whether it kept up.

    `idle_rate`: cores it used just before the replay, with nothing to do (a VM's emulator idles
    at several % of a core). `backlog_fraction`: the work left when the replay ended (its CPU
    during the drain) over the work done during the replay, idle use taken out of both; what part of
    that tail is a deficit is the search's to say (`search.mlr.behind_packets`)."""

    idle_rate: float
    at_start: float
    at_replay_end: float
    at_drained: float
    replay_s: float
    drain_s: float
    # a sample's end of processing (its quiet drain's start: seconds after replay start, CPU seconds then)
    processed_s: float | None = None
    at_processed: float | None = None
    pre_idle_rate: float | None = None  # cores used idle over SampleDeps.bench_pre_idle_s before the replay
    pre_idle_s: float | None = None

    @property
    def backlog_work_s(self) -> float:
        """CPU seconds it worked after the replay ended, idle use taken out."""
        return max(0.0, self.at_drained - self.at_replay_end - self.idle_rate * self.drain_s)

    @property
    def backlog_fraction(self) -> float:
        during = self.at_replay_end - self.at_start - self.idle_rate * self.replay_s
        return self.backlog_work_s / during if during > 0 else 0.0

    @property
    def cores_needed(self) -> float:
        """The CPU the replay's packets needed, in cores: all of the sensor's time from replay start
        to the end of its drain, over the replay's span."""
        return (self.at_drained - self.at_start) / self.replay_s if self.replay_s > 0 else 0.0


@dataclass(frozen=True)
class TrialOutcome:
    """One replay on a running sensor: what was sent, what the sensor did with it (counters over the
    trial only), where packets were lost."""

    replay: ReplayOutcome
    drain: DrainResult
    wire: WireRecord | None
    counters: Counters | None          # the sensor's counters over this trial (None: none published)
    waterfall: Waterfall | None
    sensor_alive: bool
    cpu: SensorCpu | None = None       # with `trial(measure_cpu=True)`, where the cgroup is readable


@dataclass
class SessionFacts:
    """What the session learnt (becomes part of the sample summary and its verdict)."""

    ready_s: float | None = None
    sensor_failure: str | None = None
    oom: bool = False
    memory: cgroups.MemoryEvents | None = None  # the sensor group's memory state when it failed
    memory_starved: bool = False  # it never got ready while its group sat at its memory limit
    stop_unix: float | None = None
    exit_code: int | None = None
    labels: list[str] = field(default_factory=list)
    placement: Placement | None = None
    invisible: tuple[str, ...] = ()


class SensorSession:
    def __init__(self, ctx: CampaignContext, case: Case, sample_dir: Path, deps: SampleDeps, stack: TeardownStack,
                 name: str, phase: Phase = lambda _p: None, timeline: Timeline | None = None):
        """`timeline`: where the session's phases go (a sample's; else its own)."""
        self.ctx, self.case, self.sample_dir, self.deps = ctx, case, sample_dir, deps
        self.stack, self.name, self.phase = stack, name, phase
        self.timeline = timeline or Timeline(deps.wall, deps.monotonic)
        self.sup = Supervisor(stack)
        self.engine = ctx.engine(case)
        self.trace = ctx.traces[case.trace]
        self.facts = SessionFacts()
        self.run_facts = case_facts(ctx, case, deps.available_cpus())  # CPUs, allocation, workers, options
        self.allocation = self.run_facts.allocation  # the cores it can use now (`set_cpus` changes them)
        self.run: SensorRun | None = None
        self.setup: Setup | None = None
        self.wire: WireEnds | None = None
        self.child: Launched | None = None
        self.monitor: Monitor | None = None
        self.sender_cpus: list[int] = []
        self.sender: SenderGroup | None = None
        self.stats: CgroupStats | None = None
        self.witness: HostWitness | None = None
        self._last_point: CounterPoint | None = None
        self._origin: tuple[WireSnapshot, CounterPoint] | None = None  # wire and counters at the first baseline
        self._filter0 = 0  # the XDP bypass filter's drops at that baseline

    # --- opening ------------------------------------------------------------------------------
    def open(self) -> bool:
        """Build everything and start the sensor; False (facts say why) when it did not get ready."""
        ctx, case, deps, f = self.ctx, self.case, self.deps, self.facts
        if self.timeline.current is None:
            self.timeline.enter("setup")
        rf, su = self.run_facts, ctx.settings.setup
        self.sender_cpus = list(rf.cpus.sender)
        setup = self.setup = deps.make_setup(case.setup, SetupRequest(
            sup=self.sup, engine=self.engine, name=self.name, sample_dir=self.sample_dir, cpus=rf.quota,
            memory_bytes=case.memory_bytes, cpu_affinity=rf.cpus.sensor_affinity, read_only_paths=rf.read_only_paths,
            cache_dir=ctx.cache_dir, runtime=su.runtime, swappiness=su.swappiness, name_prefix=ctx.name_prefix,
            vcpus=su.vcpus, accel=su.accel, vfio_device=su.vfio_device, sriov_pf=su.sriov_pf,
            sriov_mac=su.sriov_mac, sriov_vlan=su.sriov_vlan, hugepages=su.hugepages,
            boot_timeout_s=su.boot_timeout_s,
            capabilities=case_capture(case).container_capabilities,
        ))
        self.phase("wire")
        wire = self.wire = self._make_wire(setup).up()
        imp = ctx.settings.wire.impair
        if imp.active:
            deps.impair(wire.sender_ns, wire.sender_if, loss=imp.loss, delay_ms=imp.delay_ms,
                        jitter_ms=imp.jitter_ms, reorder=imp.reorder)
            f.labels.append("impaired")
        self.phase("setup")
        stats = self.stats = setup.prepare(wire)
        f.labels += list(setup.labels)
        f.invisible = setup.invisible
        f.placement = Placement(sender_cpus=rf.cpus.sender, sensor_cpus=rf.cpus.sensor if rf.cpus.pinned else None,
                                mtu=wire.mtu, sensor_workers=rf.workers)
        run = self.run = self.engine.prepare(self.sample_dir, setup.capture_interface(), rf.options, mtu=wire.mtu)
        self.sender = deps.make_sender_group(self.stack, f"{self.name}-sender")
        sources = [*setup.overhead_sources(), *([self.sender.source] if self.sender.source else [])]
        self.monitor = deps.make_monitor(self.sample_dir / MONITOR_FILE, float(ctx.settings.sensor.stats_interval_s),
                                         wire, stats, sources)
        self.monitor.start()
        self.witness = deps.make_witness(self.sup, rf.cpus.sensor, self.sample_dir / WITNESS_FILE)
        self.phase("sensor start")
        self.timeline.enter("sensor_start")
        if rf.options.bypass == "xdp":  # Suricata's XDP filter: detached at teardown, also after a SIGKILL
            self.stack.push(XdpResource(setup.capture_interface(), wire.sensor_ns))
        child = self.child = setup.launch(run.argv, stdout=self.sample_dir / CONSOLE_FILE)
        # A sensor stuck at its memory limit may stall in reclaim instead of being OOM-killed:
        # the wait ends once its group sat there for a few seconds (cgroups.StarvationWatch).
        watch = cgroups.StarvationWatch(stats.memory_events) if isinstance(stats, cgroups.MemoryReadable) else None
        self.timeline.enter("ready")  # until the replay starts: the engine's start (rule load) and first counters
        try:
            f.ready_s = run.wait_ready(watch.guard(child.poll) if watch else child.poll,
                                       ctx.settings.sensor.ready_timeout_s)
        except SensorFailed as exc:
            starved = isinstance(exc, cgroups.MemoryStarved)
            setup.stop(5.0)
            f.oom = setup.oom_killed()
            f.memory = exc.events if isinstance(exc, cgroups.MemoryStarved) else self.memory_events(watch)
            f.memory_starved = starved or bool(f.memory and f.memory.reached_limit())
            # A starved sensor's fix comes with the verdict (run/verdict.starved_reason).
            f.sensor_failure = f"{self.engine.name} did not start: {exc.message if starved else exc}"
            return False
        return True

    def _make_wire(self, setup: Setup) -> Wire:
        """The veth pair, or two NIC ports of this host when [wire] names a sender port (wire/nic.py)."""
        wire, mtu = self.ctx.settings.wire, mtu_for(self.trace.max_frame)
        if wire.sender_interface is None:
            return self.deps.make_wire(self.sup, self.ctx.name_prefix, mtu, setup.pre_wire())
        return NicWire(self.sup, wire.sender_interface, wire.sensor_interface,
                       prefix=self.ctx.name_prefix, mtu=mtu, sensor_ns=setup.pre_wire())

    def memory_events(self, watch: cgroups.StarvationWatch | None = None) -> cgroups.MemoryEvents | None:
        """The sensor group's memory state now (else the watch's last reading); None when unknown."""
        try:
            if isinstance(self.stats, cgroups.MemoryReadable):
                return self.stats.memory_events()
        except (OSError, ValueError):
            pass
        return watch.last if watch else None

    def alive(self) -> bool:
        return self.child is not None and self.child.poll() is None

    # --- a replay -----------------------------------------------------------------------------
    def plan(self, case: Case, pcaps: Sequence[Path], out_dir: Path) -> ReplayPlan:
        assert self.wire is not None and self.sender is not None, "open() first"
        return replay_plan(case, self.trace, pcaps, self.wire, self.sender_cpus, out_dir,
                           self.ctx.settings.timing.replay_timeout_s, self.sender.procs_files,
                           impaired=self.ctx.settings.wire.impaired or bool(getattr(self.setup, "sender_qdisc", False)))

    def trial(self, plan: ReplayPlan, *, settle_s: float | None = None, measure_cpu: bool = False,
              stop_after: bool = False, timeline: Timeline | None = None) -> TrialOutcome:
        """Replay `plan` on the running sensor and wait until it processed what it captured.
        `measure_cpu`: also read the sensor's CPU time around the replay (`TrialOutcome.cpu`).
        `stop_after`: the sensor is stopped next and its final counters count (a sample): the drain may
        end once the sensor is quiet (`QuietWatch`), and the trial's own counters may then be short.
        `timeline`: where the replay and drain phases go (default: the session's)."""
        assert self.wire is not None and self.monitor is not None and self.run is not None, "open() first"
        deps, run = self.deps, self.run
        tl = timeline or self.timeline
        start_point = self._baseline()
        # A trial's idle use is probed before its replay; a sample's (stopped next) is what its quiet
        # drain saw at the end, and its idle rate over `timing.idle_window_s` before the replay (whole periods
        # of the sensor's housekeeping: the fixed cost `sensor_us_per_pkt_net` takes out, idsbench.cpucost).
        idle_rate = self._idle_rate() if measure_cpu and not stop_after else None
        pre_idle_s = deps.bench_pre_idle_s or self.ctx.settings.timing.idle_window_s
        pre_idle = self._idle_rate(pre_idle_s) if measure_cpu and stop_after and pre_idle_s > 0 else None
        before, filtered = deps.snapshot(self.wire), self.filter_drops()
        self.monitor.sample_now()  # a row exactly at replay start and end
        self.phase("replay")
        tl.enter("replay")
        cpu_start, t_start = self.cpu_seconds(), deps.monotonic()
        replay = deps.sender.replay(self.sup, plan)
        cpu_end, t_end = self.cpu_seconds(), deps.monotonic()
        self.monitor.sample_now()
        self.phase("drain")
        tl.enter("drain")
        timing = self.ctx.settings.timing
        quiet = self._quiet_watch() if stop_after and not deps.bench_old_path else None
        drained = drain(run, self.alive, replay.record.end_unix, timing.drain_timeout_s,
                        min_wait_s=timing.settle_s if settle_s is None else settle_s,
                        clock=deps.monotonic, sleep=deps.sleep, uncounted=self.uncounted, quiet=quiet,
                        interval_s=0.05 if quiet is not None else 0.1, cpu_s=self.cpu_seconds,
                        idle_cores=near_idle_cores(self.allocation),
                        quiet_conclude_s=quiet.conclude_s if quiet is not None else 0.0)
        cpu_drained, t_drained = self.cpu_seconds(), deps.monotonic()
        if measure_cpu and stop_after:
            idle_rate = quiet.idle_cores if quiet is not None and quiet.idle_cores is not None else self._idle_rate()
        cpu = None
        if idle_rate is not None and cpu_start is not None and cpu_end is not None and cpu_drained is not None:
            processed = quiet.quiet_since if quiet is not None else None
            cpu = SensorCpu(idle_rate, cpu_start, cpu_end, cpu_drained, t_end - t_start, t_drained - t_end,
                            processed_s=processed[0] - t_start if processed else None,
                            at_processed=processed[1] if processed else None, pre_idle_rate=pre_idle,
                            pre_idle_s=pre_idle_s if pre_idle is not None else None)
        wire = wire_record(before, deps.snapshot(self.wire), impaired=self.ctx.settings.wire.impaired)
        end_point = drained.last
        self._last_point = end_point
        counters = None
        if end_point is not None:
            counters = end_point.counters if start_point is None else end_point.counters.minus(start_point.counters)
            if filtered or self.run_facts.options.bypass in ("xdp", "ebpf"):  # the filter's drops: bypassed, not lost
                counters = dataclasses.replace(counters, bypassed_pkts=counters.bypassed_pkts + self.filter_drops()
                                               - filtered)
        alive = self.alive()
        if not alive and self.facts.sensor_failure is None and self.child is not None and self.setup is not None:
            self.facts.oom = self.setup.oom_killed()
            self.facts.memory = self.memory_events()
            self.facts.sensor_failure = f"{describe_exit(self.engine.name, self.child.returncode)} during the run"
        wf = waterfall_of(replay.record.sent_pkts, wire, counters, self.facts.invisible) if counters else None
        return TrialOutcome(replay, drained, wire, counters, wf, alive, cpu)

    def _quiet_watch(self) -> QuietWatch | None:
        """Where the sensor's CPU time and its capture interface (the wire's end) can be read."""
        if self.facts.invisible or self.wire is None or self.cpu_seconds() is None or not self.sensor_pids():
            return None
        wire = self.wire

        def received() -> int | None:
            ends = self.deps.snapshot(wire)
            return None if ends.sensor is None else ends.sensor.rx_pkts + ends.sensor.rx_dropped

        window = case_capture(self.case).quiet_window_s or QUIET_S
        return QuietWatch(self.cpu_seconds, received, self.allocation, clock=self.deps.monotonic,
                          runnable=lambda: any_runnable(self.sensor_pids()), window_s=window)

    def _idle_rate(self, seconds: float = IDLE_PROBE_S) -> float | None:
        """Cores the sensor uses with nothing to do, over `seconds` (before a trial's replay, or after a
        sample's drain when its quiet watch did not conclude)."""
        c0, t0 = self.cpu_seconds(), self.deps.monotonic()
        self.deps.sleep(seconds)
        c1, t1 = self.cpu_seconds(), self.deps.monotonic()
        if c0 is None or c1 is None or t1 <= t0:
            return None
        return max(0.0, (c1 - c0) / (t1 - t0))

    def _baseline(self) -> CounterPoint | None:
        """The counters before a trial: the last trial's end, or the first stats record after ready
        (then also the wire's origin for `uncounted`)."""
        if self._last_point is not None:
            return self._last_point
        assert self.run is not None and self.wire is not None
        if not self.deps.bench_old_path:
            # A sensor that just started has counted nothing: its counters are zero until the replay's
            # first packet (the quiet wire carries nothing else), so there is no need to wait for the
            # first record it publishes (up to a stats interval after it is ready).
            zero = CounterPoint(self.deps.wall(), 0.0, Counters())
            if not self.facts.invisible:
                self._origin, self._filter0 = (self.deps.snapshot(self.wire), zero), self.filter_drops()
            return zero
        deadline = self.deps.monotonic() + FIRST_STATS_TIMEOUT_S
        point = self.run.live_counters()
        while point is None and self.alive() and self.deps.monotonic() < deadline:
            self.deps.sleep(0.1)
            point = self.run.live_counters()
        if point is not None and not self.facts.invisible:
            self._origin, self._filter0 = (self.deps.snapshot(self.wire), point), self.filter_drops()
        return point

    def filter_drops(self) -> int:
        """Packets the sensor's kernel-side bypass filter dropped so far (idsbench.bypass: dropped by design,
        before the capture; 0 without it): "xdp" on its capture interface, "ebpf" at its socket (the filter's
        own counters, read through the sensor's processes while it runs)."""
        mode = self.run_facts.options.bypass
        if mode not in ("xdp", "ebpf") or self.wire is None or self.setup is None or self.facts.invisible:
            return 0
        if mode == "ebpf":
            read = getattr(self.run, "bypass_filter_pkts", None)
            return int(read(self.sensor_pids())) if callable(read) else 0
        return xdp_drops(self.wire.sensor_ns, self.setup.capture_interface())

    def uncounted(self, point: CounterPoint) -> int | None:
        """Packets the sensor's interface received since the first baseline that `point` does not
        count as captured (None where the capture interface is not the wire's end)."""
        if self._origin is None or self.wire is None:
            return None
        (wire0, point0) = self._origin
        now = self.deps.snapshot(self.wire)
        if wire0.sensor is None or now.sensor is None:
            return None
        received = now.sensor.rx_pkts - wire0.sensor.rx_pkts - (self.filter_drops() - self._filter0)
        return received - (point.counters.captured_pkts - point0.counters.captured_pkts)

    def resync(self) -> bool:
        """After a trial whose accounting did not close: wait until the sensor counts everything its
        interface received, so the next trial starts from a true baseline. False if it never does."""
        assert self.run is not None
        drained = drain(self.run, self.alive, self.deps.wall(), self.ctx.settings.timing.drain_timeout_s,
                        clock=self.deps.monotonic, sleep=self.deps.sleep, uncounted=self.uncounted,
                        cpu_s=self.cpu_seconds, idle_cores=near_idle_cores(self.allocation))
        if drained.last is not None:
            self._last_point = drained.last
        return drained.drained

    def sensor_pids(self) -> list[int]:
        """The processes in the sensor's cgroup (the sensor; qemu for a VM), [] when unknown."""
        try:
            return self.stats.pids() if isinstance(self.stats, ProcessGroup) else []
        except OSError:
            return []

    def cpu_seconds(self) -> float | None:
        """CPU time the sensor used so far (its cgroup), None when it cannot be read."""
        try:
            return self.stats.cpu_usage_ns() / 1e9 if self.stats is not None else None
        except (OSError, ValueError):
            return None

    def set_cpus(self, cpus: float) -> bool:
        """Change the sensor's CPU limit while it runs (False: this setup cannot)."""
        change = getattr(self.setup, "set_cpus", None)
        if not (callable(change) and change(cpus)):
            return False
        self.allocation = allocation_cores(cpus, len(self.run_facts.cpus.sensor))
        return True

    # --- closing ------------------------------------------------------------------------------
    def close(self) -> None:
        """Monitor and witness stop (the series end while the sensor still runs), graceful stop, OOM check."""
        self.timeline.enter("stop")
        if self.monitor is not None:
            self.monitor.stop()
        if self.witness is not None:
            self.witness.stop()
        if self.setup is None or self.child is None or self.facts.ready_s is None:
            return
        self.phase("sensor stop")
        self.facts.stop_unix = self.deps.wall()
        # the eBPF socket filter's counters go with the sensor: read before it stops (the interface's after)
        filtered = self.filter_drops() if self.run_facts.options.bypass == "ebpf" else None
        self.facts.exit_code = self.setup.stop(self.ctx.settings.timing.stop_timeout_s)
        if self.run is not None and hasattr(self.run, "filter_drops"):  # what its bypass filter dropped
            self.run.filter_drops = self.filter_drops() if filtered is None else filtered
        self.facts.oom = self.facts.oom or self.setup.oom_killed()
        if self.facts.oom and self.facts.memory is None:
            self.facts.memory = self.memory_events()
