"""Profile the sensor's processes over one window of a sample: `perf record` (self time per
function and thread, this sample only when asked), `perf stat` (counters) and /proc per-thread CPU;
and, for a VM or container, the host's side of it by category (profile/hostside.py): qemu's perf
record is the VM's own (its view is `qemu`), a container runtime's processes get one of their own.
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
from idsbench.profile import hostside, perf
from idsbench.profile.categories import CATEGORIES, qemu_role
from idsbench.profile.hostside import HostSideTarget
from idsbench.profile.threads import ProcessTime, ThreadTime, processes, role, snapshot, thread_cpu
from idsbench.store.layout import PERF_DATA, PERF_HOST_DATA, PERF_HOST_RECORD_LOG, PERF_RECORD_LOG, PERF_STAT, PERF_STAT_LOG
from idsbench.store.schema import (
    CategoryRecord,
    FunctionRecord,
    HostSideRecord,
    HostThreadRecord,
    ProfileRecord,
    ThreadRecord,
)
from idsbench.store.writers import write_perf_report

STOP_GRACE_S = 20.0  # perf record writes its buffers and build-ids on SIGINT


@dataclass(frozen=True)
class ProfileOptions:
    record: bool            # perf record in this sample (stat and threads always)
    frequency_hz: int
    top: int
    percent_limit: float = 0.1


class Profiler:
    def __init__(self, sup: Supervisor, pids: Callable[[], Sequence[int]], out_dir: Path, opts: ProfileOptions,
                 *, view: str = "sensor", host: HostSideTarget | None = None,
                 measured: Callable[[], float | None] | None = None, measured_by: str | None = None,
                 mark: Callable[[], None] | None = None):
        """`host`: the setup's host-side processes; `measured`: CPU seconds so far on the counter the
        monitor reads for them (None: not read); `mark`: writes a monitor row (at both window ends)."""
        self.sup, self._pids, self.out_dir, self.opts, self.view = sup, pids, out_dir, opts, view
        self.host, self._measured, self._measured_by, self._mark = host, measured, measured_by, mark
        self._record: Child | None = None
        self._host_record: Child | None = None
        self._stat: Child | None = None
        self._before: dict[int, ThreadTime] = {}
        self._host_before: tuple[dict[int, ThreadTime], dict[int, ProcessTime], float | None] | None = None
        self._start = 0.0
        self._start_unix = 0.0
        self.notes: list[str] = []

    def _shared(self, pids: Sequence[int]) -> bool:
        """The host side is the sensor's own processes (a VM: qemu), so one perf record serves both."""
        return self.host is not None and set(pids) <= set(self.host.pids)

    def start(self) -> None:
        pids = list(self._pids())
        if not pids:
            self.notes.append("profile: the sensor had no process to attach to")
            return
        host = self.host
        if host is not None and not host.pids:
            self.notes.append(f"profile: no host-side process of the {host.subject} was found")
            host = self.host = None
        shared = self._shared(pids)
        if shutil.which("perf") is None:
            self.notes.append("profile: perf is not installed (apt-get install linux-perf): per-thread CPU only")
        else:
            self._stat = self.sup.start(perf.stat_argv(pids, self.out_dir / PERF_STAT), name="perf-stat",
                                        stdout=self.out_dir / PERF_STAT_LOG)
            if self.opts.record:
                targets = sorted(set(pids) | set(host.pids)) if host is not None and shared else pids
                self._record = self.sup.start(
                    perf.record_argv(targets, self.out_dir / PERF_DATA, self.opts.frequency_hz), name="perf-record",
                    stdout=self.out_dir / PERF_RECORD_LOG, grace_s=STOP_GRACE_S)
                if host is not None and not shared:
                    self._host_record = self.sup.start(
                        perf.record_argv(host.pids, self.out_dir / PERF_HOST_DATA, self.opts.frequency_hz),
                        name="perf-record-host", stdout=self.out_dir / PERF_HOST_RECORD_LOG, grace_s=STOP_GRACE_S)
        self._before = snapshot(pids)
        if host is not None:
            self._host_before = (snapshot(host.pids), processes(host.pids), self._read_measured())
        self._start = time.monotonic()
        self._start_unix = time.time()
        if self._mark is not None:
            self._mark()

    def stop(self) -> ProfileRecord | None:
        """End the window: stop perf, read what it wrote."""
        if not self._start:
            return None
        window = time.monotonic() - self._start
        end_unix = time.time()
        # a VM's threads are qemu's (vCPU, main loop, worker pool…), not the sensor's
        role_of = qemu_role if self.view == "qemu" else role
        threads = thread_cpu(self._before, snapshot(list(self._pids())), window, role_of)
        host_after = None
        if self.host is not None and self._host_before is not None:
            host_after = (snapshot(self.host.pids), processes(self.host.pids), self._read_measured())
        if self._mark is not None:
            self._mark()
        for child in (self._stat, self._record, self._host_record):
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
            workers = {t.name for t in threads if t.role == ("vcpu" if self.view == "qemu" else "worker")}
            worker_functions = perf.top_functions(rows, self.opts.top, workers) if workers else []
        host = self._host_side(host_after) if host_after is not None else None
        return ProfileRecord(
            view=self.view, window_s=round(window, 3), recorded=self._record is not None,
            event=perf.RECORD_EVENT if self._record else None, frequency_hz=self.opts.frequency_hz,
            functions=tuple(FunctionRecord(symbol=f.symbol, dso=f.dso, self_pct=f.self_pct) for f in functions),
            worker_functions=tuple(FunctionRecord(symbol=f.symbol, dso=f.dso, self_pct=f.self_pct)
                                   for f in worker_functions),
            threads=tuple(ThreadRecord(name=t.name, role=t.role, cpu_s=t.cpu_s, cpu_pct=t.cpu_pct)
                          for t in threads),
            counters=counts, ratios=perf.ratios(counts), notes=tuple(self.notes),
            start_unix=round(self._start_unix, 6), end_unix=round(end_unix, 6), host=host)

    def _read_measured(self) -> float | None:
        try:
            return self._measured() if self._measured is not None else None
        except (OSError, ValueError):
            return None

    def _host_side(self, after: tuple[dict[int, ThreadTime], dict[int, ProcessTime], float | None]) -> HostSideRecord:
        assert self.host is not None and self._host_before is not None
        target = self.host
        before = self._host_before
        tasks, exited = hostside.usage(target, before[0], after[0], before[1], after[1])
        data = self.out_dir / (PERF_HOST_DATA if self._host_record is not None else PERF_DATA)
        recorded = self._record is not None and data.is_file()
        rows = self._host_report(data) if recorded else None
        result = hostside.split(target, tasks, exited, rows)
        gone = sorted(set(before[1]) - set(after[1]))
        notes = list(result.notes)
        if gone:
            notes.append(f"processes {gone} exited during the window: their CPU is not counted")
        measured = after[2] - before[2] if after[2] is not None and before[2] is not None else None
        return HostSideRecord(
            subject=target.subject, processes=tuple(f"{p.name}[{p.pid}]" for p in after[1].values()),
            accel=target.accel, emulated=target.accel == "tcg", split=result.by, cpu_s=round(result.total_s, 3),
            measured_cpu_s=round(measured, 3) if measured is not None else None,
            measured_by=self._measured_by if measured is not None else None, monitor_column=target.monitor_column,
            categories=tuple(CategoryRecord(name=c, cpu_s=round(result.seconds[c], 3),
                                            share=round(result.share(c), 4)) for c in CATEGORIES),
            threads=tuple(HostThreadRecord(name=t.name, role=t.role, cpu_s=t.cpu_s, guest_s=t.guest_s,
                                           perf_samples=t.perf_samples) for t in result.threads),
            perf_samples=result.perf_samples, notes=tuple(notes))

    def _host_report(self, data: Path) -> list[hostside.PerfRow] | None:
        try:
            done = proc.run(hostside.report_argv(data), timeout=300)
        except IdsbenchError as exc:
            self.notes.append(f"profile: perf report of the host side failed: {exc}")
            return None
        write_perf_report(self.out_dir, done.stdout, host=True)
        return hostside.parse_rows(done.stdout)

    def _report(self) -> list[perf.SymbolShare]:
        try:
            done = proc.run(perf.report_argv(self.out_dir / PERF_DATA, self.opts.percent_limit), timeout=300)
        except IdsbenchError as exc:
            self.notes.append(f"profile: perf report failed: {exc}")
            return []
        write_perf_report(self.out_dir, done.stdout)
        return perf.parse_report(done.stdout)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
