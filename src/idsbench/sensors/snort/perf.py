"""perf_monitor's files read while Snort runs: only what each file gained since the last read.

Each packet thread writes its own JSON array (`[{…},{…}` — unterminated until exit), one record per
interval, but only once the thread has seen its first packet (perf_monitor evaluates its interval on
packets and, after the first one, on idle ticks): a thread that received nothing has no record and
counts 0. Records are interval deltas for sums (stats.perf_series accumulates them).

The merged point at time T is the sum, over threads, of each thread's newest record at or before T,
where T is the oldest of the threads' newest records: a consistent snapshot, never a mix of one
thread's new and another's old interval.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from idsbench.sensors.snort.stats import SnortCounters, SnortPoint, array_records, perf_series
from idsbench.sensors.tail import FileTail


@dataclass
class _ThreadRecords:
    """One packet thread's perf_monitor file: its records as they arrive, summed into points."""

    file: FileTail
    pending: str = ""
    started: bool = False  # the opening '[' was consumed
    points: list[SnortPoint] = field(default_factory=list)

    def read(self) -> None:
        data = self.file.new_bytes()
        if not data:
            return
        text = self.pending + data.decode("utf-8", errors="replace")
        records, self.pending = self._complete_records(text)
        if records:
            last = self.points[-1].counters if self.points else SnortCounters()
            for point in perf_series(records):  # deltas from zero: add to the running total
                self.points.append(SnortPoint(point.t_unix, _add_sums(last, point.counters)))

    def _complete_records(self, text: str) -> tuple[list[dict[str, object]], str]:
        pos = 0
        if not self.started:
            start = text.find("[")
            if start < 0:
                return [], text
            pos, self.started = start + 1, True
        records, cut = array_records(text, pos)
        return records, "" if cut is None else text[cut:]  # an unfinished record: read again with the rest


def _add_sums(base: SnortCounters, more: SnortCounters) -> SnortCounters:
    """`more` (cumulative over new records) on top of `base`; daq.outstanding is a level: the newest."""
    total = base.plus(more)
    return SnortCounters(total.received, total.analyzed, total.dropped, total.filtered, more.outstanding,
                         total.rx_bytes, total.alerts, total.logged, total.flows)


class PerfTail:
    """The perf_monitor files of one run (every `*perf_monitor_base.json` in the log dir)."""

    def __init__(self, log_dir: Path, pattern: str = "*perf_monitor_base.json"):
        self.log_dir = log_dir
        self.pattern = pattern
        self._tails: dict[Path, _ThreadRecords] = {}

    def _files(self) -> Iterable[Path]:
        # roll-over files are named <base>.json_<n> and do not match the pattern
        return sorted(self.log_dir.glob(self.pattern))

    def latest(self) -> SnortPoint | None:
        """The newest consistent snapshot over every thread that has written a record."""
        for path in self._files():
            if path not in self._tails:
                self._tails[path] = _ThreadRecords(FileTail(path))
            self._tails[path].read()
        active = [t.points for t in self._tails.values() if t.points]
        if not active:
            return None
        t = min(points[-1].t_unix for points in active)
        total = SnortCounters()
        for points in active:
            at_t = [p for p in points if p.t_unix <= t]
            if at_t:
                total = total.plus(at_t[-1].counters)
        return SnortPoint(t, total)
