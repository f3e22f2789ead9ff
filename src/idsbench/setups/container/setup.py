"""The sensor in a container (podman or docker), and fed through a macvtap (`container-vtap`).

`container`: the container shares the wire's sensor network namespace and sniffs the veth end.
  podman joins it directly (`--network ns:/var/run/netns/NS`); docker cannot, so `pre_wire()`
  starts a pause container (`--network none`), attaches its namespace under a name and hands that
  to the wire, and the sensor joins the pause (`--network container:PAUSE`).
`container-vtap`: the wire's sensor namespace plays the host NIC; a macvtap (mode passthru) on
  the veth end is moved into the container's own namespace and the sensor sniffs it, so the
  mirroring cost is part of the measurement. (Measured: AF_PACKET on the macvtap sees every
  replayed frame once the macvtap is UP; while it is down, recv fails with ENETDOWN.)

Limits are the runtime's (`--cpus`, `--cpuset-cpus`, `--memory` = `--memory-swap`,
`--memory-swappiness`); accounting reads the container's own cgroup (`container_monitor`).
The sample dir is bind-mounted read-write and the rule files read-only, at the same paths.
Everything created (dockerd, pause, netns names, macvtap, containers) is in the teardown stack.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from pathlib import Path

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.monitor.base import Source
from idsbench.proc import Child
from idsbench.procinfo import children_of, parent_of
from idsbench.profile.hostside import HostSideTarget
from idsbench.setups.base import SetupRequest
from idsbench.setups.container import runtime as crt
from idsbench.setups.container.dockerd import start_dockerd
from idsbench.setups.container.image import Image, ensure_image
from idsbench.setups.container.monitor import ContainerStats, KmsgOomWatch, ProcessSource
from idsbench.store.layout import DOCKERD_LOG_FILE
from idsbench.store.writers import write_container_record
from idsbench.wire import macvtap
from idsbench.wire.netns import NetnsResource, WireEnds, add_netns, quiet_netns

START_TIMEOUT_S = 60.0
VTAP_IF = "ibvtap0"


class Container:
    kind = "container"
    labels: tuple[str, ...] = ()
    invisible: tuple[str, ...] = ()

    def __init__(self, request: SetupRequest):
        self.req = request
        prefix = request.name_prefix
        self.base = request.name if request.name.startswith(prefix) else f"{prefix}-{request.name}"
        self.rt: crt.Runtime | None = None
        self.image: Image | None = None
        self.wire: WireEnds | None = None
        self.netns: str | None = None        # the namespace the sensor container joins (by name)
        self.network: str | None = None      # its --network value
        self.pause_id: str | None = None
        self.container_id: str | None = None
        self.client: Child | None = None
        self.final: crt.ContainerState | None = None
        self.oom_watch = KmsgOomWatch()
        self.stats = ContainerStats(kernel_oom=self.oom_watch.state)
        self._overhead_pids: list[int] = []

    # --- the setup contract -----------------------------------------------------------------

    def pre_wire(self) -> str | None:
        self._runtime_and_image()
        assert self.rt is not None
        if self.rt.name == "docker":
            return self._pause_namespace()  # the wire puts the sensor end into it
        return None

    def prepare(self, wire: WireEnds) -> ContainerStats:
        assert self.rt is not None, "pre_wire() first"
        self.wire = wire
        if self.rt.name == "podman":
            self.netns = wire.sensor_ns
            self.network = f"ns:/var/run/netns/{wire.sensor_ns}"
        else:
            self.network = f"container:{self.pause_id}"
        return self.stats

    def capture_interface(self) -> str:
        assert self.wire is not None, "prepare() first"
        return self.wire.sensor_if

    def launch(self, argv: Sequence[str], *, stdout: Path) -> Child:
        assert self.rt is not None and self.image is not None and self.network is not None
        sup, rt = self.req.sup, self.rt
        limits = crt.Limits(self.req.cpus, tuple(self.req.cpu_affinity) if self.req.cpu_affinity else None,
                            self.req.memory_bytes, self.req.swappiness)
        create = crt.create_argv(
            rt, name=self.base, image=self.image.ref, network=self.network, limits=limits,
            rw_paths=[self.req.sample_dir], ro_paths=list(self.req.read_only_paths),
            workdir=self.req.sample_dir, command=list(argv), labels={"org.idsbench.run": self.base},
            capabilities=self.req.capabilities)
        self.oom_watch.open()  # before the start: an OOM kill while loading rules counts too
        self.container_id = self._create(create)
        self.oom_watch.container_id = self.container_id
        # conmon (podman) writes its `oom` marker into its working directory: the sample dir.
        self.client = sup.start(rt.argv("start", "--attach", self.container_id), name="sensor", stdout=stdout,
                                cwd=self.req.sample_dir)
        state = self._wait_started(self.container_id, self.client)
        if state is not None and state.pid > 0:
            try:
                self.stats.attach(state.pid)
            except (OSError, ValueError):
                pass  # it already exited; the sample sees the exit and reports it
            self._overhead_pids = self._runtime_pids(state)
        return self.client

    def stop(self, timeout_s: float) -> int | None:
        """`stop -t` (SIGTERM to the sensor, SIGKILL after the timeout); returns its exit status."""
        if self.container_id is None or self.rt is None:
            return None
        sup = self.req.sup
        state = crt.inspect_state(self.rt, self.container_id)
        if state is not None and state.running:
            self.stats.refresh()
            grace = max(1, math.ceil(timeout_s))
            proc.run(self.rt.argv("stop", "-t", str(grace), self.container_id), check=False,
                     timeout=grace + 60, cwd=self.req.sample_dir)
        if self.client is not None:
            sup.stop(self.client, timeout=15.0)
        self.stats.detach()
        self.final = crt.inspect_state(self.rt, self.container_id)
        self.oom_watch.close()
        exit_code = self.final.exit_code if self.final is not None else None
        if exit_code is None and self.client is not None:
            exit_code = self.client.returncode
        self._write_record(exit_code)
        return exit_code

    def _write_record(self, exit_code: int | None) -> None:
        """container.json: what ran where, for whoever reads the sample later."""
        assert self.rt is not None and self.image is not None
        doc = {"kind": self.kind, "runtime": self.rt.name, "cli": list(self.rt.cli),
               "image": self.image.ref, "image_suricata": self.image.suricata_version,
               "id": self.container_id, "pause_id": self.pause_id, "network": self.network,
               "netns": self.netns, "capture_interface": self.capture_interface(),
               "capabilities": list(dict.fromkeys([*crt.CAPABILITIES, *self.req.capabilities])),
               "cgroup_dirs": {k: str(v) for k, v in self.stats.dirs.items()},
               "overhead_pids": self._overhead_pids, "exit_code": exit_code,
               "oom": {"cgroup_oom_kills": self.stats.oom_kills(), "kmsg_oom_kills": self.oom_watch.kills,
                       "kmsg_memcg_at_kill": dataclasses.asdict(self.oom_watch.report) if self.oom_watch.report else None,
                       "runtime_oom_killed": bool(self.final and self.final.oom_killed)}}
        write_container_record(self.req.sample_dir, doc)

    def oom_killed(self) -> bool:
        if self.stats.oom_kills() > 0 or self.oom_watch.poll() > 0:
            return True
        if self.final is not None:
            return self.final.oom_killed
        if self.container_id is not None and self.rt is not None:
            state = crt.inspect_state(self.rt, self.container_id)
            return bool(state and not state.running and state.oom_killed)
        return False

    def overhead_sources(self) -> list[Source]:
        return [ProcessSource(lambda: self._overhead_pids, prefix="isolation")]

    def isolation_pids(self) -> list[int]:
        """The runtime's processes serving the container (outside its cgroup; a duet side's cost adds them)."""
        return list(self._overhead_pids)

    def host_side(self) -> HostSideTarget | None:
        """The runtime's processes serving the container (as isolation_cpu_pct measures them)."""
        if not self._overhead_pids:
            return None
        return HostSideTarget("runtime", tuple(self._overhead_pids), monitor_column="isolation_cpu_pct")

    # --- pieces -----------------------------------------------------------------------------

    def _runtime_and_image(self) -> None:
        choice = crt.validate_runtime(self.req.runtime)
        if choice == "podman" or (choice == "auto" and crt.podman_usable()[0]):
            crt.require_runtime_program("podman")
            self.rt = crt.podman_runtime()
        else:
            log = self.req.sample_dir / DOCKERD_LOG_FILE
            self.rt = start_dockerd(self.req.sup, self.req.cache_dir, log_path=log)
        self.image = ensure_image(self.rt, self.req.cache_dir, host_suricata_version(),
                                  self.req.engine.image_packages())

    def _create(self, argv: list[str]) -> str:
        assert self.rt is not None
        ident = crt.create(argv, cwd=self.req.sample_dir)
        self.req.sup.teardown.push(crt.ContainerResource(self.rt.cli, ident, argv[argv.index("--name") + 1]))
        return ident

    def _pause_namespace(self) -> str:
        """A paused (sleeping) container with no network; its namespace attached as a name."""
        assert self.rt is not None and self.image is not None
        sup, rt = self.req.sup, self.rt
        argv = crt.create_argv(rt, name=f"{self.base}-pause", image=self.image.ref, network="none",
                               limits=crt.Limits(), rw_paths=[], ro_paths=[], workdir=None,
                               command=["sleep", "infinity"], labels={"org.idsbench.run": self.base})
        self.pause_id = self._create(argv)
        done = proc.run(rt.argv("start", self.pause_id), check=False, timeout=120, cwd=self.req.sample_dir)
        state = crt.inspect_state(rt, self.pause_id)
        if done.returncode != 0 or state is None or state.pid <= 0:
            raise EnvironmentMissing(
                f"The pause container {self.base}-pause did not start: "
                f"{(done.stderr or done.stdout).strip()[-400:]}",
                fix="run `idsbench doctor`; check that docker can run the idsbench image.")
        name = f"{self.base}-net"
        proc.run(["ip", "netns", "attach", name, str(state.pid)])
        sup.teardown.push(NetnsResource(name))
        self.netns = name
        return name

    def _wait_started(self, ident: str, client: Child) -> crt.ContainerState | None:
        assert self.rt is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        state = None
        while time.monotonic() < deadline:
            state = crt.inspect_state(self.rt, ident)
            if state is not None and (state.pid > 0 or state.exit_code is not None):
                return state
            if client.poll() is not None:
                return state
            time.sleep(0.05)
        return state

    def _runtime_pids(self, state: crt.ContainerState) -> list[int]:
        """The runtime's host-side processes serving this container (known PIDs, no scans)."""
        assert self.rt is not None and self.client is not None
        pids = [self.client.pid]
        if state.conmon_pid:
            pids.append(state.conmon_pid)  # podman
        if self.rt.name == "docker":
            shim = parent_of(state.pid)
            if shim:
                pids.append(shim)  # containerd-shim
            if self.rt.dockerd_pid:
                pids += [self.rt.dockerd_pid, *children_of(self.rt.dockerd_pid)]
        return list(dict.fromkeys(pids))


class ContainerVtap(Container):
    """The container gets its own namespace holding only a macvtap (passthru) on the wire's end."""

    kind = "container-vtap"
    invisible: tuple[str, ...] = ("macvtap",)

    def pre_wire(self) -> str | None:
        self._runtime_and_image()
        return None  # the wire's sensor namespace is the "host" side

    def prepare(self, wire: WireEnds) -> ContainerStats:
        assert self.rt is not None, "pre_wire() first"
        self.wire = wire
        sup = self.req.sup
        if self.rt.name == "docker":
            quiet_netns(self._pause_namespace())
            self.network = f"container:{self.pause_id}"
        else:
            # Nothing but the mirrored frames: no IPv6 chatter from the container's side.
            self.netns = f"{self.base}-net"
            add_netns(sup.teardown, self.netns)
            self.network = f"ns:/var/run/netns/{self.netns}"
        assert self.netns is not None
        tap = macvtap.create(sup.teardown, lower=wire.sensor_if, netns=wire.sensor_ns, name=VTAP_IF,
                             mtu=wire.mtu)
        macvtap.bring_up(macvtap.move(sup.teardown, tap, self.netns))
        return self.stats

    def capture_interface(self) -> str:
        return VTAP_IF


def host_suricata_version() -> str:
    """The host Suricata every image is built from (images hold the host's package whatever the
    engine), asked through its adapter from the registry."""
    from idsbench.sensors import registry

    return registry.engine("suricata").version()
