"""QEMU command lines for the sensor VM, and the choice of accelerator (KVM, else TCG).

Pure functions (argv building, kernel command line) are unit-tested; `probe_kvm` boots the guest
image once with `idsbench.probe=1` under KVM and caches the verdict per image, qemu and host kernel.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from idsbench import proc, settings
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.proc import Supervisor
from idsbench.setups.vm.image import GUEST_INIT, GuestImage, cached_images
from idsbench.teardown import TeardownStack

Accel = Literal["kvm", "tcg"]
QEMU = "qemu-system-x86_64"
CTL_PORT = "idsbench.ctl"
CTL_TAG = "ibctl"
PROBE_MARKER = "IDSBENCH-PROBE-OK"
PROBE_TIMEOUT_S = 30.0
TCG_TB_MIB = 128  # TCG's translation cache (default 1 GiB would count against the memory limit)
# qemu's own memory beyond guest RAM (device emulation, 9p, TCG cache), added to the cgroup limit.
HOST_OVERHEAD_BYTES = {"kvm": 192 * 1024**2, "tcg": (192 + TCG_TB_MIB) * 1024**2}


@dataclass(frozen=True)
class Share:
    """A host directory mounted at the same path in the guest over virtio-9p."""

    tag: str
    path: Path
    readonly: bool


@dataclass(frozen=True)
class QemuConfig:
    name: str
    accel: Accel
    vcpus: int
    memory_mib: int
    image: GuestImage
    console_log: Path
    ctl_socket: Path | None = None        # virtio-serial control port (None: probe boot)
    shares: tuple[Share, ...] = ()
    tap_fd: int | None = None             # capture NIC: an open macvtap fd inherited by qemu
    mac: str | None = None
    mtu: int = 1500
    vhost: bool = False
    probe: bool = False
    extra_cmdline: tuple[str, ...] = field(default=())
    # TCG: one host thread per vCPU ("multi"), or all vCPUs on one ("single"; slower, but a guest
    # kernel patching its own text while another vCPU runs it cannot hit a stale int3 there).
    tcg_threads: Literal["multi", "single"] = "multi"
    vfio_host: str | None = None          # capture NIC: a PCI function bound to vfio-pci (setups/vfio)
    machine: str = "pc"                   # q35 for a passed-through PCIe function
    mem_path: Path | None = None          # guest RAM from a hugetlbfs mount, preallocated
    machine_args: tuple[str, ...] = ()    # right after -machine, before any PCI device (a virtual IOMMU)
    extra_args: tuple[str, ...] = ()      # more qemu arguments (lab/vfio: the outer VM's NICs)


def kernel_cmdline(cfg: QemuConfig) -> str:
    args = [
        "root=/dev/vda", "rw", "console=ttyS0", f"init={GUEST_INIT}", "panic=-1", "quiet",
        "net.ifnames=0",      # the capture NIC is eth0
        "mitigations=off", "tsc=reliable", "no_timer_check",
    ]
    if cfg.tap_fd is not None or cfg.vfio_host is not None:
        # No router solicitations or DAD on the capture NIC. A guest without one keeps IPv6: the
        # runner inside it (setups/vm/guestrun.py) quiets its own namespaces through net.ipv6.
        args.append("ipv6.disable=1")
    if cfg.probe:
        args.append("idsbench.probe=1")
    return " ".join(args + list(cfg.extra_cmdline))


def qemu_argv(cfg: QemuConfig) -> list[str]:
    if cfg.vcpus < 1 or cfg.memory_mib < 64:
        raise SpecError(f"VM {cfg.name}: {cfg.vcpus} vCPUs and {cfg.memory_mib} MiB are too small.",
                        fix="give the VM at least 1 vCPU and 64 MiB (cpus/memory in [setup]).")
    img = cfg.image
    for path in (img.kernel, img.initrd, img.disk, cfg.console_log, cfg.ctl_socket):
        if path is not None:
            _check_qemu_opt(str(path), "path")
    argv = [QEMU, "-name", f"{cfg.name},debug-threads=on", "-nodefaults", "-no-user-config", "-display", "none",
            "-no-reboot", "-machine", cfg.machine, *cfg.machine_args]
    if cfg.accel == "kvm":
        argv += ["-accel", "kvm", "-cpu", "host"]
    else:
        argv += ["-accel", f"tcg,thread={cfg.tcg_threads},tb-size={TCG_TB_MIB}", "-cpu", "max"]
    argv += ["-smp", str(cfg.vcpus), "-m", f"{cfg.memory_mib}M",
             *(["-mem-path", str(cfg.mem_path), "-mem-prealloc"] if cfg.mem_path is not None else []),
             "-kernel", str(img.kernel), "-initrd", str(img.initrd), "-append", kernel_cmdline(cfg),
             "-drive", f"file={img.disk},if=virtio,format=raw,snapshot=on,cache=unsafe",
             "-chardev", f"file,id=con,path={cfg.console_log}", "-serial", "chardev:con"]
    if cfg.ctl_socket is not None:
        argv += ["-device", "virtio-serial-pci,id=vser",
                 "-chardev", f"socket,id=ctl,path={cfg.ctl_socket},server=on,wait=off",
                 "-device", f"virtserialport,bus=vser.0,chardev=ctl,name={CTL_PORT}"]
    for i, share in enumerate(cfg.shares):
        _check_qemu_opt(str(share.path), "shared path")
        ro = ",readonly=on" if share.readonly else ""
        argv += ["-fsdev", f"local,id=fs{i},path={share.path},security_model=passthrough{ro}",
                 "-device", f"virtio-9p-pci,fsdev=fs{i},mount_tag={share.tag}"]
    if cfg.tap_fd is not None:
        argv += ["-netdev", f"tap,id=cap,fd={cfg.tap_fd},vhost={'on' if cfg.vhost else 'off'}",
                 "-device", f"virtio-net-pci,netdev=cap,mac={cfg.mac},host_mtu={cfg.mtu}"]
    if cfg.vfio_host is not None:
        _check_qemu_opt(cfg.vfio_host, "PCI function")
        argv += ["-device", f"vfio-pci,host={cfg.vfio_host}"]
    return argv + list(cfg.extra_args)


def _check_qemu_opt(value: str, what: str) -> None:
    # QEMU option values are comma-separated; a literal comma must be doubled. Keep it simple:
    # refuse them (and newlines) with a clear message instead.
    if "," in value or "\n" in value:
        raise SpecError(f"the {what} {value!r} contains a comma or newline, which QEMU cannot take.",
                        fix="use a campaign directory and rule paths without commas.")


# --- accelerator choice ------------------------------------------------------------------------

def kvm_usable_reason() -> str | None:
    """Why KVM is certainly unusable (None: worth probing)."""
    if not os.path.exists("/dev/kvm"):
        return "/dev/kvm does not exist (no hardware virtualization, or the kvm module is not loaded)"
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC))
    except OSError as exc:
        return f"/dev/kvm cannot be opened: {exc.strerror}"
    return None


def qemu_version() -> str:
    if shutil.which(QEMU) is None:
        raise EnvironmentMissing(f"`{QEMU}` is not installed (needed by the vm setup).",
                                 fix="apt-get install qemu-system-x86 qemu-utils  (or `make setup`).")
    done = proc.run([QEMU, "--version"], timeout=30, check=False)
    match = re.search(r"version (\S+)", done.stdout)
    return match.group(1) if match else "unknown"


@dataclass(frozen=True)
class AccelChoice:
    accel: Accel
    reason: str  # why (shown in warnings and by doctor)


def probe_cache_path(cache_dir: Path, image: GuestImage) -> Path:
    ident = f"{image.key}\0{qemu_version()}\0{os.uname().release}\0{os.uname().version}"
    return cache_dir / "vm" / f"kvm-probe-{hashlib.sha256(ident.encode()).hexdigest()[:16]}.json"


def cached_probe(cache_dir: Path, image: GuestImage) -> AccelChoice | None:
    try:
        doc = json.loads(probe_cache_path(cache_dir, image).read_text())
        return AccelChoice(doc["accel"], doc["reason"])
    except (OSError, ValueError, KeyError):
        return None


def choose_accel(sup: Supervisor, want: str, image: GuestImage, cache_dir: Path,
                 workdir: Path) -> AccelChoice:
    """`kvm`/`tcg` as asked (KVM checked), or `auto`: KVM if a probe boot works, else TCG."""
    if want == "tcg":
        return AccelChoice("tcg", "accel = \"tcg\" in the spec")
    reason = kvm_usable_reason()
    if reason is None:
        choice = cached_probe(cache_dir, image) or probe_kvm(sup, image, cache_dir, workdir)
        if choice.accel == "kvm":
            return choice
        reason = choice.reason
    if want == "kvm":
        raise EnvironmentMissing(f"KVM cannot run the VM here: {reason}.",
                                 fix='use accel = "auto" or "tcg" in [setup] (emulated, much slower).')
    return AccelChoice("tcg", f"KVM unusable ({reason}); emulating with TCG")


def probe_kvm(sup: Supervisor, image: GuestImage, cache_dir: Path, workdir: Path,
              timeout_s: float = PROBE_TIMEOUT_S) -> AccelChoice:
    """Boot the guest under KVM until its init prints the probe marker; cache the verdict."""
    console = workdir / "kvm-probe-console.log"
    console.unlink(missing_ok=True)
    cfg = QemuConfig(name="idsbench-kvm-probe", accel="kvm", vcpus=1, memory_mib=512, image=image,
                     console_log=console, probe=True)
    log = workdir / "kvm-probe-qemu.txt"
    child = sup.start(qemu_argv(cfg), name="qemu-kvm-probe", stdout=log)
    deadline = time.monotonic() + timeout_s
    ok = False
    while time.monotonic() < deadline:
        ok = PROBE_MARKER in _read(console)
        if ok or child.poll() is not None:
            break
        time.sleep(0.1)
    rc = sup.stop(child, timeout=5.0)
    ok = ok or PROBE_MARKER in _read(console)
    if ok:
        choice = AccelChoice("kvm", "KVM boots the guest")
    elif rc is not None and time.monotonic() < deadline:
        lines = [ln.strip() for ln in _read(log).splitlines() if ln.strip()]
        detail = lines[0][:200] if lines else f"exit {rc}"
        choice = AccelChoice("tcg", f"qemu -accel kvm failed: {detail}")
    else:
        choice = AccelChoice("tcg", f"the guest did not boot under KVM within {timeout_s:.0f} s")
    path = probe_cache_path(cache_dir, image)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"accel": choice.accel, "reason": choice.reason, "t_unix": time.time()}))
    return choice


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def doctor_check(cache_dir: Path) -> tuple[bool, str]:
    """Whether the vm setup works here, and with which accelerator (for `idsbench doctor`).
    Never builds the image; probes KVM (≤ PROBE_TIMEOUT_S) only when an image is cached."""
    for prog, pkg in ((QEMU, "qemu-system-x86"), ("debootstrap", "debootstrap"),
                      ("mkfs.ext4", "e2fsprogs"), ("debugfs", "e2fsprogs")):
        if shutil.which(prog) is None:
            return False, f"`{prog}` missing: apt-get install {pkg}  (or `make setup`)"
    reason = kvm_usable_reason()
    if reason is not None:
        return True, f"TCG only (emulated, results labelled `emulated`): {reason}"
    images = cached_images(cache_dir)
    if not images:
        return True, ("/dev/kvm present; KVM is tried by booting the guest on the first vm run "
                      "(falls back to TCG, labelled `emulated`, if it does not boot)")
    choice = cached_probe(cache_dir, images[-1])
    if choice is None:
        with TeardownStack(state_dir=settings.state_dir()) as td:
            workdir = cache_dir / "vm"
            choice = probe_kvm(Supervisor(td), images[-1], cache_dir, workdir)
    if choice.accel == "kvm":
        return True, f"KVM ({choice.reason}, qemu {qemu_version()})"
    return True, f"TCG only (emulated, results labelled `emulated`): {choice.reason}"
