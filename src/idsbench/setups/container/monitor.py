"""Accounting for a containerised sensor, read from the kernel, never from `podman/docker stats`.

`ContainerStats` finds the container's own cgroup from its PID (/proc/PID/cgroup + the cgroup
mounts) once, then reads its files like any idsbench cgroup. It exists before the container does
(the sampler starts first): until `attach()` it reports zeros, and once the container is gone
(the runtime removes its cgroup at exit) it keeps the last values it read.

`ProcessSource` adds the isolation layer's host-side cost: the CPU and RSS of the runtime's own
processes (conmon, containerd-shim, dockerd, containerd, the attached CLI) by their known PIDs.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench.infra.cgroups import Cgroup, MemoryEvents
from idsbench.monitor.base import Value

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
V1_CONTROLLERS = ("cpuacct", "memory")


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """/proc/PID/cgroup -> {controller: path}; the v2 line is keyed ''."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for c in controllers.split(",") if controllers else [""]:
            out[c] = path
    return out


def parse_cgroup_mounts(mountinfo: str) -> dict[str, Path]:
    """cgroup mount points from /proc/self/mountinfo: {controller: mount point}, v2 keyed ''."""
    out: dict[str, Path] = {}
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        fstype, options = rest[0], rest[2].split(",")
        if fstype == "cgroup2":
            out.setdefault("", Path(fields[4]))
        elif fstype == "cgroup":
            for opt in options:
                out.setdefault(opt, Path(fields[4]))
    return out


def cgroup_dirs(pid: int, mountinfo: str | None = None, proc_cgroup: str | None = None) -> tuple[int, dict[str, Path]]:
    """(version, {controller: directory}) of the cgroup `pid` lives in."""
    mountinfo = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    proc_cgroup = proc_cgroup if proc_cgroup is not None else Path(f"/proc/{pid}/cgroup").read_text()
    mounts, paths = parse_cgroup_mounts(mountinfo), parse_proc_cgroup(proc_cgroup)
    if all(c in mounts and c in paths for c in V1_CONTROLLERS):
        return 1, {c: mounts[c] / paths[c].lstrip("/") for c in V1_CONTROLLERS}
    if "" in mounts and "" in paths:
        d = mounts[""] / paths[""].lstrip("/")
        return 2, {"cpu": d, "memory": d}
    raise FileNotFoundError(f"no cpuacct/memory cgroup found for pid {pid}")


@dataclass(frozen=True)
class KernelOomReport:
    """The kernel's own account of a memory cgroup at the moment it OOM-killed a task in it
    (`memory: usage …kB, limit …kB, failcnt …` in the OOM report)."""

    usage_bytes: int
    limit_bytes: int
    failcnt: int


class ContainerStats:
    """CgroupStats of a container, attached once its PID is known; last values survive its exit.
    `kernel_oom` gives the kernel's report of an OOM kill in the container, if any: the runtime
    removes a killed container's cgroup before its last usage can be read, the kernel's report
    says what the group held when it was killed."""

    def __init__(self, kernel_oom: Callable[[], tuple[int, KernelOomReport | None]] | None = None) -> None:
        self._cg: Cgroup | None = None
        self._lock = threading.Lock()
        self._last = {"cpu": 0, "mem": 0, "peak": 0, "oom": 0}
        self._events: MemoryEvents | None = None
        self._kernel_oom = kernel_oom
        self.dirs: dict[str, Path] = {}

    def attach(self, pid: int) -> None:
        self.attach_dirs(*cgroup_dirs(pid))

    def attach_dirs(self, version: int, dirs: dict[str, Path]) -> None:
        with self._lock:
            self._cg = Cgroup("container", version, dirs, [])
            self.dirs = dirs
        self.refresh()

    def detach(self) -> None:
        """Read a last time, then close the files (the runtime is about to remove the cgroup)."""
        self.refresh()
        with self._lock:
            if self._cg is not None:
                self._cg._files.close()
            self._cg = None

    def _read(self, key: str, reader: Callable[[Cgroup], int]) -> int:
        with self._lock:
            if self._cg is not None:
                try:
                    self._last[key] = reader(self._cg)
                except (OSError, ValueError):
                    pass  # the container exited: keep the last value
            return self._last[key]

    def refresh(self) -> None:
        self.cpu_usage_ns()
        self.memory_bytes()
        self.memory_peak_bytes()
        self.oom_kills()
        self.memory_events()

    def pids(self) -> list[int]:
        with self._lock:
            return self._cg.pids() if self._cg is not None else []

    def cpu_usage_ns(self) -> int:
        return self._read("cpu", Cgroup.cpu_usage_ns)

    def memory_bytes(self) -> int:
        return self._read("mem", Cgroup.memory_bytes)

    def memory_peak_bytes(self) -> int:
        return max(self._read("peak", Cgroup.memory_peak_bytes), self._last["mem"])

    def oom_kills(self) -> int:
        return self._read("oom", Cgroup.oom_kills)

    def memory_events(self) -> MemoryEvents | None:
        """The container cgroup's memory state (None before attach; the last reading after exit,
        completed by the kernel's OOM report when the kernel killed a task in it)."""
        with self._lock:
            if self._cg is not None:
                try:
                    self._events = self._cg.memory_events()
                except (OSError, ValueError):
                    pass
            events = self._events
        kills, report = self._kernel_oom() if self._kernel_oom is not None else (0, None)
        return with_kernel_oom(events, kills, report)


def with_kernel_oom(events: MemoryEvents | None, kills: int, report: KernelOomReport | None) -> MemoryEvents | None:
    """A cgroup reading completed by what the kernel logged when it OOM-killed in that group:
    its usage then is a peak the group reached, its limit the limit, its kills counted."""
    if report is None:
        return events if events is None or kills <= events.oom_kills else dataclasses.replace(events, oom_kills=kills)
    if events is None:
        return MemoryEvents(limit_bytes=report.limit_bytes, usage_bytes=0, peak_bytes=report.usage_bytes,
                            limit_hits=report.failcnt, oom_kills=kills)
    return dataclasses.replace(
        events, limit_bytes=events.limit_bytes if events.limit_bytes is not None else report.limit_bytes,
        peak_bytes=max(events.peak_bytes, report.usage_bytes), limit_hits=max(events.limit_hits, report.failcnt),
        oom_kills=max(events.oom_kills, kills))


def read_proc_usage(pid: int) -> tuple[int, int] | None:
    """(utime+stime in clock ticks, resident bytes) of one process, None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        statm = Path(f"/proc/{pid}/statm").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12]), int(statm.split()[1]) * PAGE_SIZE


class ProcessSource:
    """`<prefix>_cpu_pct` (100 per core) and `<prefix>_mem_bytes` (RSS) summed over the PIDs that
    `pids()` returns (it may grow, e.g. once the container started). Per-PID deltas: a process that
    appears counts from its first reading; one that exits stops counting."""

    def __init__(self, pids: Callable[[], Sequence[int]], *, prefix: str = "isolation",
                 clock: Callable[[], float] = time.monotonic,
                 reader: Callable[[int], tuple[int, int] | None] = read_proc_usage):
        self._pids = pids
        self._clock = clock
        self._reader = reader
        self._cols = [f"{prefix}_cpu_pct", f"{prefix}_mem_bytes"]
        self._prev: dict[int, int] = {}
        self._prev_t: float | None = None

    def columns(self) -> list[str]:
        return list(self._cols)

    def start(self) -> None:
        self._prev = {}
        self._prev_t = self._clock()
        self._poll()

    def _poll(self) -> tuple[int, int]:
        ticks, rss = 0, 0
        current: dict[int, int] = {}
        for pid in dict.fromkeys(self._pids()):
            usage = self._reader(pid)
            if usage is None:
                continue
            current[pid] = usage[0]
            ticks += usage[0] - self._prev.get(pid, usage[0])
            rss += usage[1]
        self._prev = current
        return ticks, rss

    def sample(self) -> dict[str, Value]:
        now = self._clock()
        ticks, rss = self._poll()
        out: dict[str, Value] = {self._cols[1]: rss}
        if self._prev_t is not None and now > self._prev_t:
            out[self._cols[0]] = 100.0 * ticks / CLOCK_TICKS / (now - self._prev_t)
        self._prev_t = now
        return out

    def stop(self) -> None:
        pass


def kmsg_oom_kill(record: str, container_id: str) -> bool:
    """True for a kernel `oom-kill:` record whose victim's memcg is the container's cgroup
    (podman: .../libpod-<id>, docker: /docker/<id>)."""
    _, _, message = record.partition(";")
    if not message.startswith("oom-kill:"):
        return False
    fields = dict(part.split("=", 1) for part in message.strip().split(",") if "=" in part)
    return container_id in fields.get("task_memcg", "")


_KMSG_MEMCG_USAGE = re.compile(r"^memory: usage (\d+)kB, limit (\d+)kB, failcnt (\d+)")


def kmsg_memcg_usage(record: str) -> KernelOomReport | None:
    """The `memory: usage …` line of a kernel OOM report (it describes the group whose limit
    was hit, the `oom_memcg` of the `oom-kill:` record that follows), else None."""
    _, _, message = record.partition(";")
    m = _KMSG_MEMCG_USAGE.match(message)
    if m is None:
        return None
    return KernelOomReport(int(m[1]) * 1024, int(m[2]) * 1024, int(m[3]))


def kmsg_oom_memcg(record: str) -> str:
    """The `oom_memcg` (the group whose limit was hit) of an `oom-kill:` record, else ''."""
    _, _, message = record.partition(";")
    if not message.startswith("oom-kill:"):
        return ""
    fields = dict(part.split("=", 1) for part in message.strip().split(",") if "=" in part)
    return fields.get("oom_memcg", "")


class KmsgOomWatch:
    """Counts the kernel's OOM kills in one container from /dev/kmsg records logged after
    `open()`, and keeps the kernel's report of the container group's usage and limit at the kill.
    Needed because podman with runc on cgroup v1 reports `OOMKilled: false` for a sensor the
    kernel killed, and the runtime removes the cgroup (and its oom counter) at exit."""

    def __init__(self, path: str = "/dev/kmsg"):
        self._path = path
        self._fd: int | None = None
        self._pending: KernelOomReport | None = None
        self._lock = threading.Lock()
        self.kills = 0
        self.report: KernelOomReport | None = None
        self.container_id = ""

    def open(self) -> bool:
        try:
            self._fd = os.open(self._path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            os.lseek(self._fd, 0, os.SEEK_END)  # only what happens from now on
        except OSError:
            self._fd = None
        return self._fd is not None

    def poll(self) -> int:
        """Read the new records; returns the OOM kills seen so far (safe from several threads)."""
        with self._lock:
            if self._fd is None or not self.container_id:
                return self.kills
            while True:
                try:
                    record = os.read(self._fd, 8192).decode(errors="replace")
                except BlockingIOError:
                    break
                except BrokenPipeError:  # records were overwritten before we read them: go on
                    continue
                except OSError:
                    break
                if not record:
                    break
                self._take(record)
            return self.kills

    def _take(self, record: str) -> None:
        usage = kmsg_memcg_usage(record)
        if usage is not None:
            self._pending = usage
        elif kmsg_oom_kill(record, self.container_id):
            self.kills += 1
            if self._pending is not None and self.container_id in kmsg_oom_memcg(record):
                self.report = self._pending
            self._pending = None

    def state(self) -> tuple[int, KernelOomReport | None]:
        """(OOM kills seen, the kernel's report of the container group at the last one)."""
        return self.poll(), self.report

    def close(self) -> None:
        self.poll()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
