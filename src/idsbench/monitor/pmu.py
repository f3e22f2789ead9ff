"""Instructions and cycles the sensor spent, from the CPU's performance counters (`perf stat`), where
the host shows a PMU. A VM without a virtual PMU (this one) has none: that is recorded as "not
supported", never an error."""

from __future__ import annotations

import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from idsbench.proc import Child, Supervisor

EVENT_SOURCES = Path("/sys/bus/event_source/devices")
NOT_SUPPORTED = "not supported"


def pmu_missing() -> str | None:
    """Why the sensor's instructions and cycles cannot be counted here, or None when they can."""
    if shutil.which("perf") is None:
        return f"{NOT_SUPPORTED}: perf is not installed"
    if not any((EVENT_SOURCES / name / "events").is_dir() for name in ("cpu", "cpu_core", "armv8_pmuv3_0")):
        return f"{NOT_SUPPORTED}: no hardware PMU visible ({EVENT_SOURCES} has no cpu events)"
    return None


@dataclass(frozen=True)
class PmuCounts:
    instructions: int | None
    cycles: int | None


class PerfStat:
    """`perf stat -e instructions,cycles` on the sensor's processes, from start() to stop()."""

    def __init__(self, sup: Supervisor, pids: list[int]):
        self.sup, self.pids = sup, pids
        self.child: Child | None = None
        self.out = Path(tempfile.mkstemp(prefix="idsbench-perfstat-", suffix=".csv")[1])

    def start(self) -> None:
        if not self.pids:
            return
        self.child = self.sup.start(
            ["perf", "stat", "-x", ",", "-e", "instructions,cycles", "-o", str(self.out),
             "-p", ",".join(str(p) for p in self.pids)], name="perf-stat-pmu")

    def stop(self) -> PmuCounts | None:
        try:
            if self.child is None:
                return None
            self.sup.stop(self.child, timeout=10, sig=signal.SIGINT)  # perf writes its counts on SIGINT
            return parse_perf_csv(self.out.read_text())
        finally:
            self.out.unlink(missing_ok=True)


def parse_perf_csv(text: str) -> PmuCounts:
    """`perf stat -x,` output: value,unit,event,… per line; "<not supported>" / "<not counted>" → None."""
    found: dict[str, int | None] = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 3 or line.startswith("#"):
            continue
        event = fields[2].split(":")[0].split("/")[0]
        if event in ("instructions", "cycles"):
            found[event] = int(fields[0]) if fields[0].strip().isdigit() else None
    return PmuCounts(found.get("instructions"), found.get("cycles"))
