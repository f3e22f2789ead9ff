"""The setup contract: how a sensor is isolated, launched, accounted for and stopped.

A sample runs the same steps for every setup kind (bare metal, container, container-vtap, vm):

    setup = make_setup(kind, request)      # nothing created yet (setups.registry)
    ns = setup.pre_wire()                  # None, or an existing netns the wire must use for the
                                           # sensor side (e.g. a docker pause container's, attached
                                           # with `ip netns attach`); registered for teardown
    stats = setup.prepare(wire)            # isolation resources (cgroup, container, VM, macvtap)
    iface = setup.capture_interface()      # what the sensor sniffs, as seen from inside
    child = setup.launch(argv, stdout=...) # the sensor argv (paths are host paths of the sample dir;
                                           # containers/VMs make them visible at the same path)
    ... replay ...
    setup.stop(timeout_s); setup.oom_killed()

Everything created is pushed to `request.sup.teardown`, so errors and Ctrl-C remove it. Setups
know the sensor only through `request.engine` (the adapter protocol of sensors.base).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from idsbench import settings
from idsbench.monitor.base import Source
from idsbench.monitor.sensor import CgroupStats
from idsbench.proc import Supervisor
from idsbench.profile.hostside import HostSideTarget
from idsbench.sensors.base import SensorEngine
from idsbench.wire.netns import WireEnds


@dataclass(frozen=True)
class SetupRequest:
    """Everything a setup needs to know about the case it runs."""

    sup: Supervisor
    engine: SensorEngine          # the sensor's adapter (what to install/share in images)
    name: str                     # unique per sample (cgroup/container/VM names derive from it)
    sample_dir: Path              # the sensor writes its logs here (mapped into containers/VMs)
    cpus: float | None = None     # CPU limit in cores
    memory_bytes: int | None = None
    cpu_affinity: Sequence[int] | None = None  # CPUs the sensor may run on (None = all)
    read_only_paths: tuple[Path, ...] = ()     # rule files etc. the sensor must see (same path inside)
    cache_dir: Path = field(default_factory=settings.cache_dir)
    runtime: str = "auto"         # container setups: "auto" | "podman" | "docker"
    name_prefix: str = "ib"       # starts every name the setup creates (containers, netns)
    swappiness: int | None = None  # memory.swappiness of the sensor's cgroup (containers)
    vcpus: int | None = None      # vm: guest vCPUs (None: the case's cpus rounded up)
    accel: str = "auto"           # vm: "auto" | "kvm" | "tcg"
    vfio_device: str | None = None  # vm-vfio: the PCI function to pass through (BDF) …
    sriov_pf: str | None = None     # … or the SR-IOV PF (interface) to make a VF of
    sriov_mac: str = "02:69:64:73:00:01"  # vm-vfio: the VF's MAC (what the wire addresses)
    sriov_vlan: int | None = None   # vm-vfio: the VF's port VLAN
    hugepages: bool = False         # vm-vfio: guest RAM from /dev/hugepages
    boot_timeout_s: float = 240.0   # vm, vm-vfio: how long the guest may take to boot
    # containers: Linux capabilities the sensor needs beyond the setup's own (its capture method declares them,
    # CaptureMethod.container_capabilities: AF_XDP's bpf(2) needs SYS_ADMIN); bare metal runs as root, VMs as root
    # in the guest
    capabilities: tuple[str, ...] = ()


class Launched(Protocol):
    """The sensor as launched: enough to wait for readiness and detect an early exit."""

    pid: int

    def poll(self) -> int | None: ...

    @property
    def returncode(self) -> int | None: ...


class Setup(Protocol):
    kind: str
    labels: tuple[str, ...]  # added to every result row, e.g. ("emulated",)
    # Drop points on the way to the sensor that the host cannot count (the loss waterfall lists
    # them; their losses land in `unaccounted`), e.g. ("macvtap",) or ("macvtap", "guest").
    invisible: tuple[str, ...]

    def pre_wire(self) -> str | None: ...

    def prepare(self, wire: WireEnds) -> CgroupStats: ...

    def capture_interface(self) -> str: ...

    def launch(self, argv: Sequence[str], *, stdout: Path) -> Launched: ...

    def stop(self, timeout_s: float) -> int | None: ...

    def oom_killed(self) -> bool: ...

    def overhead_sources(self) -> list[Source]:
        """Extra monitor sources for the isolation layer's own cost (runtime, qemu, vhost)."""
        ...


@runtime_checkable
class IsolationProcesses(Protocol):
    """A setup whose isolation runs host processes outside the sensor's cgroup (a container runtime's
    conmon, containerd-shim, the attached client): a duet side's cost includes their CPU
    (run/duet/hostcost.py). A VM's qemu is inside the sensor's cgroup and needs none."""

    def isolation_pids(self) -> list[int]:
        """Their PIDs, known once launched ([] before)."""
        ...


@runtime_checkable
class HostSide(Protocol):
    """A setup that runs host-side processes for the sensor (qemu, a container runtime): the
    `[profile]` host-side profile attaches to them (profile/hostside.py)."""

    def host_side(self) -> HostSideTarget | None:
        """Known once launched; None when there is nothing to profile."""
        ...
