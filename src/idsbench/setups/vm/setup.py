"""VM: the sensor runs in a QEMU guest fed by a macvtap (passthru) on the wire's sensor interface.

prepare(): guest image (cached; its Suricata must equal the host's), accelerator (KVM if it boots
the guest, else TCG, labelled `emulated`), a cgroup for qemu (the case's CPU limit; guest RAM =
the case's memory, the cgroup allows qemu's own overhead on top), the macvtap and its /dev node,
then qemu is booted (9p shares: the control dir, the sample dir read-write and the rule dirs
read-only, each at its host path) until the guest init reports `booted`.
launch(): the argv goes to the guest through the control dir, `run` over the virtio-serial port.
stop(): `stop` (SIGTERM to Suricata in the guest, counters flushed to eve.json over 9p); the guest
powers itself off when the sensor has exited; qemu is killed only if it does not.
Artifacts in the sample dir: vm.json, qemu.txt, console.log (kernel log), guest.csv.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from idsbench import settings
from idsbench.errors import EnvironmentMissing, SensorFailed
from idsbench.infra import cgroups
from idsbench.infra.cgroups import CgroupResource
from idsbench.monitor.base import Source
from idsbench.monitor.netdev import NetDevSource
from idsbench.proc import Child
from idsbench.profile.hostside import HostSideTarget
from idsbench.setups.base import SetupRequest
from idsbench.setups.vm import guest
from idsbench.setups.vm.image import GuestImage, ensure_image, load_image
from idsbench.setups.vm.monitor import GuestCsvSource, QemuSource, find_vhost_threads
from idsbench.setups.vm.qemu import (
    CTL_TAG,
    HOST_OVERHEAD_BYTES,
    AccelChoice,
    QemuConfig,
    Share,
    choose_accel,
    qemu_argv,
)
from idsbench.store.layout import CONSOLE_LOG_FILE, GUEST_CSV_FILE, QEMU_LOG_FILE
from idsbench.store.writers import write_vm_record
from idsbench.teardown import resource_kind
from idsbench.wire import macvtap
from idsbench.wire.netns import WireEnds

VTAP_IF = "ibvt0"
TAP_FD = 3
DEFAULT_MEMORY = 1024**3
RUNDIR_PREFIX = "idsbench-vm-"


@dataclass(frozen=True)
class CaptureNic:
    """How the capture NIC reaches the guest: a macvtap's fd behind virtio-net, or a PCI function
    through vfio-pci (setups/vfio)."""

    tap_fd: int | None = None
    mac: str | None = None
    open_fds: tuple[tuple[int, Path], ...] = ()  # descriptors qemu inherits (fd number, path)
    vfio_host: str | None = None                 # a PCI function bound to vfio-pci
    machine: str = "pc"
    mem_path: Path | None = None                 # guest RAM from this hugetlbfs


@dataclass(frozen=True)
class VmOptions:
    vcpus: int | None = None      # default: the case's cpus rounded up (all sensor CPUs if unlimited)
    accel: str = "auto"           # auto | kvm | tcg
    boot_timeout_s: float = 240.0
    rootfs: Path | None = None    # a prepared Debian rootfs (default: infra.rootfs.ensure_rootfs)


def pinned_image() -> GuestImage | None:
    """The image IDSBENCH_VM_IMAGE names (the nested lab's outer VM lends its own), else None."""
    path = settings.vm_image()
    if path is None:
        return None
    image = load_image(path)
    if image is None:
        raise EnvironmentMissing(f"IDSBENCH_VM_IMAGE={path} is not a complete VM guest image.",
                                 fix="unset it to build one, or name a directory with image.json, vmlinuz, "
                                     "initrd.img and root.img.")
    return image


def vcpus_for(options: VmOptions, request: SetupRequest) -> int:
    if options.vcpus is not None:
        return options.vcpus
    if request.cpus is not None:
        return max(1, math.ceil(request.cpus - 1e-9))
    return max(1, len(request.cpu_affinity) if request.cpu_affinity else 1)


class VmSensor:
    """The sensor as seen from the host: running until the guest reports its exit (or qemu dies)."""

    def __init__(self, vm: Vm, qemu: Child):
        self._vm = vm
        self._qemu = qemu
        self._rc: int | None = None

    @property
    def pid(self) -> int:
        return self._qemu.pid

    def poll(self) -> int | None:
        if self._rc is None:
            st = self._vm.status()
            if st.exit_code is not None:
                self._rc = st.exit_code
            elif self._qemu.poll() is not None:
                self._rc = self._qemu.returncode or 255  # the VM died with the sensor in it
        return self._rc

    @property
    def returncode(self) -> int | None:
        return self.poll()


class Vm:
    kind = "vm"
    invisible: tuple[str, ...] = ("macvtap", "guest virtio path")

    def __init__(self, request: SetupRequest, options: VmOptions | None = None):
        self.req = request
        self.opts = options or VmOptions(vcpus=request.vcpus, accel=request.accel,
                                         boot_timeout_s=request.boot_timeout_s)
        self.labels: tuple[str, ...] = ()
        self.rundir: Path | None = None
        self.cgroup: cgroups.Cgroup | None = None
        self.qemu: Child | None = None
        self.port: guest.ControlPort | None = None
        self.watch: guest.GuestWatch | None = None  # from the boot on
        self.sensor: VmSensor | None = None
        self.wire: WireEnds | None = None
        self.image: GuestImage | None = None
        self.accel: AccelChoice | None = None
        self.vhost_pids: list[int] = []
        self.nic: CaptureNic | None = None
        self.info: dict[str, object] = {}

    # --- paths -----------------------------------------------------------------------------
    @property
    def console_log(self) -> Path:
        return self.req.sample_dir / CONSOLE_LOG_FILE

    def status(self) -> guest.GuestStatus:
        assert self.rundir is not None
        return guest.read_status(self.rundir)

    # --- the contract ----------------------------------------------------------------------
    def pre_wire(self) -> str | None:
        return None

    def prepare(self, wire: WireEnds) -> cgroups.Cgroup:
        self.wire = wire
        sup = self.req.sup
        self.rundir = Path(tempfile.mkdtemp(prefix=f"{RUNDIR_PREFIX}{self.req.name}-"))
        sup.teardown.push(VmRundirResource(str(self.rundir)))
        self.image = pinned_image() or ensure_image(self.req.cache_dir, self.opts.rootfs,
                                                    self.req.engine.image_packages())
        self._check_suricata(self.image)
        self.accel = choose_accel(sup, self.opts.accel, self.image, self.req.cache_dir, self.rundir)
        self.labels = ("emulated",) if self.accel.accel == "tcg" else ()
        memory = self.req.memory_bytes or DEFAULT_MEMORY
        limit = memory + HOST_OVERHEAD_BYTES[self.accel.accel] if self.req.memory_bytes else None
        self.cgroup = cgroups.create(self.req.name, cpus=self.req.cpus, memory_bytes=limit)
        sup.teardown.push(CgroupResource.of(self.cgroup))
        nic = self._capture_nic(wire)
        shares = guest.plan_shares(self.req.sample_dir, self.req.read_only_paths)
        (self.rundir / "guest.conf").write_text(
            guest.guest_conf(self.req.sample_dir, shares, wire.mtu, interval_s=1))
        cfg = QemuConfig(
            name=self.req.name, accel=self.accel.accel, vcpus=vcpus_for(self.opts, self.req),
            memory_mib=memory // 1024**2, image=self.image, console_log=self.console_log,
            ctl_socket=self.rundir / "ctl.sock",
            shares=(Share(CTL_TAG, self.rundir, readonly=False), *shares),
            tap_fd=nic.tap_fd, mac=nic.mac, mtu=wire.mtu,
            vhost=self.accel.accel == "kvm" and os.path.exists("/dev/vhost-net"),
            vfio_host=nic.vfio_host, machine=nic.machine, mem_path=nic.mem_path,
        )
        argv = qemu_argv(cfg)
        self.nic = nic
        self.info = {"accel": self.accel.accel, "accel_reason": self.accel.reason,
                     "vcpus": cfg.vcpus, "memory_bytes": memory, "cgroup_memory_limit": limit,
                     "image": self.image.to_json(), "shares": [str(s.path) for s in shares],
                     "qemu_argv": argv}
        self._boot(argv)
        return self.cgroup

    def capture_interface(self) -> str:
        return guest.GUEST_IF

    def launch(self, argv: Sequence[str], *, stdout: Path) -> VmSensor:
        assert self.qemu is not None and self.port is not None and self.rundir is not None, "prepare() first"
        assert self.watch is not None
        (self.rundir / "sensor.argv").write_bytes(guest.sensor_argv_file(stdout, argv))
        self.port.send("run")
        self.sensor = VmSensor(self, self.qemu)
        self.watch.require(lambda st: st.sensor_pid is not None or st.exit_code is not None,
                           max(60.0, self.opts.boot_timeout_s / 4), "start the sensor")
        return self.sensor

    def stop(self, timeout_s: float) -> int | None:
        """SIGTERM to the sensor in the guest, wait for its exit, let the guest power off."""
        if self.qemu is None:
            return None
        rc = None
        if self.qemu.poll() is None and self.port is not None:
            try:
                self.port.send("stop" if self.sensor is not None else "poweroff")
                deadline = time.monotonic() + timeout_s
                while time.monotonic() < deadline and self.qemu.poll() is None:
                    if self.status().exit_code is not None:
                        break
                    time.sleep(0.1)
            except SensorFailed:
                pass
        try:
            self.qemu.wait(20.0)  # the guest powers itself off once the sensor has exited
        except subprocess.TimeoutExpired:
            pass
        self.req.sup.stop(self.qemu, timeout=5.0)
        if self.port is not None:
            self.port.close()
        if self.sensor is not None:
            rc = self.status().exit_code
            if rc is None:
                rc = self.sensor.poll()
        self._write_info()
        return rc

    def oom_killed(self) -> bool:
        if self.rundir is not None and self.status().oom_kills > 0:
            return True
        if self.cgroup is not None and self.cgroup.oom_kills() > 0:
            return True
        try:
            return guest.console_oom(self.console_log.read_text(errors="replace"))
        except OSError:
            return False

    def overhead_sources(self) -> list[Source]:
        assert self.qemu is not None and self.wire is not None, "prepare() first"
        return [QemuSource(self.qemu.pid, self.vhost_pids),
                NetDevSource("vtap", self.wire.sensor_holder_pid, VTAP_IF),
                GuestCsvSource(self.req.sample_dir / GUEST_CSV_FILE)]

    def host_side(self) -> HostSideTarget | None:
        """qemu (its vCPU, main-loop, worker and — Linux ≥ 6.4 — vhost tasks) and the vhost kernel
        threads of older kernels: the sensor's cgroup, as monitor.csv's sensor_cpu_pct measures it."""
        if self.qemu is None or self.accel is None:
            return None
        return HostSideTarget("qemu", (self.qemu.pid, *self.vhost_pids), accel=self.accel.accel,
                              monitor_column="sensor_cpu_pct", sensor_cgroup=True)

    # --- pieces ----------------------------------------------------------------------------
    def _check_suricata(self, image: GuestImage) -> None:
        from idsbench.sensors import registry

        # the guest image holds the host's Suricata package whatever the engine: asked through its adapter
        host = registry.engine("suricata").version()
        if image.suricata_version != host:
            raise EnvironmentMissing(
                f"the VM guest image {image.dir} has Suricata {image.suricata_version}, the host "
                f"{host}: VM and bare-metal results would not be comparable.",
                fix="install the same Suricata version on the host (Debian backports), or remove "
                    "the cached rootfs and image under the cache dir so they are rebuilt.",
            )

    def _capture_nic(self, wire: WireEnds) -> CaptureNic:
        """How the capture NIC reaches the guest (setups/vfio overrides it): a macvtap on the wire."""
        tap, mac = self._macvtap(wire)
        return CaptureNic(tap_fd=TAP_FD, mac=mac, open_fds=((TAP_FD, tap),))

    def _macvtap(self, wire: WireEnds) -> tuple[Path, str]:
        """A passthru macvtap on the sensor interface; returns (its /dev node, its MAC)."""
        assert self.rundir is not None
        tap = macvtap.create(self.req.sup.teardown, lower=wire.sensor_if, netns=wire.sensor_ns, name=VTAP_IF,
                             mtu=wire.mtu)
        macvtap.bring_up(tap)
        node = self.rundir / "tap"
        return node, macvtap.char_device(tap, node)

    def _boot(self, argv: list[str]) -> None:
        assert self.rundir is not None and self.cgroup is not None
        sup = self.req.sup
        t0 = time.monotonic()
        assert self.nic is not None
        self.qemu = sup.start(argv, name="qemu", stdout=self.req.sample_dir / QEMU_LOG_FILE,
                              cpus=self.req.cpu_affinity, cgroup_procs=self.cgroup.procs_files,
                              open_fds=dict(self.nic.open_fds))
        self.port = guest.ControlPort(self.rundir / "ctl.sock")
        self.watch = guest.GuestWatch(
            self.rundir, self.qemu, console=self.console_log, qemu_log=self.req.sample_dir / QEMU_LOG_FILE,
            error=SensorFailed,
            fix="see qemu.txt and console.log in the sample directory; `idsbench doctor` checks qemu/KVM.")
        self.watch.boot(self.port, self.opts.boot_timeout_s)
        self.info["boot_s"] = round(time.monotonic() - t0, 2)
        self.vhost_pids = find_vhost_threads(self.qemu.pid)
        self._write_info()

    def _write_info(self) -> None:
        doc = dict(self.info)
        if self.rundir is not None and self.rundir.exists():
            st = self.status()
            doc["guest"] = {"ncpu": st.ncpu, "sensor_pid": st.sensor_pid, "exit_code": st.exit_code,
                            "oom_kills": st.oom_kills, "failure": st.failure}
        doc["vhost_pids"] = self.vhost_pids
        write_vm_record(self.req.sample_dir, doc)


@resource_kind
@dataclass(frozen=True)
class VmRundirResource:
    """A VM's control directory (socket, tap node, guest.conf, status)."""

    kind: ClassVar[str] = "vm-rundir"
    path: str

    def undo(self) -> None:
        path = Path(self.path)
        if not path.name.startswith(RUNDIR_PREFIX):
            raise EnvironmentMissing(f"{path} is not an idsbench VM run dir; not removing it.",
                                     fix="remove it by hand if it is yours.")
        shutil.rmtree(path, ignore_errors=True)

    def describe(self) -> str:
        return f"vm-rundir {self.path}"
