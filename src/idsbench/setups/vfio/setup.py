"""vm-vfio: the vm setup's guest (image, control protocol, shares, limits), capturing on a PCI function
it owns through VFIO (`-device vfio-pci,host=BDF`) instead of virtio-net over a macvtap.

The function is either a whole NIC (`setup.vfio_device`, a BDF) or a VF idsbench makes of an SR-IOV PF
(`setup.sriov_pf`): sriov_numvfs 0 -> 1 with driver autoprobe off, the VF's MAC (`setup.sriov_mac`),
port VLAN (`setup.sriov_vlan`), spoofchk off and trust on (a passive sensor transmits nothing; trust
lets its driver ask for promiscuous modes where the NIC grants them), then driver_override = vfio-pci.
A NIC's switch delivers a unicast frame to a VF only when it is addressed to the VF's MAC (igb/82576
VFs have no unicast promiscuous mode), so the wire's sender port rewrites the destination MAC (and
pushes the VLAN tag) on egress: what a mirror session aimed at the VF does. Teardown (also on Ctrl-C,
errors, `idsbench cleanup`) restores the drivers, the VF's settings and the VF count (setups/vfio/device.py).

The guest loads the function's own driver (igbvf for an igb VF, igb for its PF) by modalias and captures
on it. The host cannot count what reaches the guest (the NIC's switch and the VF are not the host's):
`invisible` says so, and losses between the sender port and the guest's capture land in `unaccounted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.monitor.base import Source
from idsbench.probe.iommu import device_problems, pci_device
from idsbench.setups.base import SetupRequest
from idsbench.setups.vfio import device
from idsbench.setups.vfio.checks import interface_bdf_anywhere
from idsbench.setups.vm.monitor import GuestCsvSource, QemuSource
from idsbench.setups.vm.setup import CaptureNic, Vm, VmOptions
from idsbench.store.layout import GUEST_CSV_FILE
from idsbench.teardown import TeardownStack, resource_kind
from idsbench.wire.netns import WireEnds

MACHINE = "q35"          # a PCIe root bus for the passed-through function
HUGEPAGES = Path("/dev/hugepages")
DELIVER_PREF = 49        # the tc filter's preference on the sender port (the impairment uses the default)


@resource_kind
@dataclass(frozen=True)
class DeliverResource:
    """The sender port's egress rewrite to the VF's MAC (and VLAN): undo removes the filter."""

    kind: ClassVar[str] = "vf-deliver"
    netns: str
    ifname: str

    def undo(self) -> None:
        proc.run(["tc", "-n", self.netns, "filter", "del", "dev", self.ifname, "egress", "pref",
                  str(DELIVER_PREF)], check=False)

    def describe(self) -> str:
        return f"vf-deliver {self.ifname} in netns {self.netns}"


def deliver_argv(netns: str, ifname: str, mac: str, vlan: int | None) -> list[str]:
    """tc: every frame leaving the sender port is addressed to `mac` (and tagged `vlan`)."""
    argv = ["tc", "-n", netns, "filter", "add", "dev", ifname, "egress", "pref", str(DELIVER_PREF), "matchall",
            "action", "pedit", "ex", "munge", "eth", "dst", "set", mac]
    if vlan is not None:
        argv += ["pipe", "action", "vlan", "push", "id", str(vlan)]
    return argv


def deliver_to(stack: TeardownStack, netns: str, ifname: str, mac: str, vlan: int | None) -> None:
    proc.run(["tc", "-n", netns, "qdisc", "replace", "dev", ifname, "clsact"])
    stack.push(DeliverResource(netns, ifname))
    done = proc.run(deliver_argv(netns, ifname, mac, vlan), check=False)
    if done.returncode != 0:
        raise EnvironmentMissing(f"the sender port {ifname} cannot address frames to the VF ({mac}): "
                                 f"{done.stderr.strip()[:300]}",
                                 fix="a kernel with the tc actions pedit and vlan (act_pedit, act_vlan, cls_matchall).")


class VmVfio(Vm):
    kind = "vm-vfio"

    def __init__(self, request: SetupRequest, options: VmOptions | None = None):
        super().__init__(request, options)
        if (request.vfio_device is None) == (request.sriov_pf is None):
            raise EnvironmentMissing("vm-vfio needs exactly one of setup.vfio_device and setup.sriov_pf.",
                                     fix="name the PCI function (BDF) or the SR-IOV PF (interface) in [setup].")
        sriov = request.sriov_pf is not None
        # What the host cannot count on the way to the guest's capture (the PF's counters do not see a VF's
        # frames; a whole NIC is not the host's at all): its losses land in `unaccounted`.
        self.invisible: tuple[str, ...] = ("wire", "NIC switch", "VF", "guest") if sriov else ("wire", "NIC", "guest")
        self.sender_qdisc = sriov  # the sender's frames must pass the port's egress rewrite (no qdisc bypass)
        self.function: str | None = None
        self.info_extra: dict[str, object] = {}

    def _capture_nic(self, wire: WireEnds) -> CaptureNic:
        req, stack = self.req, self.req.sup.teardown
        if req.sriov_pf is not None:
            netns = wire.sensor_ns if wire.sensor_if == req.sriov_pf else None
            pf_bdf = interface_bdf_anywhere(req.sriov_pf, netns)
            if pf_bdf is None:
                raise EnvironmentMissing(f"setup.sriov_pf {req.sriov_pf} is not a PCI interface here.",
                                         fix="name the PF of an SR-IOV NIC.")
            vf = device.make_vf(stack, pf_bdf)
            device.configure_vf(stack, device.VfSettings(req.sriov_pf, netns, 0, req.sriov_mac, req.sriov_vlan))
            if netns is None:
                device.set_up(stack, req.sriov_pf)  # a VF's mailbox needs its PF up
            deliver_to(stack, wire.sender_ns, wire.sender_if, req.sriov_mac, req.sriov_vlan)
            self.function = vf
            self.info_extra = {"pf": pf_bdf, "pf_if": req.sriov_pf, "vf": vf, "vf_mac": req.sriov_mac,
                               "vf_vlan": req.sriov_vlan}
        else:
            assert req.vfio_device is not None
            self.function = req.vfio_device
            self.info_extra = {"device": req.vfio_device}
        blocked = device_problems(pci_device(self.function), what=f"the VF {self.function}") if req.sriov_pf else []
        if blocked:
            raise EnvironmentMissing(f"{blocked[0].detail}.", fix=blocked[0].fix)
        device.bind_vfio(stack, self.function)
        mem_path = HUGEPAGES if req.hugepages else None
        if mem_path is not None and not mem_path.is_dir():
            raise EnvironmentMissing(f"setup.hugepages asks for guest RAM from {mem_path}, which is not mounted.",
                                     fix=f"mount -t hugetlbfs none {mem_path}")
        return CaptureNic(vfio_host=self.function, machine=MACHINE, mem_path=mem_path)

    def _write_info(self) -> None:
        self.info["vfio"] = self.info_extra
        super()._write_info()

    def overhead_sources(self) -> list[Source]:
        assert self.qemu is not None, "prepare() first"
        return [QemuSource(self.qemu.pid, self.vhost_pids), GuestCsvSource(self.req.sample_dir / GUEST_CSV_FILE)]
