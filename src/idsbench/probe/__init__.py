"""Host probe: every fact about a host that can change a result, the timer-cost check, and diffs.

- `collect(interfaces=(), netns=None, sensor=True) -> HostProbe` probes this host.
- `load(path) -> HostProbe` reads a probe file or a campaign's probe (`store.reader.read_probe`).
- `diff(a, b) -> list[Difference]`; `diff_paths(a, b)` adds two campaigns' `sensor.set` changes.
- `warnings(probe) -> list[str]`: known traps (a profiling build under a trapping cpuid, ...).
"""

from __future__ import annotations

from idsbench.probe.collect import collect
from idsbench.probe.diff import Difference, diff, diff_paths, load
from idsbench.probe.model import SCHEMA, HostProbe, InterfaceProbe, TimerCosts
from idsbench.probe.render import summary
from idsbench.probe.warnings import warnings

__all__ = [
    "SCHEMA", "Difference", "HostProbe", "InterfaceProbe", "TimerCosts", "collect", "diff",
    "diff_paths", "load", "summary", "warnings",
]
