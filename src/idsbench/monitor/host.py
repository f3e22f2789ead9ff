"""Host-wide sources: CPU (/proc/stat), memory (/proc/meminfo), disks (/proc/diskstats),
softnet (/proc/net/softnet_stat). Parsers are plain functions of the file's text."""

from __future__ import annotations

import re
from pathlib import Path

from idsbench.monitor.base import ProcFile, Value

U32 = 1 << 32


def parse_proc_stat(text: str) -> dict[str, tuple[int, int]]:
    """'cpu' / 'cpuN' -> (busy jiffies, total jiffies). Guest time is already inside user."""
    out: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *fields = line.split()
        vals = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
        total = sum(vals)
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
        out[name] = (total - idle, total)
    return out


def _pct(busy0: int, total0: int, busy1: int, total1: int) -> float:
    dt = total1 - total0
    return 100.0 * (busy1 - busy0) / dt if dt > 0 else 0.0


class HostCpu:
    """host_cpu_pct (0-100 over all CPUs) and cpu<i>_pct, over the interval since the last sample."""

    def __init__(self, path: Path | str = "/proc/stat"):
        self._file = ProcFile(path)
        self._cpus = sorted(int(k[3:]) for k in parse_proc_stat(self._file.read()) if k != "cpu")
        self._prev: dict[str, tuple[int, int]] = {}

    def columns(self) -> list[str]:
        return ["host_cpu_pct"] + [f"cpu{i}_pct" for i in self._cpus]

    def start(self) -> None:
        self._prev = parse_proc_stat(self._file.read())

    def sample(self) -> dict[str, Value]:
        now = parse_proc_stat(self._file.read())
        out: dict[str, Value] = {}
        for name, (busy, total) in now.items():
            if name in self._prev:
                col = "host_cpu_pct" if name == "cpu" else f"{name}_pct"
                out[col] = _pct(*self._prev[name], busy, total)
        self._prev = now
        return out

    def stop(self) -> None:
        self._file.close()


def parse_meminfo(text: str) -> dict[str, int]:
    """Field -> bytes (values in kB are converted)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            out[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


class HostMemory:
    """mem_used_bytes (MemTotal - MemAvailable), mem_available_bytes, swap_used_bytes (gauges)."""

    def __init__(self, path: Path | str = "/proc/meminfo"):
        self._file = ProcFile(path)

    def columns(self) -> list[str]:
        return ["mem_used_bytes", "mem_available_bytes", "swap_used_bytes"]

    def start(self) -> None:
        pass

    _WANTED = re.compile(r"^(MemTotal|MemAvailable|SwapTotal|SwapFree):\s+(\d+)", re.M)

    def sample(self) -> dict[str, Value]:
        m = {k: int(v) * 1024 for k, v in self._WANTED.findall(self._file.read())}  # all in kB
        return {
            "mem_used_bytes": m["MemTotal"] - m["MemAvailable"],
            "mem_available_bytes": m["MemAvailable"],
            "swap_used_bytes": m.get("SwapTotal", 0) - m.get("SwapFree", 0),
        }

    def stop(self) -> None:
        self._file.close()


def whole_disks(sys_block: Path | str = "/sys/block") -> set[str]:
    """Physical whole disks: /sys/block entries that are not virtual (loop, zram, dm, md).
    Partitions never appear directly under /sys/block; stacked devices would double count."""
    base = Path(sys_block)
    if not base.is_dir():
        return set()
    return {p.name for p in base.iterdir() if "/devices/virtual/" not in str(p.resolve())}


def parse_diskstats(text: str, disks: set[str]) -> tuple[int, int]:
    """(bytes read, bytes written) summed over `disks`; diskstats sectors are always 512 bytes."""
    read = written = 0
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 10 and f[2] in disks:
            read += int(f[5]) * 512
            written += int(f[9]) * 512
    return read, written


class DiskIO:
    """disk_read_bytes, disk_write_bytes, cumulative since start, over whole physical disks."""

    def __init__(self, path: Path | str = "/proc/diskstats", disks: set[str] | None = None):
        self._file = ProcFile(path)
        self._disks = whole_disks() if disks is None else disks
        self._base = (0, 0)

    def columns(self) -> list[str]:
        return ["disk_read_bytes", "disk_write_bytes"]

    def start(self) -> None:
        self._base = parse_diskstats(self._file.read(), self._disks)

    def sample(self) -> dict[str, Value]:
        r, w = parse_diskstats(self._file.read(), self._disks)
        return {"disk_read_bytes": r - self._base[0], "disk_write_bytes": w - self._base[1]}

    def stop(self) -> None:
        self._file.close()


def parse_softnet(text: str) -> list[tuple[int, int, int]]:
    """Per-CPU rows of (processed, dropped, time_squeeze); the file is hex, 32-bit counters."""
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3:
            rows.append((int(f[0], 16), int(f[1], 16), int(f[2], 16)))
    return rows


class Softnet:
    """softnet_processed/_dropped/_squeezed summed over CPUs, cumulative since start.
    Deltas are taken per CPU modulo 2**32 so a wrapping 32-bit counter does not go backwards."""

    COLUMNS = ["softnet_processed", "softnet_dropped", "softnet_squeezed"]

    def __init__(self, path: Path | str = "/proc/net/softnet_stat"):
        self._file = ProcFile(path)
        self._prev: list[tuple[int, int, int]] = []
        self._sum = [0, 0, 0]

    def columns(self) -> list[str]:
        return list(self.COLUMNS)

    def start(self) -> None:
        self._prev = parse_softnet(self._file.read())
        self._sum = [0, 0, 0]

    def sample(self) -> dict[str, Value]:
        now = parse_softnet(self._file.read())
        for row, prev in zip(now, self._prev):  # rows are per online CPU, in CPU order
            for i in range(3):
                self._sum[i] += (row[i] - prev[i]) % U32
        self._prev = now
        return dict(zip(self.COLUMNS, self._sum))

    def stop(self) -> None:
        self._file.close()
