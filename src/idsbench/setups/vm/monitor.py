"""Monitor sources for the VM's host-side cost and the guest's own view.

`QemuSource`: qemu's CPU (whole process, its vCPU threads, vhost workers), RSS and locked memory
(VmLck + VmPin of /proc/PID/status: what VFIO pins, or an mlock), by known PIDs:
the qemu PID's task list (one small directory) plus vhost kernel threads found once at boot.
`GuestCsvSource`: the newest row of guest.csv (written by the guest init) copied into monitor.csv.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from idsbench.monitor.base import ProcFile, Value

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
QEMU_COLUMNS = ["vm_qemu_cpu_pct", "vm_vcpu_cpu_pct", "vm_vhost_cpu_pct", "vm_qemu_rss_bytes",
                "vm_qemu_threads", "vm_qemu_locked_bytes"]
GUEST_COLUMNS = ["guest_cpu_pct", "guest_softirq_pct", "guest_mem_used_bytes", "guest_sensor_rss_bytes",
                 "guest_oom_kills"]


def stat_fields(text: str) -> tuple[str, int]:
    """(comm, utime + stime in ticks) from a /proc/PID[/task/TID]/stat line."""
    comm = text[text.index("(") + 1 : text.rindex(")")]
    rest = text[text.rindex(")") + 2 :].split()
    return comm, int(rest[11]) + int(rest[12])


def locked_bytes(status: str) -> int | None:
    """VmLck + VmPin of a /proc/PID/status text, in bytes (None when neither is there)."""
    total, seen = 0, False
    for line in status.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmLck", "VmPin"):
            words = rest.split()
            if words and words[0].isdigit():
                total += int(words[0]) * 1024
                seen = True
    return total if seen else None


def find_vhost_threads(qemu_pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Kernel threads `vhost-<qemu_pid>` (kernels before 6.4; later ones are qemu's own tasks).
    One scan of /proc, at boot, never per tick."""
    found = []
    want = f"vhost-{qemu_pid}"
    for entry in os.scandir(proc):
        if entry.name.isdigit():
            try:
                if (Path(entry.path) / "comm").read_text().strip() == want:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


class QemuSource:
    def __init__(self, qemu_pid: int, vhost_pids: Sequence[int] = (), *, proc: Path = Path("/proc"),
                 clock: Callable[[], float] = time.monotonic):
        self.pid = qemu_pid
        self.vhost_pids = list(vhost_pids)
        self._proc = proc
        self._clock = clock
        self._stat = ProcFile(proc / str(qemu_pid) / "stat")
        self._statm = ProcFile(proc / str(qemu_pid) / "statm")
        self._status = ProcFile(proc / str(qemu_pid) / "status")
        self._tasks: dict[int, ProcFile] = {}
        self._vhost = {pid: ProcFile(proc / str(pid) / "stat") for pid in self.vhost_pids}
        self._prev: tuple[float, int, int, int] | None = None

    def columns(self) -> list[str]:
        return list(QEMU_COLUMNS)

    def _read(self) -> tuple[float, int, int, int, int] | None:
        try:
            _, total = stat_fields(self._stat.read())
        except (OSError, ValueError, IndexError):
            return None
        vcpu = vhost = 0
        try:
            tids = {int(t) for t in os.listdir(self._proc / str(self.pid) / "task")}
        except OSError:
            tids = set()
        for gone in set(self._tasks) - tids:
            self._tasks.pop(gone).close()
        for tid in tids:
            f = self._tasks.setdefault(tid, ProcFile(self._proc / str(self.pid) / "task" / str(tid) / "stat"))
            try:
                comm, ticks = stat_fields(f.read())
            except (OSError, ValueError, IndexError):
                continue
            if comm.startswith("CPU "):
                vcpu += ticks
            elif comm.startswith("vhost-"):
                vhost += ticks
        for f in self._vhost.values():
            try:
                vhost += stat_fields(f.read())[1]
            except (OSError, ValueError, IndexError):
                continue
        return self._clock(), total, vcpu, vhost, len(tids)

    def start(self) -> None:
        now = self._read()
        self._prev = now[:4] if now else None

    def sample(self) -> dict[str, Value]:
        now = self._read()
        if now is None:
            return {}
        t, total, vcpu, vhost, threads = now
        out: dict[str, Value] = {"vm_qemu_threads": threads}
        try:
            out["vm_qemu_rss_bytes"] = int(self._statm.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            pass
        try:
            locked = locked_bytes(self._status.read())
        except OSError:
            locked = None
        if locked is not None:
            out["vm_qemu_locked_bytes"] = locked
        if self._prev is not None and t > self._prev[0]:
            scale = 100.0 / (CLK_TCK * (t - self._prev[0]))
            out["vm_qemu_cpu_pct"] = (total - self._prev[1]) * scale
            out["vm_vcpu_cpu_pct"] = max(0, vcpu - self._prev[2]) * scale
            out["vm_vhost_cpu_pct"] = max(0, vhost - self._prev[3]) * scale
        self._prev = (t, total, vcpu, vhost)
        return out

    def stop(self) -> None:
        for f in [self._stat, self._statm, self._status, *self._tasks.values(), *self._vhost.values()]:
            f.close()


class GuestCsvSource:
    """The guest's latest guest.csv row (empty cells until the guest has written one)."""

    def __init__(self, path: Path):
        self.path = path
        self._offset = 0
        self._header: list[str] | None = None
        self._partial = ""
        self._last: dict[str, Value] = {}

    def columns(self) -> list[str]:
        return list(GUEST_COLUMNS)

    def start(self) -> None:
        pass

    def sample(self) -> dict[str, Value]:
        try:
            with open(self.path, errors="replace") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
                self._offset = fh.tell()
        except OSError:
            return {}
        lines = (self._partial + chunk).split("\n")
        self._partial = lines.pop()  # an unfinished line waits for the next tick
        for line in lines:
            cells = line.strip().split(",")
            if self._header is None:
                self._header = cells
                continue
            row = dict(zip(self._header, cells))
            self._last = {c: _num(row[c]) for c in GUEST_COLUMNS if row.get(c, "") != ""}
        return dict(self._last)

    def stop(self) -> None:
        pass


def _num(text: str) -> Value:
    try:
        return float(text) if "." in text else int(text)
    except ValueError:
        return float("nan")
