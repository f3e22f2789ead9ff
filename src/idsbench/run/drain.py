"""Before the sensor is stopped: wait until it has processed what it captured, and read the wire.

Drain: after the replay, poll the sensor's live counters until a record taken after the replay
ended shows nothing left in its capture ring (captured == decoded + dropped), nothing new
arriving (captured unchanged since the previous record) and, where the capture interface is the
wire's end, every packet that interface received counted as captured; bounded by
`timing.drain_timeout_s`.
A sensor stopped undrained keeps its backlog as `unprocessed_pkts` — named, never a gap.

A sensor about to be stopped (a sample: its final counters, written at exit, are what counts) may
also be let go once it is `quiet` — read on demand: its interface received nothing new and its CPU
stayed near idle for a while — instead of waiting for its published counters, which Suricata's
workers refresh only every 3 s (STATS_WUT_TTS in its counters.c; `dump-counters` on the unix socket
answers from the same table). The final counters then prove it: a quiet drain that left packets in
the ring is a stuck sensor (the sample's verdict).

Stuck: a sensor whose published counters show no progress for STUCK_RECORDS records while it has a
backlog, and which used (almost) no CPU over those records (`cpu_s`, its cgroup; near idle as the quiet
drain defines it). Published counters alone cannot tell: a worker refreshes them only every few
seconds, and one throttled by a small CPU quota later still — measured under a 0.15 quota (30k pps,
400 PCRE rules): Suricata's stats records stood still for 3-4 records at a time (after the replay:
28,858 packets unprocessed) while its cgroup used 0.148-0.152 cores each second working through its ring
(drained in 4.7 s, final counters exact), and in CI 2 of 3 such samples were called stuck (invalid).
Where the CPU cannot be read, the counters alone decide, as before.
"""

from __future__ import annotations

import os
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
QUIET_SHARE = 0.25     # "near idle": at most this share of its CPU allocation …
QUIET_MAX_CORES = 0.05  # … and at most this much of one core


def near_idle_cores(allocation_cores: float) -> float:
    """The CPU (cores) a sensor with nothing to do stays under: the quiet drain's and the stuck
    check's "near idle"."""
    return min(QUIET_MAX_CORES, QUIET_SHARE * allocation_cores)


@dataclass(frozen=True)
class DrainResult:
    drained: bool
    waited_s: float
    last: CounterPoint | None
    stuck: bool = False  # it held packets in its ring, processed nothing and used no CPU for STUCK_RECORDS records
    quiet: bool = False  # drained because it went quiet (the final counters must confirm it)
    # records after the replay whose counters showed no progress on a backlog while the sensor used its
    # CPU (working, its published counters behind): not counted towards stuck
    working_unseen: int = 0


def drain(run: SensorRun, alive: Callable[[], bool], replay_end_unix: float, timeout_s: float, *,
          min_wait_s: float = 0.0, clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep, interval_s: float = 0.1,
          uncounted: Callable[[CounterPoint], int | None] = lambda _p: None,
          quiet: Callable[[], bool] | None = None, cpu_s: Callable[[], float | None] = lambda: None,
          idle_cores: float = QUIET_MAX_CORES, quiet_conclude_s: float = 0.0) -> DrainResult:
    """`uncounted(point)`: packets the capture interface received that the sensor's counters do not
    show yet (its capture statistics lag behind, e.g. a starved worker), None where the interface
    cannot tell; drained needs none. Where it can tell, a record after the replay that counts every
    packet the interface received and has nothing left to process is enough; else a second record
    must show nothing new captured. `quiet()`: True once the sensor has evidently processed everything
    (on-demand signals); ends the drain too (after `min_wait_s`), with `quiet=True`. Where the counters
    prove the drain first, `quiet()` is still given up to `quiet_conclude_s` to conclude: the watch marks
    where the processing ended (the CPU per packet's span), and which of the two signals came first must
    not decide which span a sample's cost is taken over.
    `cpu_s()`: the sensor's CPU seconds so far (None: unknown); a record whose counters stood still on
    a backlog counts towards stuck only when the sensor used at most `idle_cores` since the last one.
    One that used CPU but still holds packets at the timeout without having processed one in all the
    drain's records (more than STUCK_RECORDS) is stuck too: CPU spent on anything but its ring."""
    t0 = clock()
    previous: CounterPoint | None = None
    last: CounterPoint | None = None
    idle = unseen = records = 0
    progressed = False  # a record after the first showed packets processed
    cpu_at: tuple[float, float | None] = (t0, cpu_s())  # (clock, CPU seconds) at the previous record
    while True:
        waited = clock() - t0
        point = run.live_counters()
        if point is not None and point != previous and point.t_unix > replay_end_unix:
            c = point.counters
            after = previous is not None and previous.t_unix > replay_end_unix
            settled = after and previous is not None and previous.counters.captured_pkts == c.captured_pkts
            missing = uncounted(point)
            # a record's counters may be mid-refresh (fewer captured than processed): that never cancels
            # packets the interface received that the counters do not show
            backlog = max(0, c.unprocessed_pkts) + max(0, missing or 0)
            complete = missing == 0  # the interface received nothing the counters do not show
            if (settled or complete) and backlog == 0 and waited >= min_wait_s:
                if quiet is not None:
                    conclude(quiet, alive, clock, sleep, interval_s, min(quiet_conclude_s, timeout_s - waited))
                return DrainResult(True, waited, point, working_unseen=unseen)
            busy = previous is None or previous.counters.decoded_pkts != c.decoded_pkts or \
                previous.counters.captured_pkts != c.captured_pkts
            records += 1
            progressed = progressed or (after and previous is not None and
                                        previous.counters.decoded_pkts != c.decoded_pkts)
            now = (clock(), cpu_s())
            working = used_cpu(cpu_at, now, idle_cores)
            cpu_at = now
            if not busy and backlog > 0 and working:
                unseen += 1  # its counters stand still, but it works: they are behind, it is not stuck
            idle = 0 if busy or backlog <= 0 or working else idle + 1
            if idle >= STUCK_RECORDS:  # stuck with packets in its ring; else its counters miss packets
                return DrainResult(False, waited, point, stuck=c.unprocessed_pkts > 0, working_unseen=unseen)
            previous = point
        last = point or last
        if not alive():
            return DrainResult(False, waited, last, working_unseen=unseen)
        if waited > timeout_s:
            held = last is not None and last.counters.unprocessed_pkts > 0
            return DrainResult(False, waited, last, stuck=held and records > STUCK_RECORDS and not progressed,
                               working_unseen=unseen)
        if quiet is not None and waited >= min_wait_s and quiet():
            return DrainResult(True, waited, last, quiet=True, working_unseen=unseen)
        sleep(interval_s)


def conclude(quiet: Callable[[], bool], alive: Callable[[], bool], clock: Callable[[], float],
             sleep: Callable[[float], None], interval_s: float, bound_s: float) -> bool:
    """Look at `quiet()` until it concludes, for at most `bound_s` (a drained sensor: its watch only
    needs its window of quiet to say where the processing ended)."""
    deadline = clock() + bound_s
    while True:
        if quiet():
            return True
        if clock() >= deadline or not alive():
            return False
        sleep(interval_s)


def used_cpu(before: tuple[float, float | None], after: tuple[float, float | None], idle_cores: float) -> bool:
    """Whether the sensor used more than `idle_cores` between two (clock, CPU seconds) readings (False
    where either reading is unknown: the counters alone decide)."""
    (t0, c0), (t1, c1) = before, after
    if c0 is None or c1 is None:
        return False
    return c1 - c0 > idle_cores * max(t1 - t0, 0.0)


QUIET_S = 0.2          # how long a sensor must stay quiet (several TPACKET_V3 block timeouts: 10 ms)
# After the counters proved a drain: how many of its windows a quiet watch gets to conclude (its window,
# plus room for the housekeeping wake-up that restarts it)
CONCLUDE_WINDOWS = 3


class QuietWatch:
    """On-demand evidence that a sensor has processed all it received: over the last `window_s`
    its capture interface received nothing new, it used at most `limit_cores` of CPU and none of its
    threads was runnable at any look (`runnable()`: a thread with work that waits for a CPU of a busy
    host uses no CPU time either — measured: a sample whose sensor was only "CPU-quiet" left 59
    packets in its ring). A sensor with a backlog works or waits to, so it is never quiet; one that
    is stuck with packets in its ring is, which its final counters then show (unprocessed packets)."""

    def __init__(self, cpu_s: Callable[[], float | None], received: Callable[[], int | None],
                 allocation_cores: float, *, runnable: Callable[[], bool | None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic, window_s: float = QUIET_S):
        self.cpu_s, self.received, self.clock, self.window_s = cpu_s, received, clock, window_s
        self.conclude_s = CONCLUDE_WINDOWS * window_s  # drain(quiet_conclude_s=…)
        self.runnable = runnable
        self.limit_cores = near_idle_cores(allocation_cores)
        self._ref: tuple[float, float, int] | None = None  # (t, cpu_s, received) where the quiet began
        self.idle_cores: float | None = None  # the CPU it used over the quiet window, once it was quiet
        # (clock, CPU seconds) where the quiet began, once it was quiet: the end of its processing (the
        # CPU per packet's span, idsbench.cpucost); any work after it was at most limit_cores × the window
        self.quiet_since: tuple[float, float] | None = None

    def __call__(self) -> bool:
        t, cpu, rx, waiting = self.clock(), self.cpu_s(), self.received(), self.runnable()
        if cpu is None or rx is None or waiting is None:
            self._ref = None
            return False
        if waiting:
            self._ref = (t, cpu, rx)
            return False
        ref = self._ref
        if ref is None or rx != ref[2]:
            self._ref = (t, cpu, rx)
            return False
        span = t - ref[0]
        if (cpu - ref[1]) > self.limit_cores * max(span, self.window_s):
            self._ref = (t, cpu, rx)  # busy: the quiet starts again from here
            return False
        if span < self.window_s:
            return False
        self.idle_cores = (cpu - ref[1]) / span
        self.quiet_since = (ref[0], ref[1])
        return True


def any_runnable(pids: list[int]) -> bool | None:
    """Whether a thread of these processes is running or waits for a CPU (state R) or in an
    uninterruptible wait (D); None when none of them can be read."""
    seen = False
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            except OSError:
                continue
            seen = True
            if stat[stat.rfind(")") + 2:][:1] in ("R", "D"):
                return True
    return False if seen else None


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
