"""One host as the spec's `[[hosts.host]]` and an Ansible inventory name it (`HostEntry`): a leaf
model (pydantic only), so loading a spec does not pull in the hosts package. `idsbench.hosts.inventory`
reads inventories into these and re-exports them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["sender", "sensor", "collector"]
ROLES: tuple[Role, ...] = ("sender", "sensor", "collector")
DEFAULT_PYTHON = "/opt/idsbench/venv/bin/python"
DEFAULT_WORKDIR = "/var/tmp/idsbench"


class HostEntry(BaseModel):
    """One host as idsbench reaches it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    role: Role
    address: str
    port: int = Field(22, ge=1, le=65535)
    user: str = "root"
    key: str | None = None                   # private key file (else ssh's defaults/agent)
    become: Literal["none", "sudo"] = "none"  # sudo: `sudo -n`, or with --ask-become-pass
    pair: str | None = None
    capture_interface: str | None = None     # sensor: the NIC the sensor sniffs
    transmit_interface: str | None = None    # sender: the NIC tcpreplay sends out of
    python: str = DEFAULT_PYTHON             # the idsbench venv's python on the host
    workdir: str = DEFAULT_WORKDIR           # the agent's files (traces, samples, state)
    # a sensor host's NIC for the vm-vfio setup (checked by `hosts check`): a PCI function to pass through,
    # or an SR-IOV PF to make a VF of; and the guest RAM it must find in free hugepages ("2g"), if asked
    vfio_device: str | None = Field(None, pattern=r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
    sriov_pf: str | None = None
    hugepages: str | None = Field(None, pattern=r"^[0-9]+[kKmMgG]?$")

    @property
    def interface(self) -> str | None:
        return self.capture_interface if self.role == "sensor" else self.transmit_interface

    @property
    def endpoint(self) -> str:
        """How known_hosts names it: `addr` on port 22, else `[addr]:port`."""
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"
