"""The sensor's cgroup: CPU % over the interval (100 per core), memory now and peak."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from idsbench.monitor.base import Value


class CgroupStats(Protocol):
    """What the source needs from `idsbench.infra.cgroups.Cgroup`."""

    def cpu_usage_ns(self) -> int: ...

    def memory_bytes(self) -> int: ...

    def memory_peak_bytes(self) -> int: ...


@runtime_checkable
class ProcessGroup(Protocol):
    """A cgroup that can list its processes (to attach a profiler to them)."""

    def pids(self) -> list[int]: ...


class CgroupSource:
    """sensor_cpu_pct, sensor_mem_bytes, sensor_mem_peak_bytes. With no cgroup (or once it is
    gone) the columns stay in the header and the cells are left empty."""

    def __init__(self, cgroup: CgroupStats | None, *, prefix: str = "sensor",
                 clock: Callable[[], float] = time.monotonic):
        self._cg = cgroup
        self._clock = clock
        self._cols = [f"{prefix}_cpu_pct", f"{prefix}_mem_bytes", f"{prefix}_mem_peak_bytes"]
        self._prev: tuple[float, int] | None = None

    def columns(self) -> list[str]:
        return list(self._cols)

    def start(self) -> None:
        if self._cg is not None:
            self._prev = (self._clock(), self._cg.cpu_usage_ns())

    def sample(self) -> dict[str, Value]:
        if self._cg is None:
            return {}
        cpu_col, mem_col, peak_col = self._cols
        out: dict[str, Value] = {}
        now, used = self._clock(), self._cg.cpu_usage_ns()
        if self._prev is not None and now > self._prev[0]:
            out[cpu_col] = 100.0 * (used - self._prev[1]) / ((now - self._prev[0]) * 1e9)
        self._prev = (now, used)
        out[mem_col] = self._cg.memory_bytes()
        out[peak_col] = self._cg.memory_peak_bytes()
        return out

    def stop(self) -> None:
        pass
