"""Resource-limited cgroups for the sensor, on cgroup v1 (incl. hybrid) and v2.

Every idsbench cgroup lives under an `idsbench` parent group: `<root>/idsbench/<name>` on v2,
`<root>/<controller>/idsbench/<name>` on v1 (one directory per hierarchy). `root` is the cgroup
filesystem root, `/sys/fs/cgroup` unless given (tests point it at a fake tree).
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from idsbench.errors import EnvironmentMissing, IdsbenchError, SensorFailed, SpecError
from idsbench.teardown import resource_kind

DEFAULT_ROOT = Path("/sys/fs/cgroup")
PARENT = "idsbench"
CFS_PERIOD_US = 100_000
MIN_QUOTA_US = 1_000  # the kernel rejects smaller CFS quotas
MIN_MEMORY_BYTES = 4 * 1024 * 1024
REMOVE_RETRY_S = 3.0

_V2_FIX = (
    "enable it in the parent's cgroup.subtree_control (as root: "
    "`echo +{c} > {parent}/cgroup.subtree_control`; the parent must hold no processes itself), "
    "or on a systemd host run idsbench from a unit with Delegate=yes."
)
_V1_FIX = (
    "mount the v1 hierarchy (`mkdir -p {path} && mount -t cgroup -o {c} cgroup {path}`) "
    "or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1)."
)


def detect_version(root: Path | None = None) -> int:
    """2 for a pure cgroup v2 mount at `root`, 1 for v1 or hybrid (controllers on v1 hierarchies)."""
    root = root or DEFAULT_ROOT
    if (root / "cgroup.controllers").is_file():
        return 2
    if any((root / c / "cgroup.procs").is_file() for c in ("cpu", "cpuacct", "memory", "cpuset")):
        return 1
    raise EnvironmentMissing(
        f"No cgroup filesystem found at {root} (neither a cgroup2 mount nor v1 hierarchies).",
        fix="mount cgroup2 there (`mount -t cgroup2 none /sys/fs/cgroup`) or run on a host with cgroups.",
    )


def usable_controllers(root: Path | None = None) -> list[str]:
    """Controllers idsbench can limit or account with here (cpu, cpuacct, cpuset, memory, io, pids).

    v2: those listed in the root's cgroup.controllers (enabling them in subtree_control is done
    when a group is created); v1: those with a mounted hierarchy."""
    root = root or DEFAULT_ROOT
    wanted = ("cpu", "cpuacct", "cpuset", "memory", "io", "blkio", "pids")
    try:
        if detect_version(root) == 2:
            listed = set(_read(root / "cgroup.controllers").split())
            found = [c for c in wanted if c in listed]
            return found + (["cpuacct"] if "cpu" in listed and "cpuacct" not in found else [])
    except (EnvironmentMissing, OSError):
        return []
    return [c for c in wanted if (root / c / "cgroup.procs").is_file()]


def parse_cpu_list(text: str) -> list[int]:
    """'0-2,5' -> [0, 1, 2, 5] (the kernel's cpulist format)."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def _read(path: Path) -> str:
    return path.read_text()


def _write_cpu_limit(d: Path, version: int, cpus: float) -> None:
    """`cpus` cores as a quota on a 100 ms period (v1: period then quota; v2: cpu.max)."""
    quota = int(cpus * CFS_PERIOD_US)
    if version == 2:
        _write(d / "cpu.max", f"{quota} {CFS_PERIOD_US}")
    else:
        _write(d / "cpu.cfs_period_us", str(CFS_PERIOD_US))
        _write(d / "cpu.cfs_quota_us", str(quota))


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:  # one write() per value, as cgroupfs expects
        f.write(value)


def _kv(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, val = line.partition(" ")
        if val.strip().lstrip("-").isdigit():
            out[key] = int(val)
    return out


class _Files:
    """Reused read-only descriptors (pread at offset 0 re-reads a cgroupfs file), keyed by
    (directory, file name) so a hot read builds no Path."""

    def __init__(self) -> None:
        self._fds: dict[tuple[Path, str], int] = {}
        self._lock = threading.Lock()  # the monitor thread reads while the runner may remove()

    def read(self, d: Path, name: str) -> str:
        with self._lock:
            fd = self._fds.get((d, name))
            if fd is None:
                fd = os.open(d / name, os.O_RDONLY | os.O_CLOEXEC)
                self._fds[(d, name)] = fd
            return os.pread(fd, 65536, 0).decode()

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


class Cgroup:
    """One idsbench cgroup; `dirs` maps controller -> directory (a single directory on v2)."""

    def __init__(self, name: str, version: int, dirs: dict[str, Path], warnings: list[str]):
        self.name = name
        self.version = version
        self.dirs = dirs
        self.warnings = warnings
        self._files = _Files()
        self._peak_seen = 0

    @property
    def paths(self) -> list[Path]:
        """Every directory of this group, once each (for the teardown state file)."""
        return list(dict.fromkeys(self.dirs.values()))

    @property
    def procs_files(self) -> list[Path]:
        """cgroup.procs of every hierarchy; a child writes its own pid into each before exec."""
        return [p / "cgroup.procs" for p in self.paths]

    def pids(self) -> list[int]:
        return sorted({pid for d in self.paths for pid in _procs(d)})

    def cpu_usage_ns(self) -> int:
        """CPU time consumed by the group's tasks since creation."""
        if self.version == 2:
            stat = _kv(self._files.read(self.dirs["cpu"], "cpu.stat"))
            return stat.get("usage_usec", 0) * 1000
        return int(self._files.read(self.dirs["cpuacct"], "cpuacct.usage"))

    def memory_bytes(self) -> int:
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        value = int(self._files.read(self.dirs["memory"], name))
        self._peak_seen = max(self._peak_seen, value)
        return value

    def memory_peak_bytes(self) -> int:
        """Kernel-tracked peak (v1 max_usage_in_bytes, v2 memory.peak); else the max seen here."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        try:
            return int(self._files.read(self.dirs["memory"], name))
        except FileNotFoundError:  # v2 before Linux 5.19
            return max(self._peak_seen, self.memory_bytes())

    def oom_kills(self) -> int:
        """Tasks the OOM killer killed in this group (0 when the kernel does not report it)."""
        d = self.dirs["memory"]
        if self.version == 2:
            return _kv(self._files.read(d, "memory.events")).get("oom_kill", 0)
        return _kv(self._files.read(d, "memory.oom_control")).get("oom_kill", 0)

    def memory_failcnt(self) -> int:
        """How often usage hit the limit (v1 memory.failcnt + memory.memsw.failcnt, v2
        memory.events `max`). With memsw limited too, v1 counts the hits on memsw. Some recent
        kernels leave the v1 counters at 0: use oom_kills() for the verdict."""
        d = self.dirs["memory"]
        if self.version == 2:
            return _kv(self._files.read(d, "memory.events")).get("max", 0)
        hits = int(self._files.read(d, "memory.failcnt"))
        if (d / "memory.memsw.failcnt").exists():
            hits += int(self._files.read(d, "memory.memsw.failcnt"))
        return hits

    def memory_events(self) -> MemoryEvents:
        """The group's memory limit, usage and every starvation signal the kernel gives (v2
        memory.events + memory.stat anon + memory.pressure; v1 failcnt, oom_control, memory.stat)."""
        d = self.dirs["memory"]
        read = self._files.read
        if self.version == 2:
            events = _kv(read(d, "memory.events"))
            limit_text = read(d, "memory.max").strip()
            stat = _kv(read(d, "memory.stat"))
            psi = None
            if (d / "memory.pressure").exists():
                psi = parse_psi_full_avg10(read(d, "memory.pressure"))
            return MemoryEvents(
                limit_bytes=None if limit_text == "max" else int(limit_text),
                usage_bytes=self.memory_bytes(), peak_bytes=self.memory_peak_bytes(),
                anon_bytes=stat.get("anon", 0), limit_hits=events.get("max", 0), high=events.get("high", 0),
                oom=events.get("oom", 0), oom_kills=events.get("oom_kill", 0),
                major_faults=stat.get("pgmajfault", 0), psi_full_avg10=psi)
        control = _kv(read(d, "memory.oom_control"))
        stat = _kv(read(d, "memory.stat"))
        limit = int(read(d, "memory.limit_in_bytes"))
        return MemoryEvents(
            limit_bytes=None if limit >= V1_UNLIMITED else limit,
            usage_bytes=self.memory_bytes(), peak_bytes=self.memory_peak_bytes(),
            anon_bytes=stat.get("total_rss", stat.get("rss", 0)), limit_hits=self.memory_failcnt(),
            oom=control.get("under_oom", 0), oom_kills=control.get("oom_kill", 0),
            major_faults=stat.get("total_pgmajfault", stat.get("pgmajfault", 0)), under_oom=bool(control.get("under_oom")))

    def set_cpus(self, cpus: float) -> None:
        """Change the CPU limit of a group created with one (the quota, on a 100 ms period)."""
        if "cpu" not in self.dirs or not (self.dirs["cpu"] / ("cpu.max" if self.version == 2 else "cpu.cfs_quota_us")).exists():
            raise EnvironmentMissing(f"cgroup {self.name} has no CPU limit to change.",
                                     fix="create it with a cpus limit.")
        _validate(self.name, cpus, None, None, None)
        _write_cpu_limit(self.dirs["cpu"], self.version, cpus)

    def remove(self) -> None:
        """Kill what is left, rmdir every hierarchy directory (already gone is fine)."""
        self._files.close()
        remove_paths(self.paths)

    def __repr__(self) -> str:
        return f"Cgroup({self.name!r}, v{self.version}, {[str(p) for p in self.paths]})"


V1_UNLIMITED = 1 << 62  # v1 reports "no limit" as a page-rounded LONG_MAX
MIB = 1 << 20


def parse_psi_full_avg10(text: str) -> float | None:
    """`full avg10=` of a PSI file (the share of the last 10 s every task of the group stalled)."""
    for line in text.splitlines():
        if line.startswith("full "):
            for part in line.split()[1:]:
                key, _, value = part.partition("=")
                if key == "avg10":
                    return float(value)
    return None


@dataclass(frozen=True)
class MemoryEvents:
    """One reading of a group's memory state. Counters are cumulative since the group was created.
    `oom`: v2 memory.events `oom` (the limit could not be met), v1 `under_oom` (0/1)."""

    limit_bytes: int | None
    usage_bytes: int
    peak_bytes: int
    anon_bytes: int = 0        # anonymous memory: what reclaim cannot take back without swap
    limit_hits: int = 0        # v2 events `max`, v1 failcnt (+ memsw.failcnt)
    high: int = 0              # v2 events `high`
    oom: int = 0
    oom_kills: int = 0
    major_faults: int = 0      # pages read back from disk: a group thrashing its own code pages
    psi_full_avg10: float | None = None  # v2 memory.pressure, where present
    under_oom: bool = False    # v1 oom_control: tasks are frozen waiting for the OOM killer

    def slack_bytes(self) -> int:
        """How close to the limit counts as "at" it: 3% of the limit, at least 2 MiB."""
        return max(2 * MIB, (self.limit_bytes or 0) * 3 // 100)

    def reached_limit(self) -> bool:
        """Its peak came within the slack of the limit (it ran into the limit at some point)."""
        return self.limit_bytes is not None and self.peak_bytes >= self.limit_bytes - self.slack_bytes()

    def at_limit(self) -> bool:
        return self.limit_bytes is not None and self.usage_bytes >= self.limit_bytes - self.slack_bytes()

    def describe(self) -> str:
        """The limit, the peak and the events, for a verdict's reason."""
        parts = [f"limit {_mib(self.limit_bytes)}" if self.limit_bytes is not None else "no limit",
                 f"peak {_mib(self.peak_bytes)}", f"in use {_mib(self.usage_bytes)} "
                 f"({_mib(self.anon_bytes)} anonymous)", f"limit hits {self.limit_hits}"]
        if self.high:
            parts.append(f"high {self.high}")
        parts += [f"oom events {self.oom}", f"oom kills {self.oom_kills}", f"major faults {self.major_faults}"]
        if self.psi_full_avg10 is not None:
            parts.append(f"memory pressure full avg10 {self.psi_full_avg10:g}%")
        if self.under_oom:
            parts.append("under_oom")
        return ", ".join(parts)


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / MIB:.0f} MiB"


STARVED_AFTER_S = 5.0       # the group stuck at its limit this long, continuously: starved
PSI_STARVED_PCT = 40.0      # memory.pressure full avg10 at or above this: stalled on memory
READ_INTERVAL_S = 0.5
THRASHING_FAULTS = 10       # major faults between two readings at the limit: code paged out and in


class MemoryStarved(SensorFailed):
    """The sensor's group sat at its memory limit, stalled in reclaim, for STARVED_AFTER_S."""

    def __init__(self, message: str, events: MemoryEvents, stuck_s: float):
        super().__init__(message, fix=starved_fix(events))
        self.events = events
        self.stuck_s = stuck_s


def starved_fix(events: MemoryEvents) -> str:
    """How much memory it needed, as far as we know: more than the limit it was stuck at."""
    if events.limit_bytes is None:
        return "raise setup.memory."
    wanted = max(events.peak_bytes, events.limit_bytes) * 2
    return (f"it needs more than its limit of {_mib(events.limit_bytes)}: raise setup.memory "
            f"(e.g. to {-(-wanted // (64 * MIB)) * 64}m) and run the case again.")


def is_stuck(prev: MemoryEvents | None, cur: MemoryEvents) -> bool:
    """One reading says the group cannot make progress at its limit: at the limit and either its
    anonymous memory fills it (nothing left to reclaim), or since the previous reading it hit the
    limit / faulted code back in / waited for the OOM killer, or PSI says its tasks stall."""
    if not cur.at_limit() or cur.limit_bytes is None:
        return False
    if cur.under_oom or (cur.psi_full_avg10 is not None and cur.psi_full_avg10 >= PSI_STARVED_PCT):
        return True
    if cur.anon_bytes >= cur.limit_bytes - 2 * cur.slack_bytes():
        return True
    if prev is None:
        return False
    return (cur.limit_hits > prev.limit_hits or cur.oom > prev.oom
            or cur.major_faults - prev.major_faults >= THRASHING_FAULTS)


@runtime_checkable
class MemoryReadable(Protocol):
    """What a starvation watch reads: a Cgroup, or a container's (setups.container.monitor)."""

    def memory_events(self) -> MemoryEvents | None: ...


class StarvationWatch:
    """Reads a group's memory state now and then; `check()` raises MemoryStarved once the group has
    been stuck at its limit (`is_stuck`) at every reading for `after_s`."""

    def __init__(self, read: Callable[[], MemoryEvents | None], *, after_s: float = STARVED_AFTER_S,
                 interval_s: float = READ_INTERVAL_S, clock: Callable[[], float] = time.monotonic):
        self._read, self.after_s, self.interval_s, self._clock = read, after_s, interval_s, clock
        self._prev: MemoryEvents | None = None
        self._since: float | None = None
        self._next = 0.0
        self.last: MemoryEvents | None = None

    def check(self) -> None:
        now = self._clock()
        if now < self._next:
            return
        self._next = now + self.interval_s
        try:
            cur = self._read()
        except (OSError, ValueError):
            return  # the group is gone (the sensor exited): its exit is what the caller sees
        if cur is None:
            return
        self.last = cur
        stuck = is_stuck(self._prev, cur)
        self._prev = cur
        if not stuck:
            self._since = None
            return
        if self._since is None:
            self._since = now
        if now - self._since >= self.after_s:
            raise MemoryStarved(
                f"it was not ready and its memory cgroup sat at its limit for {now - self._since:.0f} s "
                f"(stalled in memory reclaim: {cur.describe()})", cur, now - self._since)

    def guard(self, poll: Callable[[], int | None]) -> Callable[[], int | None]:
        """`poll` that first checks the group (a readiness wait calls it every few ms)."""
        def checked() -> int | None:
            self.check()
            return poll()
        return checked


def _procs(d: Path) -> list[int]:
    try:
        return [int(x) for x in _read(d / "cgroup.procs").split()]
    except FileNotFoundError:
        return []


def _kill_dirs(dirs: Iterable[Path]) -> None:
    for d in dirs:
        kill_file = d / "cgroup.kill"
        if kill_file.exists():
            try:
                _write(kill_file, "1")
                continue
            except OSError:
                pass
        for _ in range(3):  # a task may fork while we kill; repeat a few rounds
            pids = _procs(d)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def remove_paths(paths: Iterable[Path | str], *, kill: bool = True, retry_s: float = REMOVE_RETRY_S) -> None:
    """Remove cgroup directories (e.g. from a stale state file): kill tasks, rmdir with retry.

    Then removes the `idsbench` parent directories if they became empty.
    """
    dirs = [Path(p) for p in paths]
    if kill:
        _kill_dirs(d for d in dirs if d.exists())
    busy: list[Path] = []
    for d in dirs:
        deadline = time.monotonic() + retry_s
        while True:
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError as e:  # EBUSY while killed tasks are still exiting
                if e.errno not in (errno.EBUSY, errno.ENOTEMPTY) or time.monotonic() > deadline:
                    busy.append(d)
                    break
                time.sleep(0.02)
    for parent in dict.fromkeys(d.parent for d in dirs):
        if parent.name == PARENT:
            try:
                os.rmdir(parent)
            except OSError:
                pass  # another run still uses it, or already gone
    if busy:
        raise IdsbenchError(
            f"Could not remove cgroup(s) {', '.join(map(str, busy))}: tasks still inside "
            f"({', '.join(str(p) for d in busy for p in _procs(d)) or 'none listed'}).",
            fix="stop those processes, then run `idsbench cleanup`.",
        )


@resource_kind
@dataclass(frozen=True)
class CgroupResource:
    """An idsbench cgroup (one directory per hierarchy on v1): tasks killed, directories removed."""

    kind: ClassVar[str] = "cgroup"
    paths: tuple[str, ...]

    @classmethod
    def of(cls, group: Cgroup) -> CgroupResource:
        return cls(tuple(str(p) for p in group.paths))

    def undo(self) -> None:
        remove_paths(self.paths)

    def describe(self) -> str:
        return f"cgroup {', '.join(self.paths)}"


def _validate(name: str, cpus: float | None, memory_bytes: int | None, cpuset: list[int] | None,
              swappiness: int | None) -> None:
    if not name or "/" in name or name in (".", "..") or name.startswith("cgroup."):
        raise SpecError(f"Invalid cgroup name {name!r}.", fix="use a plain name such as 'sensor-s0'.")
    if cpus is not None and (cpus <= 0 or cpus * CFS_PERIOD_US < MIN_QUOTA_US):
        raise SpecError(f"cpus = {cpus} is not a usable CPU limit.",
                        fix=f"give a number of CPUs >= {MIN_QUOTA_US / CFS_PERIOD_US}, e.g. 0.5 or 2.")
    if memory_bytes is not None and memory_bytes < MIN_MEMORY_BYTES:
        raise SpecError(f"memory = {memory_bytes} bytes is too small for a sensor.",
                        fix=f"give at least {MIN_MEMORY_BYTES // 2**20} MiB, e.g. '512m' or '2g'.")
    if cpuset is not None and (not cpuset or any(c < 0 for c in cpuset)):
        raise SpecError(f"cpuset = {cpuset} is not a list of CPU numbers.", fix="give e.g. [0, 1].")
    if swappiness is not None and not 0 <= swappiness <= 200:
        raise SpecError(f"swappiness = {swappiness} is out of range.", fix="give 0..200 (0 = avoid swap).")


def _check_cpuset(cpuset: list[int], available_text: str, source: Path) -> None:
    available = set(parse_cpu_list(available_text))
    bad = sorted(set(cpuset) - available)
    if bad:
        raise SpecError(f"cpuset {cpuset} names CPU(s) {bad} that are not available ({source} allows "
                        f"{available_text.strip() or 'none'}).", fix="pick CPUs from that list.")


def _mkdir_group(parent: Path, name: str) -> Path:
    """mkdir <parent>/idsbench (shared, may exist) and <parent>/idsbench/<name> (must not exist)."""
    group = parent / PARENT / name
    for _ in range(20):  # a concurrent remove may rmdir the shared parent between our two mkdirs
        try:
            os.makedirs(group.parent, exist_ok=True)
        except FileExistsError:  # it existed at mkdir, then was gone when makedirs checked it
            continue
        try:
            os.mkdir(group)
            return group
        except FileNotFoundError:
            continue
        except FileExistsError as e:
            raise EnvironmentMissing(f"cgroup {group} already exists (left by an earlier run?).",
                                     fix="run `idsbench cleanup`, or choose another name.") from e
    raise EnvironmentMissing(f"Could not create cgroup {group}.", fix="retry; check that nothing removes it.")


def create(name: str, *, cpus: float | None = None, memory_bytes: int | None = None,
           cpuset: list[int] | None = None, swappiness: int | None = None,
           root: Path | None = None, realtime: bool = False) -> Cgroup:
    """Create `idsbench/<name>` with the given limits; raises SpecError / EnvironmentMissing.

    `realtime`: the group's threads may use SCHED_FIFO. Only v1 hierarchies with RT group
    scheduling need a budget for that (cpu.rt_runtime_us); without one it is a warning."""
    _validate(name, cpus, memory_bytes, cpuset, swappiness)
    root = Path(root) if root else DEFAULT_ROOT
    version = detect_version(root)
    build = _create_v2 if version == 2 else _create_v1
    try:
        group = build(name, root, cpus, memory_bytes, cpuset, swappiness)
    except PermissionError as e:
        raise EnvironmentMissing(f"Not allowed to create cgroups under {root}: {e}.",
                                 fix="run idsbench as root (or with delegated cgroup rights).") from e
    except OSError as e:
        raise EnvironmentMissing(f"Could not set up cgroup {name!r} under {root}: {e}.",
                                 fix="check the kernel log and the cgroup mount; run `idsbench cleanup`.") from e
    if realtime and version == 1:
        _grant_rt_budget(group)
    return group


RT_BUDGET_US = 900_000  # of each 1 s period: what the shared parent asks the root for


def _grant_rt_budget(group: Cgroup) -> None:
    """Give a v1 group (and the shared parent) real-time runtime: with RT group scheduling a
    group without any may not run SCHED_FIFO threads at all. Concurrent groups share the
    parent's budget; what is left goes to this one."""
    child = next((d for d in group.paths if (d / "cpu.rt_runtime_us").is_file()), None)
    if child is None:
        return  # no RT group scheduling: SCHED_FIFO is not rationed
    parent = child.parent
    try:
        if int(_read(parent / "cpu.rt_runtime_us")) == 0:
            _write(parent / "cpu.rt_runtime_us", str(_free_rt_budget(parent.parent, RT_BUDGET_US)))
        free = _free_rt_budget(parent, int(_read(parent / "cpu.rt_runtime_us")))
        if free <= 0:
            raise OSError("the real-time budget of the idsbench parent is taken by concurrent runs")
        _write(child / "cpu.rt_runtime_us", str(free))
    except (OSError, ValueError) as e:
        group.warnings.append(f"no real-time budget for {child} ({e}): its threads run with normal "
                              "scheduling (the native sender reports that in its notes)")


def _free_rt_budget(group: Path, wanted_us: int) -> int:
    """`wanted_us` capped by what `group` has not yet given to its children."""
    own = int(_read(group / "cpu.rt_runtime_us"))
    own = own if own >= 0 else wanted_us  # -1: unlimited (the root, sometimes)
    given = sum(int(_read(c / "cpu.rt_runtime_us")) for c in group.iterdir()
                if c.is_dir() and (c / "cpu.rt_runtime_us").is_file())
    return max(0, min(wanted_us, own - given))


def _undo_on_error(created: list[Path], parents: Iterable[Path] = ()) -> None:
    try:
        remove_paths(created, retry_s=0.5)
    except IdsbenchError:
        pass
    for parent in parents:
        try:
            os.rmdir(parent)
        except OSError:
            pass


def _create_v1(name: str, root: Path, cpus: float | None, memory_bytes: int | None,
               cpuset: list[int] | None, swappiness: int | None) -> Cgroup:
    needed = ["cpuacct", "memory"] + (["cpu"] if cpus is not None else []) + (["cpuset"] if cpuset else [])
    hierarchies: dict[str, Path] = {}
    for c in needed:
        h = root / c
        if not (h / "cgroup.procs").is_file():
            raise EnvironmentMissing(f"The cgroup v1 '{c}' controller is not mounted at {h}.",
                                     fix=_V1_FIX.format(c=c, path=h))
        hierarchies[c] = h.resolve()  # cpu and cpuacct are often one hierarchy (symlinks)
    if cpuset:
        _check_cpuset(cpuset, _read(hierarchies["cpuset"] / "cpuset.effective_cpus"),
                      hierarchies["cpuset"] / "cpuset.effective_cpus")
    dirs: dict[str, Path] = {}
    created: list[Path] = []
    warnings: list[str] = []
    try:
        by_hierarchy: dict[Path, Path] = {}
        for c, h in hierarchies.items():
            if h not in by_hierarchy:
                by_hierarchy[h] = _mkdir_group(h, name)  # pins the shared parent (see _create_v2)
                created.append(by_hierarchy[h])
                if c == "cpuset":  # v1 cpuset groups start empty: give the parent the root's sets
                    _init_cpuset_parent(h)
            dirs[c] = by_hierarchy[h]
        if cpus is not None:
            _write_cpu_limit(dirs["cpu"], 1, cpus)
        mem = dirs["memory"]
        if memory_bytes is not None:
            _write(mem / "memory.limit_in_bytes", str(memory_bytes))
            if (mem / "memory.memsw.limit_in_bytes").exists():
                _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes))  # memory+swap = memory
            elif swappiness is None:
                swappiness = 0
                warnings.append("swap accounting is off (no memory.memsw.*): swap avoided with "
                                "memory.swappiness=0 only")
        if swappiness is not None:
            _write(mem / "memory.swappiness", str(swappiness))
        if cpuset:
            cs = dirs["cpuset"]
            _write(cs / "cpuset.cpus", ",".join(map(str, sorted(set(cpuset)))))
            _write(cs / "cpuset.mems", _read(cs.parent / "cpuset.mems").strip())
    except BaseException:
        _undo_on_error(created)
        raise
    return Cgroup(name, 1, dirs, warnings)


def _init_cpuset_parent(hierarchy: Path) -> None:
    parent = hierarchy / PARENT
    for f in ("cpuset.cpus", "cpuset.mems"):
        if not _read(parent / f).strip():
            _write(parent / f, _read(hierarchy / f).strip())


def _enable_v2(group: Path, controllers: list[str]) -> None:
    """Make `controllers` available to the children of `group` (its cgroup.subtree_control)."""
    available = _read(group / "cgroup.controllers").split()
    enabled = _read(group / "cgroup.subtree_control").split()
    for c in controllers:
        if c not in available and c not in enabled:
            raise EnvironmentMissing(
                f"The cgroup v2 '{c}' controller is not available in {group} "
                f"(cgroup.controllers lists: {' '.join(available) or 'nothing'}).",
                fix=_V2_FIX.format(c=c, parent=group.parent)
                + " If it is bound to a v1 hierarchy, unmount that or boot with cgroup_no_v1=all.")
        # Written even when listed: another run may have just enabled it, and the kernel shows it
        # before the children's files exist; our write waits for that (cgroup_mutex), then no-ops.
        try:
            _write(group / "cgroup.subtree_control", f"+{c}")
        except OSError as e:
            if c in enabled:
                continue  # e.g. a delegated group we may not write: enabled is all we need
            raise EnvironmentMissing(f"Could not enable the cgroup v2 '{c}' controller in {group}: "
                                     f"{e.strerror or e}.", fix=_V2_FIX.format(c=c, parent=group)) from e


def _create_v2(name: str, root: Path, cpus: float | None, memory_bytes: int | None,
               cpuset: list[int] | None, swappiness: int | None) -> Cgroup:
    needed = ["memory"] + (["cpu"] if cpus is not None else []) + (["cpuset"] if cpuset else [])
    _enable_v2(root, needed)
    if cpuset:
        eff = root / "cpuset.cpus.effective"
        _check_cpuset(cpuset, _read(eff) if eff.exists() else ",".join(map(str, range(os.cpu_count() or 1))),
                      eff)
    # Our group first: while it exists, no concurrent run can rmdir the shared parent (and
    # recreate it without controllers) between enabling them there and writing our limits.
    d = _mkdir_group(root, name)
    warnings: list[str] = []
    try:
        _enable_v2(root / PARENT, needed)  # the group's interface files appear now
        if cpus is not None:
            _write_cpu_limit(d, 2, cpus)
        if memory_bytes is not None:
            _write(d / "memory.max", str(memory_bytes))
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
            else:
                warnings.append("swap accounting is off (no memory.swap.max): the group may swap")
        if swappiness is not None and swappiness != 0:
            warnings.append(f"swappiness={swappiness} ignored: cgroup v2 has no per-group swappiness")
        elif swappiness == 0 and (d / "memory.swap.max").exists():
            _write(d / "memory.swap.max", "0")
        if cpuset:
            _write(d / "cpuset.cpus", ",".join(map(str, sorted(set(cpuset)))))
    except BaseException:
        _undo_on_error([d])
        raise
    return Cgroup(name, 2, {"cpu": d, "cpuacct": d, "memory": d, "cpuset": d}, warnings)
