"""Handing a PCI function to vfio-pci (and back), and making an SR-IOV VF for it (and removing it).

Every change is a typed teardown `Resource` pushed BEFORE the change is made, so Ctrl-C, an error or
`idsbench cleanup` after a SIGKILL restores the host: the function's original driver and
driver_override, the PF's VF count and `sriov_drivers_autoprobe`, the VF's MAC/VLAN/spoofchk/trust.

    vf = make_vf(stack, pf_bdf)                 # sriov_numvfs 0 -> 1 (autoprobe off: no host driver)
    configure_vf(stack, VfSettings(pf_if, netns, 0, mac, vlan))   # ip link set PF vf 0 …
    bind_vfio(stack, vf)                        # driver_override = vfio-pci, unbind, drivers_probe

sysfs is reached through `Sysfs(root)` (`make_sysfs`), so the logic is unit-tested on a fake tree
whose fake kernel reacts to the writes (tests/unit/test_vfio_device.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.probe.iommu import VFIO_DRIVER, PciDevice, pci_device
from idsbench.teardown import TeardownStack, resource_kind

BIND_TIMEOUT_S = 10.0


class Sysfs:
    """Writes under `root` (the real kernel acts on them; a test's fake does too)."""

    def __init__(self, root: Path = Path("/")):
        self.root = Path(root)

    def write(self, rel: str, value: str) -> None:
        path = self.root / rel
        try:
            with open(path, "w") as fh:
                fh.write(value)
        except OSError as exc:
            raise EnvironmentMissing(f"writing {value.strip()!r} to {path} failed: {exc.strerror or exc}.",
                                     fix="run as root on a host whose kernel allows it (see `idsbench doctor`).") from exc

    def device(self, bdf: str) -> PciDevice:
        return pci_device(bdf, self.root)


make_sysfs: Callable[[Path], Sysfs] = Sysfs  # tests replace it with a fake kernel


def _dev(bdf: str) -> str:
    return f"sys/bus/pci/devices/{bdf}"


def wait_driver(fs: Sysfs, bdf: str, driver: str | None, timeout_s: float = BIND_TIMEOUT_S) -> PciDevice:
    deadline = time.monotonic() + timeout_s
    while True:
        dev = fs.device(bdf)
        if dev.driver == driver or time.monotonic() > deadline:
            return dev
        time.sleep(0.05)


def set_driver(fs: Sysfs, bdf: str, driver: str | None, override: str | None) -> PciDevice:
    """Bind `bdf` to `driver` (None: leave it unbound) with `override` as its driver_override."""
    dev = fs.device(bdf)
    if not dev.exists:
        return dev
    if dev.driver is not None and dev.driver != driver:
        fs.write(f"{_dev(bdf)}/driver/unbind", bdf)
    fs.write(f"{_dev(bdf)}/driver_override", (override or "") + "\n")
    if driver is not None and fs.device(bdf).driver != driver:
        try:
            fs.write(f"sys/bus/pci/drivers/{driver}/bind", bdf)
        except EnvironmentMissing:
            fs.write("sys/bus/pci/drivers_probe", bdf)  # e.g. the driver's module had to load
    return wait_driver(fs, bdf, driver)


@resource_kind
@dataclass(frozen=True)
class VfioBindResource:
    """A PCI function taken from its driver for vfio-pci: undo gives it back."""

    kind: ClassVar[str] = "vfio-bind"
    bdf: str
    driver: str | None           # the original driver (None: it had none)
    override: str | None = None  # the original driver_override
    root: str = "/"

    def undo(self) -> None:
        fs = make_sysfs(Path(self.root))
        dev = set_driver(fs, self.bdf, self.driver, self.override)
        if dev.exists and dev.driver != self.driver:
            raise EnvironmentMissing(f"{self.bdf} is bound to {dev.driver}, not back to {self.driver}.",
                                     fix=f"echo {self.bdf} > /sys/bus/pci/drivers/{self.driver}/bind")

    def describe(self) -> str:
        return f"vfio-bind {self.bdf} (back to {self.driver or 'no driver'})"


def bind_vfio(stack: TeardownStack, bdf: str, root: Path = Path("/")) -> PciDevice:
    """Give `bdf` to vfio-pci (driver_override, unbind, bind); registered to be given back."""
    fs = make_sysfs(root)
    dev = fs.device(bdf)
    if dev.driver == VFIO_DRIVER:
        return dev  # someone else's binding: left as it is
    stack.push(VfioBindResource(bdf, dev.driver, dev.driver_override, str(root)))
    got = set_driver(fs, bdf, VFIO_DRIVER, VFIO_DRIVER)
    if got.driver != VFIO_DRIVER:
        raise EnvironmentMissing(
            f"{bdf} did not bind to vfio-pci (driver now: {got.driver or 'none'}).",
            fix="`modprobe vfio-pci`, and check `dmesg` for the IOMMU group's viability")
    return got


@resource_kind
@dataclass(frozen=True)
class SriovResource:
    """A PF whose VF count idsbench changed: undo sets the count and autoprobe back."""

    kind: ClassVar[str] = "sriov-vfs"
    pf: str
    numvfs: int                  # the original count
    autoprobe: bool | None = None
    root: str = "/"

    def undo(self) -> None:
        fs = make_sysfs(Path(self.root))
        dev = fs.device(self.pf)
        if not dev.exists:
            return
        if dev.sriov_numvfs != self.numvfs:
            if dev.sriov_numvfs:
                fs.write(f"{_dev(self.pf)}/sriov_numvfs", "0")  # the kernel changes a count only from 0
            if self.numvfs:
                fs.write(f"{_dev(self.pf)}/sriov_numvfs", str(self.numvfs))
        if self.autoprobe is not None and dev.sriov_autoprobe != self.autoprobe:
            fs.write(f"{_dev(self.pf)}/sriov_drivers_autoprobe", "1" if self.autoprobe else "0")

    def describe(self) -> str:
        return f"sriov-vfs {self.pf} (back to {self.numvfs} VFs)"


def make_vf(stack: TeardownStack, pf_bdf: str, index: int = 0, root: Path = Path("/")) -> str:
    """The BDF of VF `index` of the PF: created (sriov_numvfs 0 -> index+1, host drivers not probed)
    when the PF has no VFs, else the existing one. Registered to be removed again."""
    fs = make_sysfs(root)
    pf = fs.device(pf_bdf)
    if not pf.sriov_totalvfs or index >= pf.sriov_totalvfs:
        raise EnvironmentMissing(f"{pf_bdf} cannot have VF {index} (sriov_totalvfs {pf.sriov_totalvfs}).",
                                 fix="enable SR-IOV for the NIC in the firmware setup.")
    if pf.sriov_numvfs and index < pf.sriov_numvfs and index < len(pf.virtfns):
        return pf.virtfns[index]
    if pf.sriov_numvfs:
        raise EnvironmentMissing(f"{pf_bdf} has {pf.sriov_numvfs} VFs already and no VF {index}; idsbench does not "
                                 "remove VFs it did not make.", fix="use a VF index below the count, or set "
                                 f"/sys/bus/pci/devices/{pf_bdf}/sriov_numvfs to 0 first.")
    stack.push(SriovResource(pf_bdf, 0, pf.sriov_autoprobe, str(root)))
    if pf.sriov_autoprobe:
        fs.write(f"{_dev(pf_bdf)}/sriov_drivers_autoprobe", "0")  # no host driver grabs the new VFs
    fs.write(f"{_dev(pf_bdf)}/sriov_numvfs", str(index + 1))
    deadline = time.monotonic() + BIND_TIMEOUT_S
    while True:
        pf = fs.device(pf_bdf)
        if len(pf.virtfns) > index and fs.device(pf.virtfns[index]).exists:
            return pf.virtfns[index]
        if time.monotonic() > deadline:
            raise EnvironmentMissing(f"{pf_bdf}: VF {index} did not appear after writing sriov_numvfs.",
                                     fix="check `dmesg` for the PF driver's SR-IOV errors.")
        time.sleep(0.05)


@dataclass(frozen=True)
class VfSettings:
    """What a passive sensor's VF needs from its PF (`ip link set PF vf N …`)."""

    pf_if: str
    netns: str | None
    vf: int
    mac: str
    vlan: int | None = None      # a port VLAN: only frames of it reach the VF, untagged
    spoofchk: bool = False       # off: the sensor never transmits, nothing to check
    trust: bool = True           # on: the VF may ask for promiscuous/multicast modes where the NIC allows it


def _ip(netns: str | None) -> list[str]:
    return ["ip", *(["-n", netns] if netns else [])]


def vf_argv(s: VfSettings) -> list[str]:
    return [*_ip(s.netns), "link", "set", "dev", s.pf_if, "vf", str(s.vf), "mac", s.mac,
            "vlan", str(s.vlan or 0), "spoofchk", "on" if s.spoofchk else "off",
            "trust", "on" if s.trust else "off"]


def read_vf(pf_if: str, netns: str | None, vf: int) -> VfSettings | None:
    """A VF's current settings from `ip -j -d link show` (None: the PF lists no such VF)."""
    done = proc.run([*_ip(netns), "-j", "-d", "link", "show", "dev", pf_if], check=False)
    return parse_vf(done.stdout, pf_if, netns, vf)


def parse_vf(text: str, pf_if: str, netns: str | None, vf: int) -> VfSettings | None:
    try:
        links = json.loads(text or "[]")
    except ValueError:
        return None
    for link in links:
        for info in link.get("vfinfo_list", []):
            if info.get("vf") == vf:
                vlans = info.get("vlan_list") or [{}]
                return VfSettings(pf_if, netns, vf, str(info.get("address", "00:00:00:00:00:00")),
                                  int(vlans[0].get("vlan", 0)) or None,
                                  bool(info.get("spoofchk", True)), bool(info.get("trust", False)))
    return None


@resource_kind
@dataclass(frozen=True)
class VfConfigResource:
    """A VF's MAC/VLAN/spoofchk/trust as they were: undo sets them back (nothing when the VF is gone)."""

    kind: ClassVar[str] = "vf-config"
    pf_if: str
    netns: str | None
    vf: int
    mac: str
    vlan: int | None
    spoofchk: bool
    trust: bool

    def undo(self) -> None:
        if read_vf(self.pf_if, self.netns, self.vf) is None:
            return  # the VF (or the PF's namespace) is gone
        proc.run(vf_argv(VfSettings(self.pf_if, self.netns, self.vf, self.mac, self.vlan, self.spoofchk,
                                    self.trust)), check=False)

    def describe(self) -> str:
        return f"vf-config {self.pf_if} vf {self.vf}"


def configure_vf(stack: TeardownStack, settings: VfSettings) -> None:
    old = read_vf(settings.pf_if, settings.netns, settings.vf)
    if old is None:
        raise EnvironmentMissing(f"{settings.pf_if} lists no VF {settings.vf} (`ip -d link show {settings.pf_if}`).",
                                 fix="check that the PF's driver supports SR-IOV.")
    stack.push(VfConfigResource(old.pf_if, old.netns, old.vf, old.mac, old.vlan, old.spoofchk, old.trust))
    done = proc.run(vf_argv(settings), check=False)
    if done.returncode != 0 and "trust" in done.stderr:
        # Drivers without ndo_set_vf_trust: the rest still applies.
        argv = vf_argv(settings)
        done = proc.run(argv[: argv.index("trust")], check=False)
    if done.returncode != 0:
        raise EnvironmentMissing(f"`{' '.join(vf_argv(settings))}` failed: {done.stderr.strip()[:300]}",
                                 fix="check the PF driver's VF options (`ip link help`).")


@resource_kind
@dataclass(frozen=True)
class LinkDownResource:
    """An interface idsbench brought up (a PF its VF needs up): undo sets it down again."""

    kind: ClassVar[str] = "link-down"
    ifname: str
    netns: str | None = None

    def undo(self) -> None:
        proc.run([*_ip(self.netns), "link", "set", "dev", self.ifname, "down"], check=False)

    def describe(self) -> str:
        return f"link-down {self.ifname}"


def set_up(stack: TeardownStack, ifname: str, netns: str | None = None) -> None:
    shown = proc.run([*_ip(netns), "-o", "link", "show", "dev", ifname], check=False).stdout
    if ",UP" in shown or "<UP" in shown:
        return
    stack.push(LinkDownResource(ifname, netns))
    proc.run([*_ip(netns), "link", "set", "dev", ifname, "up"])
