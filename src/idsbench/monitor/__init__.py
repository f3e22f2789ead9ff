"""Low-overhead monitoring: host, sensor cgroup and namespace NIC counters -> monitor.csv.

`standard_sources()` builds the sources in the order of the documented monitor.csv header.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from idsbench.monitor.base import ProcFile, Source, Value
from idsbench.monitor.host import DiskIO, HostCpu, HostMemory, Softnet
from idsbench.monitor.netdev import NetDevSource
from idsbench.monitor.sampler import Sampler
from idsbench.monitor.sensor import CgroupSource, CgroupStats

__all__ = [
    "CgroupSource", "CgroupStats", "DiskIO", "HostCpu", "HostMemory", "NetDevSource", "ProcFile",
    "Sampler", "Softnet", "Source", "Value", "standard_sources",
]


def standard_sources(cgroup: CgroupStats | None = None,
                     netdevs: Sequence[tuple[str, int, str | None]] = (), *,
                     clock: Callable[[], float] = time.monotonic) -> list[Source]:
    """Host CPU, memory, disks, softnet, the sensor cgroup (columns kept even when None), then
    one NetDevSource per (label, pid in the namespace, interface or None for all but lo)."""
    sources: list[Source] = [HostCpu(), HostMemory(), DiskIO(), Softnet(), CgroupSource(cgroup, clock=clock)]
    sources += [NetDevSource(label, pid, ifname) for label, pid, ifname in netdevs]
    return sources
