"""Bare metal: the sensor runs as a host process inside the sensor namespace, in its own cgroup.

A setup prepares the sensor's isolation (here: a cgroup with the case's CPU/memory limits),
launches the sensor's argv through the supervisor, and stops it. Containers and VMs implement the
same three steps.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from idsbench.proc import Child, Supervisor
from idsbench.setups import cgroups


@dataclass
class Baremetal:
    sup: Supervisor
    name: str
    cpus: float | None = None
    memory_bytes: int | None = None
    cpu_affinity: Sequence[int] | None = None
    kind: str = "baremetal"
    labels: tuple[str, ...] = ()
    cgroup: cgroups.Cgroup | None = None
    child: Child | None = None

    def prepare(self) -> cgroups.Cgroup:
        self.cgroup = cgroups.create(self.name, cpus=self.cpus, memory_bytes=self.memory_bytes)
        self.sup.teardown.push("cgroup", {"paths": [str(p) for p in self.cgroup.paths]})
        return self.cgroup

    def launch(self, argv: Sequence[str], *, netns: str, stdout: Path) -> Child:
        assert self.cgroup is not None, "prepare() first"
        self.child = self.sup.start(
            argv, name=self.kind + "-sensor", stdout=stdout, netns=netns,
            cpus=self.cpu_affinity, cgroup_procs=self.cgroup.procs_files,
        )
        return self.child

    def stop(self, timeout_s: float) -> int | None:
        """Graceful stop (SIGTERM, then SIGKILL after `timeout_s`); returns the exit status."""
        if self.child is None:
            return None
        return self.sup.stop(self.child, timeout=timeout_s, sig=signal.SIGTERM)

    def oom_killed(self) -> bool:
        return bool(self.cgroup and self.cgroup.oom_kills() > 0)
