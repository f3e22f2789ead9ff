"""drain(): when a sensor has processed what it captured, including counters that lag its interface."""

from __future__ import annotations

from idsbench.run.drain import drain
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
