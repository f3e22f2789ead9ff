"""Run one command inside a VM guest (cgroup v2 only by default), with idsbench's own code shared.

    with TeardownStack(state_dir) as td:
        result = run_in_guest(Supervisor(td), GuestCommand(argv=(sys.executable, "-m", "pytest", ...)),
                              out_dir, cache_dir=settings.cache_dir())

The guest is the vm setup's image (setups/vm/image.py, plus `extra_packages`) booted without a
capture NIC; with `cgroup_v2` the kernel gets `cgroup_no_v1=all` and the guest init mounts cgroup2
at /sys/fs/cgroup with cpu, cpuset, memory, io and pids enabled in the root's subtree. Shared over
9p at their host paths: `out_dir` read-write, and read-only the idsbench package, its virtualenv,
the Python installation that virtualenv links to (unless it is the system's /usr: the guest is the
same Debian release) and `read_only` paths. The command is what the guest init calls the sensor:
its stdout and stderr land in `out_dir/output.txt`, its exit status comes back through the control
dir's status file, and the guest powers itself off when it exits. Everything (qemu, the run dir)
is in the supervisor's teardown stack.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import idsbench
from idsbench.errors import EnvironmentMissing
from idsbench.proc import Supervisor
from idsbench.setups.vm import guest
from idsbench.setups.vm.image import ensure_image
from idsbench.setups.vm.qemu import CTL_TAG, QemuConfig, Share, choose_accel, qemu_argv
from idsbench.setups.vm.setup import RUNDIR_PREFIX, VmRundirResource
from idsbench.store.layout import CONSOLE_LOG_FILE, GUEST_OUTPUT_FILE, QEMU_LOG_FILE
from idsbench.store.writers import write_guestrun_record

CGROUP_V2_CMDLINE = ("cgroup_no_v1=all",)
OUTPUT = GUEST_OUTPUT_FILE
SYSTEM_PREFIXES = (Path("/"), Path("/usr"))
STOP_GRACE_S = 20.0


@dataclass(frozen=True)
class GuestCommand:
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()   # added to the guest init's environment
    cwd: Path | None = None

    def guest_argv(self) -> list[str]:
        """The argv the guest init runs: `env [-C CWD] K=V... ARGV` (coreutils env)."""
        if not self.argv:
            raise ValueError("GuestCommand needs an argv")
        bad = [k for k, _ in self.env if not k or "=" in k]
        if bad:
            raise ValueError(f"invalid environment variable names {bad}")
        chdir = ["-C", str(self.cwd)] if self.cwd is not None else []
        return ["env", *chdir, *(f"{k}={v}" for k, v in self.env), *self.argv]


@dataclass(frozen=True)
class GuestRunOptions:
    name: str = "ib-guestrun"            # qemu's name and the run dir's prefix
    vcpus: int = 2
    memory_mib: int = 1536
    accel: str = "auto"                  # auto | kvm | tcg
    cgroup_v2: bool = True
    # Multi-threaded TCG oopsed a 2-vCPU guest (int3 in __alloc_pages while cgroups came and went:
    # static keys patch kernel text); one host thread for all vCPUs did not.
    tcg_threads: Literal["multi", "single"] = "single"
    extra_packages: tuple[str, ...] = ("tcpreplay",)
    read_only: tuple[Path, ...] = ()     # more host paths the command needs (same path inside)
    boot_timeout_s: float = 300.0
    timeout_s: float = 900.0             # for the command, from `run` to its exit
    machine: str = "pc"
    machine_args: tuple[str, ...] = ()   # qemu arguments before any PCI device (lab/vfio: a virtual IOMMU)
    qemu_args: tuple[str, ...] = ()      # more qemu arguments (lab/vfio: an SR-IOV NIC and the sender's)
    kernel_args: tuple[str, ...] = ()    # more kernel parameters (lab/vfio: intel_iommu=on iommu=pt)


@dataclass(frozen=True)
class GuestRunResult:
    exit_code: int | None                # None: it did not finish (timeout, or the guest died)
    timed_out: bool
    output: str                          # the command's stdout + stderr
    out_dir: Path
    accel: str
    kernel_release: str
    cgroup2_controllers: tuple[str, ...]  # enabled in the guest root's subtree (empty: no cgroup2)
    boot_s: float                         # qemu start until the init reported `booted`
    run_s: float                          # `run` until the command's exit (or the timeout)
    failure: str | None = None            # the guest init's `failed ...`, or how qemu ended early
    console_tail: str = ""
    shares: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        doc = asdict(self)
        doc["out_dir"] = str(self.out_dir)
        doc.pop("output")
        return doc


def python_paths() -> tuple[Path, ...]:
    """Host paths that make this idsbench runnable at the same paths in the guest: the directory
    holding the package (src/ or site-packages), the virtualenv, and the Python it links to."""
    paths = [Path(idsbench.__file__).resolve().parent.parent, Path(sys.prefix).resolve()]
    base = Path(sys.base_prefix).resolve()
    if base not in SYSTEM_PREFIXES:
        paths.append(base)
    return tuple(dict.fromkeys(paths))


def parse_cgroup2(status_text: str) -> tuple[str, ...]:
    """The controllers of the init's `cgroup2 C1 C2 ...` status line (empty without one)."""
    for line in status_text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "cgroup2":
            return tuple(rest.split())
    return ()


def guest_conf(out_dir: Path, shares: tuple[Share, ...]) -> str:
    """The vm setup's guest.conf, with the capture NIC unset (a later assignment wins in bash)."""
    return guest.guest_conf(out_dir, shares, mtu=1500, interval_s=1) + "CAPTURE_IF=  # no capture NIC\n"


def run_in_guest(sup: Supervisor, command: GuestCommand, out_dir: Path, *, cache_dir: Path,
                 options: GuestRunOptions | None = None) -> GuestRunResult:
    """Boot the guest, run `command` in it, power it off; the result also goes to out_dir/guestrun.json.

    Raises EnvironmentMissing when the guest cannot boot; a command that fails or times out is a
    result (exit_code / timed_out), not an exception."""
    opts = options or GuestRunOptions()
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    image = ensure_image(cache_dir, None, opts.extra_packages)
    rundir = Path(tempfile.mkdtemp(prefix=f"{RUNDIR_PREFIX}{opts.name}-"))
    sup.teardown.push(VmRundirResource(str(rundir)))
    accel = choose_accel(sup, opts.accel, image, cache_dir, rundir)
    shares = guest.plan_shares(out_dir, (*python_paths(), *opts.read_only))
    (rundir / "guest.conf").write_text(guest_conf(out_dir, shares))
    output = out_dir / OUTPUT
    (rundir / "sensor.argv").write_bytes(guest.sensor_argv_file(output, command.guest_argv()))
    console, qemu_log = out_dir / CONSOLE_LOG_FILE, out_dir / QEMU_LOG_FILE
    cfg = QemuConfig(name=opts.name, accel=accel.accel, vcpus=opts.vcpus, memory_mib=opts.memory_mib,
                     image=image, console_log=console, ctl_socket=rundir / "ctl.sock",
                     shares=(Share(CTL_TAG, rundir, readonly=False), *shares),
                     extra_cmdline=(*(CGROUP_V2_CMDLINE if opts.cgroup_v2 else ()), *opts.kernel_args),
                     tcg_threads=opts.tcg_threads, machine=opts.machine, machine_args=opts.machine_args,
                     extra_args=opts.qemu_args)
    t0 = time.monotonic()
    qemu = sup.start(qemu_argv(cfg), name=f"qemu-{opts.name}", stdout=qemu_log)
    vm = guest.GuestWatch(rundir, qemu, console=console, qemu_log=qemu_log, error=EnvironmentMissing,
                          fix=f"see {qemu_log} and {console}; `idsbench doctor` checks qemu.")
    port = guest.ControlPort(rundir / "ctl.sock")
    timed_out, run_s = False, 0.0
    try:
        vm.boot(port, opts.boot_timeout_s)
        boot_s = time.monotonic() - t0
        port.send("run")
        t1 = time.monotonic()
        try:
            finished = vm.wait(lambda st: st.exit_code is not None, opts.timeout_s, "run the command")
        except EnvironmentMissing:
            finished = False  # qemu died under the command: reported as failure below
        if not finished and qemu.poll() is None:
            timed_out = True
            port.send("stop")  # SIGTERM to the command; the guest powers off once it has exited
            vm.wait(lambda st: st.exit_code is not None, STOP_GRACE_S, "stop the command")
        run_s = time.monotonic() - t1
        try:
            qemu.wait(30.0)  # the init powers the guest off after the command's exit
        except subprocess.TimeoutExpired:
            pass
    finally:
        port.close()
        sup.stop(qemu, timeout=5.0)
    status_text = guest.read_status_text(rundir)
    st = guest.parse_status(status_text)
    failure = st.failure
    if failure is None and st.exit_code is None and not timed_out:
        failure = f"qemu exited (status {qemu.returncode}) while the command ran"
    result = GuestRunResult(
        exit_code=st.exit_code, timed_out=timed_out,
        output=output.read_text(errors="replace") if output.exists() else "",
        out_dir=out_dir, accel=accel.accel, kernel_release=image.kernel_release,
        cgroup2_controllers=parse_cgroup2(status_text), boot_s=round(boot_s, 2), run_s=round(run_s, 2),
        failure=failure, console_tail=vm.tail(console), shares=tuple(str(s.path) for s in shares))
    write_guestrun_record(out_dir, result.to_json())
    return result
