"""Profile the sensor's processes over one window of a sample: `perf record` (self time per
function and thread, this sample only when asked), `perf stat` (counters) and /proc per-thread CPU.
Every perf process runs under the sample's supervisor, so teardown ends it on any error."""

from __future__ import annotations

import shutil
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench import proc
from idsbench.errors import IdsbenchError
from idsbench.proc import Child, Supervisor
from idsbench.profile import perf
from idsbench.profile.threads import ThreadTime, snapshot, thread_cpu
from idsbench.store.schema import FunctionRecord, ProfileRecord, ThreadRecord

PERF_DATA = "perf.data"
PERF_STAT = "perf-stat.csv"
PERF_REPORT = "perf-report.txt"
STOP_GRACE_S = 20.0  # perf record writes its buffers and build-ids on SIGINT


@dataclass(frozen=True)
class ProfileOptions:
    record: bool            # perf record in this sample (stat and threads always)
    frequency_hz: int
    top: int
    percent_limit: float = 0.1


class Profiler:
    def __init__(self, sup: Supervisor, pids: Callable[[], Sequence[int]], out_dir: Path, opts: ProfileOptions,
                 *, view: str = "sensor"):
        self.sup, self._pids, self.out_dir, self.opts, self.view = sup, pids, out_dir, opts, view
        self._record: Child | None = None
        self._stat: Child | None = None
        self._before: dict[int, ThreadTime] = {}
        self._start = 0.0
        self.notes: list[str] = []

    def start(self) -> None:
        pids = list(self._pids())
        if not pids:
            self.notes.append("profile: the sensor had no process to attach to")
            return
        if shutil.which("perf") is None:
            self.notes.append("profile: perf is not installed (apt-get install linux-perf): per-thread CPU only")
        else:
            self._stat = self.sup.start(perf.stat_argv(pids, self.out_dir / PERF_STAT), name="perf-stat",
                                        stdout=self.out_dir / "perf-stat.log")
            if self.opts.record:
                self._record = self.sup.start(
                    perf.record_argv(pids, self.out_dir / PERF_DATA, self.opts.frequency_hz), name="perf-record",
                    stdout=self.out_dir / "perf-record.log", grace_s=STOP_GRACE_S)
        self._before = snapshot(pids)
        self._start = time.monotonic()

    def stop(self) -> ProfileRecord | None:
        """End the window: stop perf, read what it wrote."""
        if not self._start:
            return None
        window = time.monotonic() - self._start
        threads = thread_cpu(self._before, snapshot(list(self._pids())), window)
        for child in (self._stat, self._record):
            if child is not None:
                code = self.sup.stop(child, timeout=STOP_GRACE_S, sig=signal.SIGINT)
                if code not in (0, -signal.SIGINT, 130):
                    self.notes.append(f"profile: {child.name} exited with status {code} (see {child.name}.log)")
        counts = perf.parse_stat(_read(self.out_dir / PERF_STAT)) if self._stat else {}
        functions: list[perf.FunctionShare] = []
        worker_functions: list[perf.FunctionShare] = []
        if self._record is not None and (self.out_dir / PERF_DATA).is_file():
            rows = self._report()
            functions = perf.top_functions(rows, self.opts.top)
            workers = {t.name for t in threads if t.role == "worker"}
            worker_functions = perf.top_functions(rows, self.opts.top, workers) if workers else []
        return ProfileRecord(
            view=self.view, window_s=round(window, 3), recorded=self._record is not None,
            event=perf.RECORD_EVENT if self._record else None, frequency_hz=self.opts.frequency_hz,
            functions=tuple(FunctionRecord(symbol=f.symbol, dso=f.dso, self_pct=f.self_pct) for f in functions),
            worker_functions=tuple(FunctionRecord(symbol=f.symbol, dso=f.dso, self_pct=f.self_pct)
                                   for f in worker_functions),
            threads=tuple(ThreadRecord(name=t.name, role=t.role, cpu_s=t.cpu_s, cpu_pct=t.cpu_pct)
                          for t in threads),
            counters=counts, ratios=perf.ratios(counts), notes=tuple(self.notes))

    def _report(self) -> list[perf.SymbolShare]:
        try:
            done = proc.run(perf.report_argv(self.out_dir / PERF_DATA, self.opts.percent_limit), timeout=300)
        except IdsbenchError as exc:
            self.notes.append(f"profile: perf report failed: {exc}")
            return []
        (self.out_dir / PERF_REPORT).write_text(done.stdout)
        return perf.parse_report(done.stdout)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
