"""The host's side of a VM (qemu and its vhost workers) or of a container (the runtime's processes):
their CPU time over the profiled window, split into categories (profile/categories.py).

/proc gives each thread's CPU time exactly (utime+stime, and guest_time for a KVM vCPU); perf samples
say how a thread's host time divides between categories. Per thread: guest time -> `guest`; the rest
in proportion to the thread's samples per category (or to its role's category when perf has none).
CPU of threads that exited inside the window (the process's total minus its live threads') goes by the
samples of threads perf saw that are gone. So the categories add up, to the tick, to the processes'
CPU time over the window (`split` is pure: unit-tested with recorded perf output).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from idsbench.profile.categories import CATEGORIES, Accel, Category, Role, classify, qemu_role, runtime_role, thread_default
from idsbench.profile.threads import CLK_TCK, ProcessTime, ThreadTime

Subject = Literal["qemu", "runtime"]


@dataclass(frozen=True)
class HostSideTarget:
    """What a setup runs on the host for the sensor (setups' `host_side()`)."""

    subject: Subject
    pids: tuple[int, ...]               # qemu (+ vhost kernel threads of older kernels), or the runtime's
    accel: Accel | None = None          # VMs: tcg | kvm
    monitor_column: str | None = None   # the monitor.csv column that measures the same CPU (a % of one core)
    sensor_cgroup: bool = False         # they are the sensor's cgroup (a VM's qemu): its counter measures them

    def role(self, process: str, thread: str) -> Role:
        """qemu's tasks by thread name; a runtime's by process name (Go threads carry the process's)."""
        return qemu_role(thread) if self.subject == "qemu" else runtime_role(process)


def report_argv(data: Path) -> list[str]:
    """Samples per thread, object and function, every row, '|'-separated (qemu's thread names have spaces)."""
    return ["perf", "report", "-i", str(data), "--stdio", "--no-children", "-q", "-g", "none", "-n",
            "--sort", "pid,dso,sym", "-t", "|", "--percent-limit", "0"]


@dataclass(frozen=True)
class PerfRow:
    tid: int
    comm: str
    dso: str
    symbol: str
    kind: str        # k kernel, . user, g/u guest kernel/user
    samples: int


def parse_rows(text: str) -> list[PerfRow]:
    """`report_argv`'s output: `overhead|samples|tid:comm|dso|[k] symbol` (other lines skipped)."""
    out = []
    for line in text.splitlines():
        cells = line.split("|")
        if len(cells) < 5 or not cells[1].strip().isdigit():
            continue
        task, dso, sym = cells[2].strip(), cells[3].strip(), "|".join(cells[4:]).strip()
        tid, _, comm = task.partition(":")
        if not tid.strip().isdigit() or len(sym) < 3 or sym[0] != "[" or sym[2] != "]":
            continue
        out.append(PerfRow(int(tid), comm, dso, sym[3:].strip(), sym[1], int(cells[1])))
    return out


@dataclass(frozen=True)
class TaskUsage:
    """One thread over the window."""

    tid: int
    process: str
    name: str
    role: Role
    cpu_s: float
    guest_s: float = 0.0


def usage(target: HostSideTarget, before: Mapping[int, ThreadTime], after: Mapping[int, ThreadTime],
          procs_before: Mapping[int, ProcessTime], procs_after: Mapping[int, ProcessTime]) -> tuple[list[TaskUsage], float]:
    """Each live thread's CPU over the window, and the CPU of threads that exited inside it (seconds):
    per process, its total's change minus its live threads' (threads born inside count from 0)."""
    tasks = []
    live: dict[int, int] = {}
    for tid, end in after.items():
        start = before.get(tid)
        ticks = end.cpu_ticks - (start.cpu_ticks if start else 0)
        guest = end.guest_ticks - (start.guest_ticks if start else 0)
        live[end.pid] = live.get(end.pid, 0) + ticks
        process = procs_after[end.pid].name if end.pid in procs_after else end.name
        tasks.append(TaskUsage(tid, process, end.name, target.role(process, end.name), ticks / CLK_TCK,
                               max(0, min(guest, ticks)) / CLK_TCK))
    exited = 0
    for pid, end_p in procs_after.items():
        start_p = procs_before.get(pid)
        if start_p is not None:
            exited += max(0, end_p.cpu_ticks - start_p.cpu_ticks - live.get(pid, 0))
    return tasks, exited / CLK_TCK


@dataclass(frozen=True)
class ThreadSplit:
    name: str
    role: Role
    cpu_s: float
    guest_s: float
    perf_samples: int


@dataclass(frozen=True)
class Split:
    """Seconds per category; `total_s` is their sum = the processes' CPU over the window."""

    seconds: dict[Category, float]
    total_s: float
    threads: tuple[ThreadSplit, ...]
    perf_samples: int
    by: Literal["perf", "threads"]
    notes: tuple[str, ...] = field(default=())

    def share(self, category: Category) -> float:
        return self.seconds[category] / self.total_s if self.total_s > 0 else 0.0


def split(target: HostSideTarget, tasks: Sequence[TaskUsage], exited_s: float,
          rows: Sequence[PerfRow] | None) -> Split:
    """Each thread's CPU into categories (module docstring); `rows` None: perf record did not run."""
    counts: dict[int, dict[Category, int]] = {}
    guest_rows = 0
    roles = {t.tid: t.role for t in tasks}
    for r in rows or ():
        if r.kind in ("g", "u"):
            guest_rows += r.samples  # guest time comes from /proc: counting these too would count it twice
            continue
        role = roles.get(r.tid) or target.role(r.comm, r.comm)
        category = classify(role, r.dso, r.symbol, r.kind, target.accel)
        per = counts.setdefault(r.tid, {})
        per[category] = per.get(category, 0) + r.samples
    seconds: dict[Category, float] = dict.fromkeys(CATEGORIES, 0.0)
    by_name: dict[tuple[str, Role], list[float]] = {}
    notes = []
    unsampled = 0.0
    for t in tasks:
        seconds["guest"] += t.guest_s
        host = t.cpu_s - t.guest_s
        mine = counts.get(t.tid, {})
        n = sum(mine.values())
        if n:
            for category, k in mine.items():
                seconds[category] += host * k / n
        else:
            seconds[thread_default(t.role, target.accel)] += host
            unsampled += host
        agg = by_name.setdefault((t.name, t.role), [0.0, 0.0, 0.0])
        agg[0] += t.cpu_s
        agg[1] += t.guest_s
        agg[2] += n
    gone: dict[Category, int] = {}
    for tid, per in counts.items():
        if tid not in roles:
            for category, k in per.items():
                gone[category] = gone.get(category, 0) + k
    if exited_s > 0:
        n = sum(gone.values())
        for category, k in gone.items():
            seconds[category] += exited_s * k / n
        if not n:
            seconds["other"] += exited_s
            if exited_s >= 0.05:  # below that it may be the processes' and threads' tick rounding
                notes.append(f"{exited_s:.2f} s of threads that exited during the window, with no perf sample: "
                             "counted as other")
    total = sum(t.cpu_s for t in tasks) + exited_s
    sampled = sum(sum(per.values()) for per in counts.values())
    if rows is not None and unsampled > 0.05 * total and total > 0:
        notes.append(f"{unsampled:.2f} s of threads perf did not sample were split by thread role")
    if guest_rows:
        notes.append(f"{guest_rows} guest-mode perf samples left out (guest time is read from /proc)")
    threads = tuple(sorted((ThreadSplit(name, role, round(v[0], 3), round(v[1], 3), int(v[2]))
                            for (name, role), v in by_name.items()), key=lambda s: (-s.cpu_s, s.name)))
    return Split(seconds=seconds, total_s=total, threads=threads, perf_samples=sampled,
                 by="perf" if rows is not None else "threads", notes=tuple(notes))
