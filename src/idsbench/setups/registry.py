"""Setup kinds by name: the one list from which the spec's `setup.kinds`, `idsbench doctor`'s
checks and the report's colours derive. Adding a kind = one `SetupKind` entry here plus its
module (a class taking a `SetupRequest` and meeting the `Setup` protocol of setups.base).

Light on imports (the spec validates against it): setup modules are imported when used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from idsbench.errors import SpecError

if TYPE_CHECKING:
    from idsbench.setups.base import Setup, SetupRequest
    from idsbench.spec import Spec

DoctorLine = tuple[str, bool, str]


@dataclass(frozen=True)
class SetupKind:
    name: str
    description: str
    factory: str               # "module:Class" of the setup
    doctor: str | None = None  # "module:function(cache_dir) -> (ok, detail)"
    preflight: str | None = None  # "module:function(spec)": raises before any sample when the host cannot run it

    def load(self) -> Callable[[SetupRequest], Setup]:
        module, _, attr = self.factory.partition(":")
        factory: Callable[[SetupRequest], Setup] = getattr(importlib.import_module(module), attr)
        return factory


KINDS: dict[str, SetupKind] = {k.name: k for k in (
    SetupKind("baremetal", "the sensor as a host process in its own cgroup",
              "idsbench.setups.baremetal:Baremetal"),
    SetupKind("container", "podman or docker, sharing the wire's sensor namespace",
              "idsbench.setups.container.setup:Container", "idsbench.setups.container.runtime:doctor_container"),
    SetupKind("container-vtap", "a container fed by a macvtap on the wire",
              "idsbench.setups.container.setup:ContainerVtap", "idsbench.setups.container.runtime:doctor_vtap"),
    SetupKind("vm", "a QEMU guest fed by a macvtap (KVM, else TCG: labelled emulated)",
              "idsbench.setups.vm.setup:Vm", "idsbench.setups.vm.qemu:doctor_check",
              "idsbench.setups.vm.checks:require_guest"),
    SetupKind("vm-vfio", "a QEMU guest owning a PCI function through VFIO: a whole NIC or an SR-IOV VF",
              "idsbench.setups.vfio.setup:VmVfio", "idsbench.setups.vfio.checks:doctor_check",
              "idsbench.setups.vfio.checks:require_passthrough"),
)}


def names() -> tuple[str, ...]:
    return tuple(KINDS)


def make_setup(kind: str, request: SetupRequest) -> Setup:
    try:
        entry = KINDS[kind]
    except KeyError:
        raise SpecError(f"setup kind {kind!r} is not available.",
                        fix=f"use one of {', '.join(KINDS)}.") from None
    return entry.load()(request)


def doctor_checks(cache_dir: Path) -> list[DoctorLine]:
    """`idsbench doctor` lines, one per setup kind: usable here, and why not."""
    out: list[DoctorLine] = []
    for kind in KINDS.values():
        if kind.doctor is None:
            out.append((f"setup {kind.name}", True, "usable"))
            continue
        module, _, attr = kind.doctor.partition(":")
        check: Callable[[Path], tuple[bool, str]] = getattr(importlib.import_module(module), attr)
        out.append((f"setup {kind.name}", *check(cache_dir)))
    return out


def preflight(spec: Spec) -> None:
    """Each setup kind of the spec checks what it needs of this host (a clear error before any sample)."""
    for name in dict.fromkeys(spec.setup.kinds):
        kind = KINDS.get(name)
        if kind is not None and kind.preflight is not None:
            module, _, attr = kind.preflight.partition(":")
            check: Callable[[Spec], None] = getattr(importlib.import_module(module), attr)
            check(spec)
