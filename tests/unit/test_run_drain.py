"""drain(): when a sensor has processed what it captured, including counters that lag its interface."""

from __future__ import annotations

import pytest

from idsbench.run.drain import drain, near_idle_cores, used_cpu
from idsbench.sensors.base import CounterPoint, Counters
from tests.fakeclock import Clock


class Lagging:
    """A sensor whose stats records (one per second) show `captured` catching up with 1000 received
    packets only at the given second."""

    def __init__(self, clock: Clock, caught_up_at: float):
        self.clock, self.caught_up_at = clock, caught_up_at

    def live_counters(self) -> CounterPoint:
        second = int(self.clock.t)
        n = 1000 if self.clock.t >= self.caught_up_at else 0
        return CounterPoint(t_unix=100.0 + second, uptime_s=float(second),
                            counters=Counters(captured_pkts=n, decoded_pkts=n))


def test_counters_that_lag_the_interface_are_waited_for():
    clock = Clock()
    sensor = Lagging(clock, caught_up_at=2.5)
    result = drain(sensor, lambda: True, 99.5, 30.0, clock=clock.now, sleep=clock.sleep,  # type: ignore[arg-type]
                   uncounted=lambda p: 1000 - p.counters.captured_pkts)
    assert result.drained and result.last is not None and result.last.counters.captured_pkts == 1000
    assert result.waited_s >= 2.5


def test_without_the_wire_check_stale_counters_look_drained():
    clock = Clock()
    result = drain(Lagging(clock, caught_up_at=2.5), lambda: True, 99.5, 30.0,  # type: ignore[arg-type]
                   clock=clock.now, sleep=clock.sleep)
    assert result.drained and result.last is not None and result.last.counters.captured_pkts == 0


def test_counters_that_never_catch_up_end_the_drain_undrained_but_not_stuck():
    clock = Clock()
    result = drain(Lagging(clock, caught_up_at=1e9), lambda: True, 99.5, 30.0, clock=clock.now,  # type: ignore[arg-type]
                   sleep=clock.sleep, uncounted=lambda p: 1000 - p.counters.captured_pkts)
    assert not result.drained and not result.stuck and result.waited_s < 10


def test_where_the_interface_tells_one_complete_record_after_the_replay_is_enough():
    clock = Clock()
    sensor = Lagging(clock, caught_up_at=0.0)  # every record already counts the 1000 packets
    result = drain(sensor, lambda: True, 99.5, 30.0, clock=clock.now, sleep=clock.sleep,  # type: ignore[arg-type]
                   uncounted=lambda p: 1000 - p.counters.captured_pkts)
    assert result.drained and result.waited_s < 0.05  # the record of second 0 (t=100.0) is after 99.5
    clock2 = Clock()
    without = drain(Lagging(clock2, caught_up_at=0.0), lambda: True, 99.5, 30.0,  # type: ignore[arg-type]
                    clock=clock2.now, sleep=clock2.sleep)
    assert without.drained and without.waited_s >= 1.0  # a second record had to show nothing new


class Throttled:
    """A sensor with 1000 packets in its ring after the replay whose stats records (one per second)
    show its progress only every `publish_every` seconds (a worker under a small CPU quota refreshes its
    published counters late); it works through the ring by `done_at` seconds, using `cores` of CPU
    while it does and `idle_cores` after (or all along when `stuck`)."""

    def __init__(self, clock: Clock, *, publish_every: int, done_at: float, cores: float, idle_cores: float = 0.005,
                 stuck: bool = False):
        self.clock, self.publish_every, self.done_at = clock, publish_every, done_at
        self.cores, self.idle_cores, self.stuck = cores, idle_cores, stuck

    def decoded_at(self, t: float) -> int:
        if self.stuck:
            return 0
        return min(1000, int(1000 * t / self.done_at))

    def live_counters(self) -> CounterPoint:
        second = int(self.clock.t)
        published = second - second % self.publish_every
        return CounterPoint(t_unix=100.0 + second, uptime_s=float(second),
                            counters=Counters(captured_pkts=1000, decoded_pkts=self.decoded_at(published)))

    def cpu_s(self) -> float:
        t = self.clock.t
        busy = t if self.stuck else min(t, self.done_at)
        rate = self.idle_cores if self.stuck else self.cores
        return rate * busy + self.idle_cores * (t - busy)


def _drain(sensor, clock: Clock, cpu: bool = True, timeout_s: float = 30.0):
    return drain(sensor, lambda: True, 99.5, timeout_s, clock=clock.now, sleep=clock.sleep,
                 uncounted=lambda p: 1000 - p.counters.captured_pkts, cpu_s=sensor.cpu_s if cpu else lambda: None,
                 idle_cores=near_idle_cores(0.15))


def test_a_throttled_sensor_whose_counters_stand_still_while_it_uses_its_cpu_is_waited_for():
    # published every 4 s: 3 records in a row show no progress on its backlog while it works at its quota
    clock = Clock()
    sensor = Throttled(clock, publish_every=4, done_at=6.0, cores=0.15)
    result = _drain(sensor, clock)
    assert result.drained and not result.stuck and result.last is not None
    assert result.last.counters.decoded_pkts == 1000 and 8.0 <= result.waited_s < 9.0
    assert result.working_unseen >= 3
    # counters alone cannot tell it from a stuck sensor (the failure this fixes)
    clock2 = Clock()
    blind = _drain(Throttled(clock2, publish_every=4, done_at=6.0, cores=0.15), clock2, cpu=False)
    assert not blind.drained and blind.stuck and blind.waited_s < 4.0


def test_a_sensor_that_holds_packets_and_uses_no_cpu_is_stuck():
    clock = Clock()
    result = _drain(Throttled(clock, publish_every=1, done_at=6.0, cores=0.15, stuck=True), clock)
    assert result.stuck and not result.drained and result.waited_s < 4.0 and result.working_unseen == 0


def test_a_sensor_that_burns_cpu_without_processing_its_ring_is_stuck_at_the_timeout():
    clock = Clock()
    spinning = Throttled(clock, publish_every=1, done_at=6.0, cores=0.15, idle_cores=0.15, stuck=True)
    result = _drain(spinning, clock, timeout_s=10.0)
    assert result.stuck and not result.drained and result.waited_s > 10.0


def test_a_throttled_sensor_that_is_not_done_at_the_timeout_is_undrained_not_stuck():
    clock = Clock()
    result = _drain(Throttled(clock, publish_every=2, done_at=60.0, cores=0.15), clock, timeout_s=10.0)
    assert not result.drained and not result.stuck and result.last is not None
    assert 0 < result.last.counters.unprocessed_pkts < 1000


def test_used_cpu_compares_the_rate_with_near_idle():
    assert near_idle_cores(0.15) == pytest.approx(0.0375) and near_idle_cores(2.0) == 0.05
    assert used_cpu((0.0, 1.0), (1.0, 1.15), 0.0375)        # a throttled worker at its quota
    assert not used_cpu((0.0, 1.0), (1.0, 1.01), 0.0375)    # idle threads
    assert not used_cpu((0.0, None), (1.0, 1.15), 0.0375)   # unknown: the counters decide
    assert not used_cpu((0.0, 1.0), (1.0, None), 0.0375)


def test_a_drain_the_counters_prove_first_still_lets_the_quiet_watch_conclude():
    """The counters' complete record arrives before the watch's window has passed: the drain waits for the
    watch (it marks where the processing ended), not longer, and is not called quiet."""
    clock = Clock()
    looks: list[float] = []

    def quiet() -> bool:
        looks.append(clock.t)
        return clock.t >= 0.3

    result = drain(Lagging(clock, caught_up_at=0.0), lambda: True, 99.5, 30.0, clock=clock.now,  # type: ignore[arg-type]
                   sleep=clock.sleep, uncounted=lambda p: 1000 - p.counters.captured_pkts, quiet=quiet,
                   interval_s=0.05, quiet_conclude_s=0.6)
    assert result.drained and not result.quiet and result.waited_s < 0.05
    assert looks and 0.3 <= looks[-1] < 0.35  # looked until it concluded, then stopped


def test_a_quiet_watch_that_does_not_conclude_delays_a_proven_drain_at_most_its_bound():
    clock = Clock()
    result = drain(Lagging(clock, caught_up_at=0.0), lambda: True, 99.5, 30.0, clock=clock.now,  # type: ignore[arg-type]
                   sleep=clock.sleep, uncounted=lambda p: 1000 - p.counters.captured_pkts, quiet=lambda: False,
                   interval_s=0.05, quiet_conclude_s=0.6)
    assert result.drained and not result.quiet
    assert 0.6 <= clock.t < 0.7
    clock2 = Clock()
    drain(Lagging(clock2, caught_up_at=0.0), lambda: True, 99.5, 30.0, clock=clock2.now,  # type: ignore[arg-type]
          sleep=clock2.sleep, uncounted=lambda p: 1000 - p.counters.captured_pkts, quiet=lambda: False,
          interval_s=0.05)
    assert clock2.t < 0.05  # without a bound (the default) nothing waits


class MidRefresh:
    """A sensor whose records show everything processed but `captured` lagging (its socket statistics
    refreshed later than its decoder count) until `caught_up_at`; the interface received 1000 packets."""

    def __init__(self, clock: Clock, caught_up_at: float):
        self.clock, self.caught_up_at = clock, caught_up_at

    def live_counters(self) -> CounterPoint:
        second = int(self.clock.t)
        captured = 1000 if self.clock.t >= self.caught_up_at else 400
        return CounterPoint(t_unix=100.0 + second, uptime_s=float(second),
                            counters=Counters(captured_pkts=captured, decoded_pkts=1000))


def test_counters_mid_refresh_never_cancel_packets_the_interface_received():
    """captured 400 < decoded 1000: unprocessed is -600, and 600 received packets are not counted as
    captured; the two must not cancel into "drained" (it ended a search trial whose baseline then carried
    the lag, and the next trial did not add up)."""
    clock = Clock()
    result = drain(MidRefresh(clock, caught_up_at=3.0), lambda: True, 99.5, 30.0, clock=clock.now,  # type: ignore[arg-type]
                   sleep=clock.sleep, uncounted=lambda p: 1000 - p.counters.captured_pkts)
    assert result.drained and result.last is not None and result.last.counters.captured_pkts == 1000
    assert result.waited_s >= 3.0
