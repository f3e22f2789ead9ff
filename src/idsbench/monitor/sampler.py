"""The sampling thread: one CSV row per tick on an absolute schedule (tick k at t0 + k*interval), each
appended whole (store/appender.py: a crash leaves no cut row a reader takes for a whole one)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from idsbench.errors import SpecError
from idsbench.monitor.base import Source, Value
from idsbench.store.appender import RowAppender

MAX_ERRORS = 20  # keep the first few error messages; count the rest


def _fmt(v: Value | None) -> str:
    if v is None:
        return ""
    return f"{v:.2f}" if isinstance(v, float) else str(v)


class Sampler:
    """Samples `sources` every `interval_s` into `out_csv` (header `t_unix` + sources' columns,
    in the order of `sources`). Late ticks are skipped and counted in `missed_ticks`; `stop()`
    takes one final sample. `sleep` defaults to a wait that `stop()` interrupts at once."""

    def __init__(self, out_csv: Path, interval_s: float, sources: Sequence[Source], *,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 sleep: Callable[[float], object] | None = None):
        if not interval_s > 0:
            raise SpecError(f"monitor interval {interval_s} s is not positive.", fix="use e.g. 1.0.")
        self.out_csv = Path(out_csv)
        self.interval_s = float(interval_s)
        self.sources = list(sources)
        self._clock, self._wall = clock, wall
        self._stopping = threading.Event()
        self._sleep = sleep if sleep is not None else self._stopping.wait
        cols = [c for s in self.sources for c in s.columns()]
        dup = sorted({c for c in cols if cols.count(c) > 1})
        if dup:
            raise SpecError(f"monitor sources produce duplicate columns {dup}.",
                            fix="give each network source its own label.")
        self.header = ["t_unix"] + cols
        self.rows = 0
        self.missed_ticks = 0
        self.errors: list[str] = []
        self.error_count = 0
        self._t0 = 0.0
        self._file: RowAppender | None = None
        self._thread: threading.Thread | None = None
        self._row_lock = threading.Lock()  # rows come from the thread and from sample_now()

    def start(self) -> None:
        """Write the header, take every source's baseline, start the thread."""
        self._file = RowAppender(self.out_csv, self.header)
        for s in self.sources:
            s.start()
        self._t0 = self._clock()
        self._thread = threading.Thread(target=self._run, name="idsbench-monitor", daemon=True)
        self._thread.start()

    def sample_now(self) -> None:
        """Write an extra row at once (e.g. at replay start and end, so the replay window's
        CPU use is measured exactly even when it is shorter than the interval)."""
        if self._file is not None:
            self._try_write_row()

    def request_stop(self) -> None:
        """Ask the thread to end after its current tick (safe from a signal handler)."""
        self._stopping.set()

    def stop(self) -> None:
        """End the thread, take the final sample, stop the sources, close the file. Idempotent."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._file is None:
            return
        try:
            self._try_write_row()
        finally:
            for s in self.sources:
                try:
                    s.stop()
                except Exception as e:
                    self._error(f"{type(s).__name__}.stop: {e}")
            self._file.close()
            self._file = None

    def _run(self) -> None:
        k = 1
        while not self._stopping.is_set():
            delay = self._t0 + k * self.interval_s - self._clock()
            if delay > 0:
                self._sleep(delay)
                continue  # re-check the stop flag and the clock (a sleep may end early)
            due = int((self._clock() - self._t0) // self.interval_s)
            if due > k:  # later than the next tick: skip to the newest one due
                self.missed_ticks += due - k
                k = due
            try:
                self._write_row()
            except OSError as e:  # disk full, file gone: stop sampling, keep what was written
                self._error(f"writing {self.out_csv}: {e}")
                return
            k += 1

    def _try_write_row(self) -> None:
        try:
            self._write_row()
        except OSError as e:  # disk full, file gone: keep what was written
            self._error(f"writing {self.out_csv}: {e}")

    def _write_row(self) -> None:
        with self._row_lock:
            self._write_row_locked()

    def _write_row_locked(self) -> None:
        values: dict[str, Value] = {}
        for s in self.sources:
            try:
                values.update(s.sample())
            except Exception as e:
                self._error(f"{type(s).__name__}.sample: {e}")
        row = [f"{self._wall():.3f}"] + [_fmt(values.get(c)) for c in self.header[1:]]
        assert self._file is not None
        self._file.append(row)  # on disk at once: a crash loses at most the row being written
        self.rows += 1

    def _error(self, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message)
