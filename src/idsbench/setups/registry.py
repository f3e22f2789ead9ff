"""Setup kinds by name. A new kind registers its class here and in spec.SETUP_KINDS."""

from __future__ import annotations

from idsbench.errors import SpecError
from idsbench.setups.base import Setup, SetupRequest
from idsbench.setups.baremetal import Baremetal
from idsbench.setups.container import Container, ContainerVtap
from idsbench.setups.vm import Vm

SETUPS: dict[str, type] = {
    "baremetal": Baremetal,
    "container": Container,
    "container-vtap": ContainerVtap,
    "vm": Vm,
}


def make_setup(kind: str, request: SetupRequest) -> Setup:
    try:
        cls = SETUPS[kind]
    except KeyError:
        raise SpecError(f"setup kind {kind!r} is not available.",
                        fix=f"use one of {', '.join(sorted(SETUPS))}.") from None
    return cls(request)
