"""Bare metal: the sensor runs as a host process inside the sensor namespace, in its own cgroup."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path

from idsbench.infra import cgroups
from idsbench.infra.cgroups import CgroupResource
from idsbench.monitor.base import Source
from idsbench.proc import Child
from idsbench.setups.base import SetupRequest
from idsbench.wire.netns import WireEnds


class Baremetal:
    kind = "baremetal"
    labels: tuple[str, ...] = ()
    invisible: tuple[str, ...] = ()

    def __init__(self, request: SetupRequest):
        self.req = request
        self.cgroup: cgroups.Cgroup | None = None
        self.child: Child | None = None
        self.wire: WireEnds | None = None

    def pre_wire(self) -> str | None:
        return None  # the wire creates the sensor namespace

    def prepare(self, wire: WireEnds) -> cgroups.Cgroup:
        self.wire = wire
        self.cgroup = cgroups.create(self.req.name, cpus=self.req.cpus, memory_bytes=self.req.memory_bytes)
        self.req.sup.teardown.push(CgroupResource.of(self.cgroup))
        return self.cgroup

    def capture_interface(self) -> str:
        assert self.wire is not None, "prepare() first"
        return self.wire.sensor_if

    def launch(self, argv: Sequence[str], *, stdout: Path) -> Child:
        assert self.cgroup is not None and self.wire is not None, "prepare() first"
        self.child = self.req.sup.start(
            argv, name="sensor", stdout=stdout, netns=self.wire.sensor_ns,
            cpus=self.req.cpu_affinity, cgroup_procs=self.cgroup.procs_files, cwd=self.req.sample_dir,
        )
        return self.child

    def stop(self, timeout_s: float) -> int | None:
        """Graceful stop (SIGTERM, then SIGKILL after `timeout_s`); returns the exit status."""
        if self.child is None:
            return None
        return self.req.sup.stop(self.child, timeout=timeout_s, sig=signal.SIGTERM)

    def set_cpus(self, cpus: float) -> bool:
        """Change the sensor's CPU limit while it runs (the search's cpus axis, warm)."""
        if self.cgroup is None:
            return False
        self.cgroup.set_cpus(cpus)
        return True

    def oom_killed(self) -> bool:
        return bool(self.cgroup and self.cgroup.oom_kills() > 0)

    def overhead_sources(self) -> list[Source]:
        return []  # no isolation layer beyond the cgroup
