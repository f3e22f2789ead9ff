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

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="The host's name in results and logs.")
    role: Role = Field(description="\"sender\", \"sensor\" or \"collector\".")
    address: str = Field(description="Where SSH reaches it (a name or an address).")
    port: int = Field(22, ge=1, le=65535, description="SSH port.")
    user: str = Field("root", description="SSH login user.")
    key: str | None = Field(None, description="Private key file; unset: ssh's defaults or agent.")
    become: Literal["none", "sudo"] = Field("none", description="\"sudo\": the agent runs under `sudo -n`, or "
                                            "`sudo -S` with --ask-become-pass.")
    pair: str | None = Field(None, description="Pairs a sender with a sensor (same value on both).")
    capture_interface: str | None = Field(None, description="Sensor: the NIC the sensor captures on.")
    transmit_interface: str | None = Field(None, description="Sender: the NIC the replayers send out of.")
    python: str = Field(DEFAULT_PYTHON, description="The idsbench venv's python on the host.")
    workdir: str = Field(DEFAULT_WORKDIR, description="The agent's files (traces, samples, state).")
    vfio_device: str | None = Field(None, pattern=r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$",
                                    description="Sensor: a PCI function for vm-vfio, checked by `hosts check`.")
    sriov_pf: str | None = Field(None, description="Sensor: an SR-IOV PF to make a VF of, checked by `hosts check`.")
    hugepages: str | None = Field(None, pattern=r"^[0-9]+[kKmMgG]?$",
                                  description="Sensor: guest RAM that must be free in hugepages (\"2g\"), checked "
                                  "by `hosts check`.")

    @property
    def interface(self) -> str | None:
        return self.capture_interface if self.role == "sensor" else self.transmit_interface

    @property
    def endpoint(self) -> str:
        """How known_hosts names it: `addr` on port 22, else `[addr]:port`."""
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"
