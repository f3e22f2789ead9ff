"""Facts about processes read from /proc (no signals sent): start time, liveness, children."""

from __future__ import annotations

from pathlib import Path


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of /proc/PID/stat (after the command name, which may hold spaces and ')')."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()


def process_starttime(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat); None if gone."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def is_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is None or fields[0] == "Z"


def same_process_alive(pid: int, starttime: int | None) -> bool:
    """`pid` still runs and is the process that had `starttime` (a recycled PID is not)."""
    if pid <= 0:
        return False
    current = process_starttime(pid)
    return current is not None and (starttime is None or current == starttime) and not is_zombie(pid)


def parent_of(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def children_of(pid: int) -> list[int]:
    """Direct children of `pid` (from /proc/PID/task/*/children; no process-tree scan)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return out
