"""One prepared nodetect run (ibcapture or tcpdump under ibtick): readiness and counters.

ibcapture writes a JSON line of counters every interval to its stats file and a final one after
draining at SIGTERM; tcpdump prints a report on each SIGUSR1 ibtick sends (dated by ibtick's tick
line) and a final one at exit, all on stderr (the console file). Counters: nodetect.stats.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from idsbench.capture import Scalar
from idsbench.errors import SensorFailed
from idsbench.sensors.base import CounterPoint, Counters, EventLogIntegrity
from idsbench.sensors.nodetect.capture import AFPACKET
from idsbench.sensors.nodetect.config import capture_threads, ready_interface
from idsbench.sensors.nodetect.stats import (
    CaptureLog,
    CapturePoint,
    capture_errors,
    parse_ibcapture_stats,
    parse_tcpdump_reports,
)
from idsbench.sensors.tail import FileTail


def _counters(point: CapturePoint) -> Counters:
    return Counters.from_mapping(point.counters.schema_counters())


def _timed(point: CapturePoint) -> CounterPoint | None:
    if point.t_unix is None:
        return None
    return CounterPoint(t_unix=point.t_unix, uptime_s=point.uptime_s or 0.0, counters=_counters(point))


@dataclass
class NoDetectRun:
    argv: list[str]
    log_dir: Path
    method: str
    interface: str
    console_path: Path  # stdout+stderr (the setup writes it): readiness, errors, tcpdump's reports
    stats_path: Path    # ibcapture's stats lines (afpacket)
    _tail: FileTail = field(init=False, repr=False)
    _latest: CounterPoint | None = field(default=None, repr=False)
    _log: CaptureLog | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._tail = FileTail(self._source())

    def _console(self) -> str:
        try:
            return self.console_path.read_text(errors="replace")
        except OSError:
            return ""

    def _source(self) -> Path:
        return self.stats_path if self.method == AFPACKET else self.console_path

    def _read_log(self) -> CaptureLog:
        if self.method == AFPACKET:
            try:
                text = self.stats_path.read_text(errors="replace")
            except OSError:
                text = ""
            self._log = parse_ibcapture_stats(text)
        else:
            self._log = parse_tcpdump_reports(self._console())
        return self._log

    def wait_ready(self, poll: Callable[[], int | None], timeout_s: float, *,
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                   interval_s: float = 0.05) -> float:
        """Block until the engine reports it captures on the interface (ibcapture: every ring bound;
        tcpdump: libpcap activated)."""
        t0 = clock()
        while True:
            text = self._console()
            if ready_interface(self.method, text) == self.interface:
                return clock() - t0
            rc = poll()
            if rc is not None:
                raise self._failed(f"the nodetect engine's {self.method} reader exited with status {rc} before it was "
                                   "capturing", text)
            if clock() - t0 > timeout_s:
                raise self._failed(f"the nodetect engine's {self.method} reader was not capturing on {self.interface} "
                                   f"after {timeout_s:g} s", text)
            sleep(interval_s)

    def _failed(self, what: str, text: str) -> SensorFailed:
        errs = capture_errors(text) or text.splitlines()[-5:]
        return SensorFailed(f"{what}. Its output:\n  " + "\n  ".join(errs),
                            fix=f"see {self.console_path}; `make native` rebuilds ibcapture/ibtick.")

    def live_counters(self) -> CounterPoint | None:
        """The newest report, reading only what the stats file (or console) gained since the last call."""
        lines = self._tail.new_lines()
        if lines is None:
            return self._latest
        complete = lines.decode("utf-8", errors="replace")
        if self.method == AFPACKET:
            points = parse_ibcapture_stats(complete).points
        else:  # keep the last tick line: a report may arrive in the next read
            points = parse_tcpdump_reports(complete).points
            last_tick = complete.rfind("ibtick: tick ")
            if last_tick >= 0 and "tcpdump: " not in complete[last_tick:]:
                self._tail.unread(complete[last_tick:].encode())
        for point in points:
            timed = _timed(point)
            if timed is not None:
                self._latest = timed
        return self._latest

    def counter_series(self) -> list[CounterPoint]:
        return [p for p in (_timed(q) for q in self._read_log().points) if p is not None]

    def final_counters(self) -> Counters:
        """The report written at exit (after ibcapture's drain); the last periodic one when the engine
        was killed; SensorFailed when there is none."""
        log = self._read_log()
        point = log.final or log.last
        if point is None:
            raise SensorFailed(f"the nodetect engine's {self.method} reader left no counters in {self._source()}.",
                               fix="it probably failed at start or was killed; see its console output.")
        return _counters(point)

    def degraded(self) -> dict[str, int]:
        log = self._log or self._read_log()
        point = log.final or log.last
        if point is None or not point.counters.truncated_pkts:
            return {}
        return {"truncated_pkts": point.counters.truncated_pkts}

    def alerts_by_signature(self) -> dict[int, int]:
        return {}  # no detection: no rules

    def errors(self) -> list[str]:
        return list(dict.fromkeys(capture_errors(self._console())))

    def worker_threads(self) -> int | None:
        return capture_threads(self.method, self._console())

    def capture_info(self) -> tuple[str, dict[str, Scalar], dict[str, int]]:
        """Its reader and the reader's drop point (ibcapture's tp_drops, tcpdump's ps_drop); its settings
        are `[sensor.set.nodetect]` (no capture_options)."""
        log = self._log or self._read_log()
        point = log.final or log.last
        dropped = _counters(point).dropped_pkts if point is not None else 0
        key = "ring_drops" if self.method == AFPACKET else "ps_drop"
        return self.method, {}, {f"{self.method}.{key}": dropped}

    def integrity(self) -> EventLogIntegrity | None:
        if self.method != AFPACKET:
            return None
        log = self._log or self._read_log()
        try:
            text = self.stats_path.read_text(errors="replace")
        except OSError:
            return None
        cut = bool(text) and not text.endswith("\n")
        return EventLogIntegrity(self.stats_path, len(log.points) + len(log.bad_lines), len(log.bad_lines), cut)
