"""What a host must have to run the sensor VM (setup kind `vm`), checked before any sample
(`setups.registry` preflight): a clear EnvironmentMissing naming the fix instead of a failure inside the
first sample. A duet with a VM side runs the guest beside the other side's sensor: its RAM must fit too.

- qemu-system-x86_64, and what builds the guest image (debootstrap, mkfs.ext4, debugfs);
- `accel = "kvm"`: /dev/kvm usable (else `auto`/`tcg` run the guest emulated, labelled `emulated`);
- the guests' RAM (`setup.memory`, default 1 GiB, plus qemu's own) within MemAvailable.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from idsbench.errors import EnvironmentMissing
from idsbench.setups.vm.qemu import HOST_OVERHEAD_BYTES, QEMU, kvm_usable_reason

if TYPE_CHECKING:
    from idsbench.spec import Spec

PROGRAMS = ((QEMU, "qemu-system-x86 qemu-utils"), ("debootstrap", "debootstrap"), ("mkfs.ext4", "e2fsprogs"),
            ("debugfs", "e2fsprogs"))
DEFAULT_GUEST_BYTES = 1024**3  # setups/vm/setup.py DEFAULT_MEMORY


def mem_available_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def guests_at_once(spec: Spec) -> int:
    """How many guests run at the same time: 2 in a duet whose both sides are VMs, else 1."""
    if spec.mode != "duet":
        return 1
    return 1 if len(spec.setup.kinds) > 1 else 2


def require_guest(spec: Spec, *, which: Callable[[str], str | None] | None = None,
                  kvm_reason: Callable[[], str | None] = kvm_usable_reason,
                  available: Callable[[], int | None] = mem_available_bytes) -> None:
    """EnvironmentMissing naming the fix when this host cannot run the spec's sensor VM(s)."""
    if "vm" not in spec.setup.kinds:
        return
    side = "a VM side of this duet" if spec.mode == "duet" else "setup kind 'vm'"
    find = which or shutil.which
    for program, package in PROGRAMS:
        if find(program) is None:
            raise EnvironmentMissing(f"{side} needs `{program}`, which this host does not have: it can run no guest.",
                                     fix=f"apt-get install {package}  (or `make setup`); or remove 'vm' from "
                                         "setup.kinds.")
    if spec.setup.accel == "kvm" and (reason := kvm_reason()) is not None:
        raise EnvironmentMissing(f"{side} asks accel = \"kvm\", but KVM cannot run here: {reason}.",
                                 fix="use accel = \"auto\" or \"tcg\" in [setup] (the guest emulated: its figures are "
                                     "labelled `emulated` and a duet never judges them), or run on a KVM host.")
    from idsbench.spec import parse_size

    guest = max((parse_size(m) for m in spec.setup.memory if m is not None), default=DEFAULT_GUEST_BYTES)
    need = guests_at_once(spec) * (guest + HOST_OVERHEAD_BYTES["tcg"])
    free = available()
    if free is not None and need > free:
        raise EnvironmentMissing(
            f"{side} needs ~{need / 1024**2:.0f} MiB for {guests_at_once(spec)} guest(s) and qemu; this host has "
            f"{free / 1024**2:.0f} MiB available.",
            fix="give the guest less memory (setup.memory, e.g. \"512m\"), free memory, or remove 'vm' from "
                "setup.kinds.")
