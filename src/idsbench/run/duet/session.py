"""Two sensors side by side on one mirrored replay: the duet's session and its trial
(docs/duet.md).

    with stack:
        duet = DuetSession(ctx, pair, index, dirs, pair_dir, deps, stack, name)
        if duet.open():                   # placement, both setups, the mirror, both sensors, one monitor
            out = duet.trial(plan)        # ONE replay; each side drained, counted, accounted
        duet.close()                      # monitor stop, both sensors stopped (slot order)

A trial is the unit a duet sample runs once and a duet search would run many times: one replay fed to
both running sensors, each side's counters, wire and waterfall its own (`SideTrial`), their CPU time
over one common span. Each side is a `SensorSession` (its facts, accounting and stop are the single
sample's), opened here around the shared parts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from idsbench.accounting import waterfall_of
from idsbench.errors import SensorFailed
from idsbench.infra import cgroups
from idsbench.monitor import CgroupSource, DiskIO, HostCpu, HostMemory, NetDevSource, Sampler, Softnet, Source
from idsbench.monitor.base import Value
from idsbench.monitor.sensor import CgroupStats
from idsbench.plan import Case, DuetPair
from idsbench.proc import Supervisor
from idsbench.run.context import CampaignContext
from idsbench.run.drain import drain, near_idle_cores, wire_record
from idsbench.run.duet.hostcost import isolation_cpu_s, softirq_delta, softirq_s, thread_cpu_ns
from idsbench.run.duet.place import DuetPlacement, PlacementKind, Slot, place, slot_of
from idsbench.run.facts import case_capture, worker_threads
from idsbench.run.replay import ReplayOutcome, ReplayPlan, replay_plan
from idsbench.run.session import Monitor, Phase, SampleDeps, SenderGroup, SensorCpu, SensorSession, TrialOutcome
from idsbench.run.timeline import Timeline
from idsbench.run.verdict import describe_exit
from idsbench.setups.base import IsolationProcesses, SetupRequest
from idsbench.store.layout import CONSOLE_FILE, MONITOR_FILE, WITNESS_FILE
from idsbench.store.schema import Placement
from idsbench.teardown import TeardownStack
from idsbench.wire.mirror import MirrorEnds, MirrorWire
from idsbench.wire.netns import mtu_for


class Mirror(Protocol):
    """What `DuetDeps.make_mirror` returns (wire.mirror.MirrorWire; tests pass a fake)."""

    def up(self) -> MirrorEnds: ...


def real_mirror(sup: Supervisor, prefix: str, mtu: int, sensor_ns: tuple[str | None, str | None],
                method: str) -> MirrorWire:
    return MirrorWire(sup, prefix=prefix, mtu=mtu, sensor_ns=sensor_ns, method=method)


class Prefixed:
    """A monitor source whose columns get a side's prefix (`a_isolation_cpu_pct`): two setups' sources
    side by side in one monitor.csv."""

    def __init__(self, source: Source, prefix: str):
        self.source, self.prefix = source, prefix

    def columns(self) -> list[str]:
        return [self.prefix + c for c in self.source.columns()]

    def start(self) -> None:
        self.source.start()

    def sample(self) -> dict[str, Value]:
        return {self.prefix + k: v for k, v in self.source.sample().items()}

    def stop(self) -> None:
        self.source.stop()


def real_duet_monitor(out_csv: Path, interval_s: float, ends: MirrorEnds,
                      sides: Sequence[tuple[str, int, CgroupStats | None]], extra: Sequence[Source]) -> Monitor:
    """Host, both sensors' cgroups and capture interfaces (`<side>_sensor_*`), the sender's interface and
    the extra sources, in one monitor.csv (store/duet.py projects each side's view)."""
    sources: list[Source] = [HostCpu(), HostMemory(), DiskIO(), Softnet()]
    sources += [CgroupSource(stats, prefix=f"{side}_sensor") for side, _, stats in sides]
    sources.append(NetDevSource("sender", ends.sender_holder_pid, ends.sender_if))
    sources += [NetDevSource(f"{side}_sensor", ends.slots[slot].sensor_holder_pid, ends.slots[slot].sensor_if)
                for side, slot, _ in sides]
    return Sampler(out_csv, interval_s, sources + list(extra))


@dataclass(frozen=True)
class DuetDeps:
    """What a duet sample is made of: the single sample's parts plus the mirror and the pair's monitor."""

    sample: SampleDeps = field(default_factory=SampleDeps)
    make_mirror: Callable[[Supervisor, str, int, tuple[str | None, str | None], str], Mirror] = real_mirror
    make_monitor: Callable[[Path, float, MirrorEnds, Sequence[tuple[str, int, CgroupStats | None]], Sequence[Source]],
                           Monitor] = real_duet_monitor
    mirror: str = "bpf"                        # wire/mirror.py MIRROR_METHODS
    placement: PlacementKind | None = None     # None: run/duet/place.py chooses (the benchmark forces one)
    read_softirq: Callable[[], tuple[float, ...]] = softirq_s           # each CPU's softirq seconds so far
    read_threads: Callable[[Sequence[int]], dict[int, int]] = thread_cpu_ns  # isolation processes' CPU ns


@dataclass
class Side:
    name: str            # "a" or "b"
    case: Case
    slot: Slot
    session: SensorSession


@dataclass(frozen=True)
class SideTrial:
    """One side's part of a duet trial: its own counters, wire and waterfall over the one replay."""

    side: str
    slot: int
    outcome: TrialOutcome
    isolation_cpu_s: float | None = None  # its setup's host processes outside its cgroup, over the span


@dataclass(frozen=True)
class DuetTrialOutcome:
    replay: ReplayOutcome
    sides: tuple[SideTrial, ...]          # a, then b
    span_start_unix: float                # the common span both sides' CPU is read over …
    span_end_unix: float                  # … replay start to both drained
    softirq_s: tuple[float, ...] | None = None  # each CPU's softirq time over the span (hostcost.py)

    def side(self, name: str) -> SideTrial:
        return next(s for s in self.sides if s.side == name)


class DuetSession:
    def __init__(self, ctx: CampaignContext, pair: DuetPair, index: int, dirs: dict[str, Path], pair_dir: Path,
                 deps: DuetDeps, stack: TeardownStack, name: str, phase: Phase = lambda _p: None,
                 timelines: dict[str, Timeline] | None = None):
        self.ctx, self.pair, self.index, self.pair_dir, self.deps = ctx, pair, index, pair_dir, deps
        self.stack, self.name, self.phase = stack, name, phase
        sd = deps.sample
        self.sup = Supervisor(stack)
        self.placement: DuetPlacement = place(sd.available_cpus(), pair.a.cpus, sensor_cpuset=ctx.settings.setup.cpuset,
                                              kind=deps.placement)
        self.sides: list[Side] = []
        for name_, case in (("a", pair.a), ("b", pair.b)):
            timeline = (timelines or {}).get(name_)
            session = SensorSession(ctx, case, dirs[name_], sd, stack, f"{name}-{name_}", phase, timeline)
            session.sup = self.sup
            self.sides.append(Side(name_, case, self.placement.slots[slot_of(name_, index)], session))
        self.order = sorted(self.sides, key=lambda s: s.slot.index)   # slot 0 first: mirror, start, stop
        self.ends: MirrorEnds | None = None
        self.monitor: Monitor | None = None
        self.sender: SenderGroup | None = None

    def _enter(self, phase: str) -> None:
        for side in self.sides:
            side.session.timeline.enter(phase)

    # --- opening ------------------------------------------------------------------------------
    def open(self) -> bool:
        """Build both sides and start both sensors; False (the sides' facts say why) when one did not
        get ready (the other is stopped by `close`)."""
        ctx, sd = self.ctx, self.deps.sample
        if any(s.session.timeline.current is None for s in self.sides):
            self._enter("setup")
        for side in self.order:
            s, case = side.session, side.case
            s.sender_cpus = list(self.placement.sender_cpus)
            s.setup = sd.make_setup(case.setup, SetupRequest(
                sup=self.sup, engine=s.engine, name=s.name, sample_dir=s.sample_dir, cpus=side.slot.quota,
                memory_bytes=case.memory_bytes, cpu_affinity=side.slot.cpus, read_only_paths=s.run_facts.read_only_paths,
                cache_dir=ctx.cache_dir, runtime=ctx.settings.setup.runtime, swappiness=ctx.settings.setup.swappiness,
                name_prefix=ctx.name_prefix, vcpus=ctx.settings.setup.vcpus, accel=ctx.settings.setup.accel,
                capabilities=case_capture(case).container_capabilities))
        self.phase("wire")
        existing = [side.session.setup.pre_wire() for side in self.order if side.session.setup]
        mtu = mtu_for(ctx.traces[self.pair.a.trace].max_frame)
        ends = self.ends = self.deps.make_mirror(self.sup, ctx.name_prefix, mtu, (existing[0], existing[1]),
                                                 self.deps.mirror).up()
        imp = ctx.settings.wire.impair
        if imp.active:
            sd.impair(ends.sender_ns, ends.sender_if, loss=imp.loss, delay_ms=imp.delay_ms, jitter_ms=imp.jitter_ms,
                      reorder=imp.reorder)
        self.phase("setup")
        for side in self.order:
            s = side.session
            assert s.setup is not None
            s.wire = ends.slots[side.slot.index]
            s.stats = s.setup.prepare(s.wire)
            s.facts.labels += [*(["impaired"] if imp.active else []), *s.setup.labels]
            s.facts.invisible = s.setup.invisible
            s.facts.placement = Placement(sender_cpus=self.placement.sender_cpus, sensor_cpus=side.slot.cpus, mtu=mtu)
            # the side's workers follow its slot (its pinned CPUs, its quota), as a single sensor's follow its allocation
            slot_cpus = len(side.slot.cpus) if side.slot.cpus else len(self.deps.sample.available_cpus())
            options = dataclasses.replace(s.run_facts.options,
                                          threads=worker_threads(side.case.threads, side.slot.quota, slot_cpus))
            s.run = s.engine.prepare(s.sample_dir, s.setup.capture_interface(), options, mtu=mtu)
        self.sender = sd.make_sender_group(self.stack, f"{self.name}-sender")
        extra: list[Source] = [Prefixed(src, f"{side.name}_") for side in self.order
                               for src in (side.session.setup.overhead_sources() if side.session.setup else [])]
        if self.sender.source is not None:
            extra.append(self.sender.source)
        self.monitor = self.deps.make_monitor(
            self.pair_dir / MONITOR_FILE, float(ctx.settings.sensor.stats_interval_s), ends,
            [(side.name, side.slot.index, side.session.stats) for side in self.sides], extra)
        self.monitor.start()
        # one witness on both slots' CPUs (the shared placement's one CPU): both sides' host speed
        witness = sd.make_witness(self.sup, self.sensor_cpus(), self.pair_dir / WITNESS_FILE)
        for side in self.sides:
            side.session.sender = self.sender
            side.session.witness = witness
        self.phase("sensor start")
        self._enter("sensor_start")
        for side in self.order:
            s = side.session
            assert s.setup is not None and s.run is not None
            s.child = s.setup.launch(s.run.argv, stdout=s.sample_dir / CONSOLE_FILE)
        self._enter("ready")
        return all(self._wait_ready(side) for side in self.order)

    def sensor_cpus(self) -> list[int]:
        """Both slots' CPUs (a slot on all CPUs: every CPU but the sender's, where there are others)."""
        available = self.deps.sample.available_cpus()
        rest = [c for c in available if c not in self.placement.sender_cpus] or available
        return sorted({c for side in self.sides for c in (side.slot.cpus or rest)})

    def _wait_ready(self, side: Side) -> bool:
        """As a single sample's session waits (its memory watch, its failure facts)."""
        s, f = side.session, side.session.facts
        assert s.setup is not None and s.run is not None and s.child is not None
        watch = cgroups.StarvationWatch(s.stats.memory_events) if isinstance(s.stats, cgroups.MemoryReadable) else None
        try:
            f.ready_s = s.run.wait_ready(watch.guard(s.child.poll) if watch else s.child.poll,
                                         self.ctx.settings.sensor.ready_timeout_s)
        except SensorFailed as exc:
            starved = isinstance(exc, cgroups.MemoryStarved)
            s.setup.stop(5.0)
            f.oom = s.setup.oom_killed()
            f.memory = exc.events if isinstance(exc, cgroups.MemoryStarved) else s.memory_events(watch)
            f.memory_starved = starved or bool(f.memory and f.memory.reached_limit())
            f.sensor_failure = f"{s.engine.name} did not start: {exc.message if starved else exc}"
            return False
        return True

    # --- a trial ------------------------------------------------------------------------------
    def plan(self, pcaps: Sequence[Path], out_dir: Path, case: Case | None = None) -> ReplayPlan:
        """The replay of `case` (default: side a's; a duet search's trial: its load) into the mirror."""
        assert self.ends is not None and self.sender is not None, "open() first"
        case = case or self.pair.a
        return replay_plan(case, self.ctx.traces[case.trace], pcaps, self.ends.slots[0], self.placement.sender_cpus,
                           out_dir, self.ctx.settings.timing.replay_timeout_s, self.sender.procs_files,
                           impaired=self.ctx.settings.wire.impaired)

    def trial(self, plan: ReplayPlan, *, stop_after: bool = True) -> DuetTrialOutcome:
        """Replay `plan` once into both running sensors; drain each (slot order); each side's counters
        over this trial, its wire and waterfall; both sides' CPU over one span (replay start → both
        drained, nothing subtracted: the same span and housekeeping for both). `stop_after`: the sensors
        are stopped next (a sample: a quiet drain may end it; the final counters count)."""
        assert self.ends is not None and self.monitor is not None, "open() first"
        sd, timing = self.deps.sample, self.ctx.settings.timing
        starts = {side.name: side.session._baseline() for side in self.sides}
        before = {side.name: sd.snapshot(side.session.wire) for side in self.sides if side.session.wire}
        self.monitor.sample_now()
        self.phase("replay")
        self._enter("replay")
        span_start = sd.wall()
        soft0 = self.deps.read_softirq()
        iso0 = {side.name: self._isolation_threads(side) for side in self.order}
        cpu0 = {side.name: side.session.cpu_seconds() for side in self.order}
        t0 = sd.monotonic()
        replay = sd.sender.replay(self.sup, plan)
        cpu1 = {side.name: side.session.cpu_seconds() for side in self.order}
        t1 = sd.monotonic()
        self.monitor.sample_now()
        self.phase("drain")
        self._enter("drain")
        drains = {}
        for side in self.order:
            s = side.session
            assert s.run is not None
            quiet = s._quiet_watch() if stop_after and not sd.bench_old_path else None
            drains[side.name] = drain(s.run, s.alive, replay.record.end_unix, timing.drain_timeout_s,
                                      min_wait_s=timing.settle_s, clock=sd.monotonic, sleep=sd.sleep,
                                      uncounted=s.uncounted, quiet=quiet, interval_s=0.05 if quiet is not None else 0.1,
                                      cpu_s=s.cpu_seconds, idle_cores=near_idle_cores(s.allocation),
                                      quiet_conclude_s=quiet.conclude_s if quiet is not None else 0.0)
        cpu2 = {side.name: side.session.cpu_seconds() for side in self.order}
        iso2 = {side.name: self._isolation_threads(side) for side in self.order}
        soft2 = self.deps.read_softirq()
        t2, span_end = sd.monotonic(), sd.wall()
        out = []
        for side in self.sides:
            s, name = side.session, side.name
            assert s.wire is not None
            wire = wire_record(before[name], sd.snapshot(s.wire), impaired=self.ctx.settings.wire.impaired)
            drained = drains[name]
            s._last_point = drained.last
            start = starts[name]
            counters = None
            if drained.last is not None:
                counters = drained.last.counters if start is None else drained.last.counters.minus(start.counters)
            alive = s.alive()
            if not alive and s.facts.sensor_failure is None and s.child is not None and s.setup is not None:
                s.facts.oom = s.setup.oom_killed()
                s.facts.memory = s.memory_events()
                s.facts.sensor_failure = f"{describe_exit(s.engine.name, s.child.returncode)} during the run"
            c0, c1, c2 = cpu0[name], cpu1[name], cpu2[name]
            cpu = None if c0 is None or c1 is None or c2 is None else SensorCpu(0.0, c0, c1, c2, t1 - t0, t2 - t1)
            wf = waterfall_of(replay.record.sent_pkts, wire, counters, s.facts.invisible) if counters else None
            before_iso, after_iso = iso0[name], iso2[name]
            iso = None if before_iso is None or after_iso is None else isolation_cpu_s(before_iso, after_iso)
            out.append(SideTrial(name, side.slot.index, TrialOutcome(replay, drained, wire, counters, wf, alive, cpu),
                                 iso))
        return DuetTrialOutcome(replay, tuple(out), span_start, span_end, softirq_delta(soft0, soft2))

    def _isolation_threads(self, side: Side) -> dict[int, int] | None:
        """The CPU ns of the side's isolation processes outside its cgroup (None: its setup has none)."""
        setup = side.session.setup
        if not isinstance(setup, IsolationProcesses):
            return None
        return self.deps.read_threads(setup.isolation_pids())

    # --- closing ------------------------------------------------------------------------------
    def close(self) -> None:
        """The monitor stops while both sensors still run; then each is stopped (slot order)."""
        if self.monitor is not None:
            self.monitor.stop()
        for side in self.order:
            side.session.close()
