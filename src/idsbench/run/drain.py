"""Before the sensor is stopped: wait until it has processed what it captured, and read the wire.

Drain: after the replay, poll the sensor's live counters until a record taken after the replay
ended shows nothing left in its capture ring (captured == decoded + dropped), nothing new
arriving (captured unchanged since the previous record) and, where the capture interface is the
wire's end, every packet that interface received counted as captured; bounded by
`timing.drain_timeout_s`.
A sensor stopped undrained keeps its backlog as `unprocessed_pkts` — named, never a gap.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from idsbench.monitor.host import U32, parse_softnet
from idsbench.monitor.netdev import IfCounters, parse_net_dev
from idsbench.sensors.base import CounterPoint, SensorRun
from idsbench.store.schema import WireRecord
from idsbench.wire.netns import WireEnds

STUCK_RECORDS = 3  # records after the replay in which the sensor processed nothing while it had a backlog


@dataclass(frozen=True)
class DrainResult:
    drained: bool
    waited_s: float
    last: CounterPoint | None
    stuck: bool = False  # it held packets in its ring and processed nothing for STUCK_RECORDS records


def drain(run: SensorRun, alive: Callable[[], bool], replay_end_unix: float, timeout_s: float, *,
          min_wait_s: float = 0.0, clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep, interval_s: float = 0.1,
          uncounted: Callable[[CounterPoint], int | None] = lambda _p: None) -> DrainResult:
    """`uncounted(point)`: packets the capture interface received that the sensor's counters do not
    show yet (its capture statistics lag behind, e.g. a starved worker), None where the interface
    cannot tell; drained needs none. Where it can tell, a record after the replay that counts every
    packet the interface received and has nothing left to process is enough; else a second record
    must show nothing new captured."""
    t0 = clock()
    previous: CounterPoint | None = None
    last: CounterPoint | None = None
    idle = 0
    while True:
        waited = clock() - t0
        point = run.live_counters()
        if point is not None and point != previous and point.t_unix > replay_end_unix:
            c = point.counters
            after = previous is not None and previous.t_unix > replay_end_unix
            settled = after and previous is not None and previous.counters.captured_pkts == c.captured_pkts
            missing = uncounted(point)
            backlog = c.unprocessed_pkts + max(0, missing or 0)
            complete = missing == 0  # the interface received nothing the counters do not show
            if (settled or complete) and backlog == 0 and waited >= min_wait_s:
                return DrainResult(True, waited, point)
            busy = previous is None or previous.counters.decoded_pkts != c.decoded_pkts or \
                previous.counters.captured_pkts != c.captured_pkts
            idle = 0 if busy or backlog <= 0 else idle + 1
            if idle >= STUCK_RECORDS:  # stuck with packets in its ring; else its counters miss packets
                return DrainResult(False, waited, point, stuck=c.unprocessed_pkts > 0)
            previous = point
        last = point or last
        if not alive() or waited > timeout_s:
            return DrainResult(False, waited, last)
        sleep(interval_s)


@dataclass(frozen=True)
class WireSnapshot:
    sender: IfCounters | None
    sensor: IfCounters | None
    softnet: tuple[tuple[int, int, int], ...]


def wire_snapshot(wire: WireEnds) -> WireSnapshot:
    """Both wire ends' interface counters (through their namespaces' holder processes) and the host's
    softnet counters, at one instant."""
    return WireSnapshot(iface_counters(wire.sender_holder_pid, wire.sender_if),
                        iface_counters(wire.sensor_holder_pid, wire.sensor_if), softnet_counts())


def wire_record(before: WireSnapshot, after: WireSnapshot, impaired: bool = False) -> WireRecord | None:
    if not (before.sender and before.sensor and after.sender and after.sensor):
        return None
    dropped = squeezed = 0
    for row, prev in zip(after.softnet, before.softnet):
        dropped += (row[1] - prev[1]) % U32
        squeezed += (row[2] - prev[2]) % U32
    return WireRecord(
        sender_tx_pkts=after.sender.tx_pkts - before.sender.tx_pkts,
        sender_tx_dropped=after.sender.tx_dropped - before.sender.tx_dropped,
        sensor_rx_pkts=after.sensor.rx_pkts - before.sensor.rx_pkts,
        sensor_rx_dropped=after.sensor.rx_dropped - before.sensor.rx_dropped,
        softnet_dropped=dropped, softnet_time_squeeze=squeezed, impaired=impaired)


def iface_counters(pid: int, ifname: str) -> IfCounters | None:
    """The interface's counters as seen from the network namespace of `pid` (None: gone)."""
    try:
        return parse_net_dev(Path(f"/proc/{pid}/net/dev").read_text()).get(ifname)
    except OSError:
        return None


def softnet_counts() -> tuple[tuple[int, int, int], ...]:
    """Per CPU (processed, dropped, time squeeze) of the kernel's receive backlog."""
    try:
        return tuple(parse_softnet(Path("/proc/net/softnet_stat").read_text()))
    except OSError:
        return ()
