"""The sample timeline, the quiet drain and the overhead figures derived from them (issue 23)."""

from __future__ import annotations

from idsbench.run.drain import QuietWatch, drain
from idsbench.run.timeline import Timeline
from idsbench.sensors.base import CounterPoint, Counters
from idsbench.store.schema import PhaseRecord, SampleSummary, TraceRecord, TrialRecord, phase_seconds
from tests.fakeclock import Clock


def test_phases_tile_the_wall_time_in_order():
    clock = Clock()
    tl = Timeline(wall=lambda: 1000.0 + clock.t, monotonic=clock.now)
    for name, seconds in (("setup", 0.5), ("ready", 1.25), ("replay", 5.0), ("stop", 0.75)):
        tl.enter(name)
        clock.sleep(seconds)
    assert tl.current == "stop" and len(tl.records()) == 3  # the running phase is not a record yet
    tl.end()
    records = tl.records()
    assert [r.name for r in records] == ["setup", "ready", "replay", "stop"]
    assert [r.start_unix for r in records] == [1000.0, 1000.5, 1001.75, 1006.75]
    assert sum(r.duration_s for r in records) == 7.5


def _summary(**kw: object) -> SampleSummary:
    trace = TraceRecord(ref="t", path="/t", sha256="x", packets=1, bytes=1, duration_s=1.0)
    return SampleSummary.model_validate({"campaign": "c", "case_id": "k", "sample": 0,
                                         "case": {"trace": "t", "replayers": 1, "rate": "recorded"},
                                         "trace": trace.model_dump(), **kw})


def test_overhead_is_the_wall_time_beyond_the_replay_phase():
    phases = [PhaseRecord(name=n, start_unix=0.0, duration_s=d)
              for n, d in (("setup", 0.3), ("ready", 0.7), ("replay", 5.0), ("drain", 0.2), ("stop", 1.3))]
    s = _summary(started_unix=100.0, finished_unix=107.5, phases=[p.model_dump() for p in phases])
    assert s.schema_version == 3
    assert s.overhead_s == 2.5
    assert phase_seconds(s.phases)["stop"] == 1.3


def test_an_older_summary_without_a_timeline_still_has_its_overhead():
    s = _summary(schema=2, started_unix=100.0, finished_unix=112.0,
                 replay={"start_unix": 101.5, "end_unix": 106.5, "sent_pkts": 1, "sent_bytes": 1})
    assert s.phases == () and s.overhead_s == 7.0
    assert _summary(started_unix=100.0, finished_unix=101.0).overhead_s is None  # no replay, no overhead


def test_a_trial_overhead_leaves_out_its_replay():
    t = TrialRecord(index=0, mode="warm", value=1.0, offered_pps=None, achieved_pps=1.0, duration_s=2.0, sent_pkts=1,
                    phases=(PhaseRecord(name="setup", start_unix=0, duration_s=0.25),
                            PhaseRecord(name="replay", start_unix=0, duration_s=2.0),
                            PhaseRecord(name="drain", start_unix=0, duration_s=0.5)))
    assert t.overhead_s == 0.75
    assert t.model_copy(update={"phases": ()}).overhead_s is None


class Sensor:
    """Quiet after `quiet_from` s: no packet arrives, no CPU used, no thread runnable, unless told."""

    def __init__(self, clock: Clock, quiet_from: float, *, runnable_until: float = 0.0, cpu_rate: float = 1.0):
        self.clock, self.quiet_from, self.runnable_until, self.cpu_rate = clock, quiet_from, runnable_until, cpu_rate

    def cpu(self) -> float:
        return min(self.clock.t, self.quiet_from) * self.cpu_rate

    def received(self) -> int:
        return int(min(self.clock.t, self.quiet_from) * 1000)

    def runnable(self) -> bool:
        return self.clock.t < self.runnable_until


def test_quiet_needs_the_whole_window_without_packets_cpu_or_a_runnable_thread():
    clock = Clock()
    sensor = Sensor(clock, quiet_from=1.0)
    watch = QuietWatch(sensor.cpu, sensor.received, 1.0, runnable=sensor.runnable, clock=clock.now, window_s=0.2)
    times = []
    while not watch() and clock.t < 5:
        times.append(clock.t)
        clock.sleep(0.05)
    assert 1.2 <= clock.t < 1.35
    assert watch.idle_cores == 0.0  # what it used over the quiet window: a sample's idle rate


def test_the_idle_rate_is_the_cpu_used_over_the_quiet_window():
    clock = Clock()
    sensor = Sensor(clock, quiet_from=1.0)
    idle = Sensor(clock, quiet_from=99.0, cpu_rate=0.02)  # an emulator idling at 2% of a core
    watch = QuietWatch(lambda: sensor.cpu() + idle.cpu(), sensor.received, 1.0, runnable=sensor.runnable,
                       clock=clock.now, window_s=0.2)
    assert watch.idle_cores is None
    while not watch() and clock.t < 5:
        clock.sleep(0.05)
    assert watch.idle_cores is not None and abs(watch.idle_cores - 0.02) < 1e-9


def test_a_runnable_thread_is_never_quiet_though_it_uses_no_cpu():
    """A sensor whose worker waits for a CPU of a busy host: no CPU time, no new packets, still work."""
    clock = Clock()
    sensor = Sensor(clock, quiet_from=0.0, runnable_until=3.0)
    watch = QuietWatch(sensor.cpu, sensor.received, 1.0, runnable=sensor.runnable, clock=clock.now, window_s=0.2)
    while not watch() and clock.t < 10:
        clock.sleep(0.05)
    assert clock.t >= 3.2


def test_busy_cpu_or_unreadable_threads_are_not_quiet():
    clock = Clock()
    busy = Sensor(clock, quiet_from=1e9, cpu_rate=0.5)
    busy.received = lambda: 7  # type: ignore[method-assign]  # nothing new arrives, the CPU keeps working
    watch = QuietWatch(busy.cpu, busy.received, 1.0, runnable=lambda: False, clock=clock.now, window_s=0.2)
    unreadable = QuietWatch(lambda: 0.0, lambda: 0, 1.0, runnable=lambda: None, clock=clock.now, window_s=0.2)
    for _ in range(40):
        assert not watch() and not unreadable()
        clock.sleep(0.05)


def test_a_quiet_sensor_ends_the_drain_before_its_counters_are_published():
    clock = Clock()

    class Silent:  # publishes nothing after the replay (Suricata's workers sync every 3 s)
        def live_counters(self) -> CounterPoint:
            return CounterPoint(t_unix=99.0, uptime_s=1.0, counters=Counters())

    sensor = Sensor(clock, quiet_from=0.1)
    watch = QuietWatch(sensor.cpu, sensor.received, 1.0, runnable=sensor.runnable, clock=clock.now, window_s=0.2)
    result = drain(Silent(), lambda: True, 99.5, 30.0, clock=clock.now, sleep=clock.sleep,  # type: ignore[arg-type]
                   interval_s=0.05, quiet=watch)
    assert result.drained and result.quiet and result.waited_s < 0.5
    dead = drain(Silent(), lambda: False, 99.5, 30.0, clock=clock.now, sleep=clock.sleep,  # type: ignore[arg-type]
                 quiet=lambda: True)
    assert not dead.drained and not dead.quiet  # a dead sensor is quiet too: never drained
