"""IOMMU, VFIO, SR-IOV and hugepage facts from sysfs/procfs, and what is missing for a passed-through NIC.

Standard library only, and no idsbench import: `idsbench hosts check` sends this file (with
hosts/facts.py) to `python3 -` on hosts where idsbench is not installed. Every reader takes `root`
(default "/"), so the logic is unit-tested on fake trees shaped like /sys/bus/pci/devices,
/sys/kernel/iommu_groups, /sys/class/net, /proc/cmdline and /proc/meminfo.

    facts = iommu_facts()                      # the host: IOMMU on? vfio-pci? hugepages?
    dev = pci_device("0000:3b:00.1")           # one PCI function: driver, IOMMU group, SR-IOV
    for p in passthrough_problems(facts, dev, sriov=False): print(p.what, p.fix)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

BDF_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
VFIO_DRIVER = "vfio-pci"
# Drivers a device of the group may hold while another member is passed through: the kernel's
# viability rule (vfio_dev_viable: no driver, vfio-pci, pci-stub), and a PCIe port driving a bridge.
VIABLE_DRIVERS = (None, VFIO_DRIVER, "pci-stub", "pcieport")
IOMMU_CMDLINE_KEYS = ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "vfio_iommu_type1.allow_unsafe_interrupts")


@dataclass(frozen=True)
class GroupMember:
    bdf: str
    driver: str | None
    bridge: bool = False  # PCI class 0x06: a bridge/port, not an endpoint


@dataclass(frozen=True)
class PciDevice:
    """One PCI function as sysfs shows it (`exists` False: no such device)."""

    bdf: str
    exists: bool
    vendor: str | None = None
    device: str | None = None
    pci_class: str | None = None           # e.g. 0x020000 (Ethernet)
    driver: str | None = None              # bound driver's name, None when unbound
    driver_override: str | None = None
    iommu_group: int | None = None
    group: tuple[GroupMember, ...] = ()    # every function of the IOMMU group (itself included)
    numa_node: int | None = None
    sriov_totalvfs: int | None = None      # None: not SR-IOV capable
    sriov_numvfs: int | None = None
    sriov_autoprobe: bool | None = None    # sriov_drivers_autoprobe
    physfn: str | None = None              # a VF: its PF's BDF
    virtfns: tuple[str, ...] = ()          # a PF: its VFs' BDFs, by VF index
    netdevs: tuple[str, ...] = ()          # network interfaces of this function (this namespace's view)

    @property
    def network(self) -> bool:
        return bool(self.pci_class and self.pci_class.startswith("0x02"))

    def blockers(self) -> tuple[GroupMember, ...]:
        """Other members of its IOMMU group whose driver makes the group unusable for VFIO."""
        return tuple(m for m in self.group if m.bdf != self.bdf and m.driver not in VIABLE_DRIVERS)


@dataclass(frozen=True)
class IommuFacts:
    """The host's side: is the IOMMU on, can devices be bound to vfio-pci, hugepages."""

    groups: int                          # entries of /sys/kernel/iommu_groups (0: no IOMMU in use)
    dmar_table: bool                     # ACPI DMAR: Intel VT-d enabled in firmware
    ivrs_table: bool                     # ACPI IVRS: AMD-Vi enabled in firmware
    cpu_vendor: str | None               # GenuineIntel | AuthenticAMD
    cmdline: dict[str, str] = field(default_factory=dict)  # IOMMU_CMDLINE_KEYS given on the kernel line
    vfio_pci_loaded: bool = False        # /sys/bus/pci/drivers/vfio-pci
    vfio_pci_available: bool = False     # loaded, built in, or a module file of the running kernel
    dev_vfio: bool = False               # /dev/vfio/vfio
    unsafe_interrupts: bool | None = None  # vfio_iommu_type1 allow_unsafe_interrupts
    hugepages_total: int | None = None
    hugepages_free: int | None = None
    hugepage_bytes: int | None = None

    @property
    def enabled(self) -> bool:
        return self.groups > 0

    @property
    def amd(self) -> bool:
        return self.cpu_vendor == "AuthenticAMD" or (self.ivrs_table and not self.dmar_table)


@dataclass(frozen=True)
class Problem:
    """What is missing for passthrough, and how to get it."""

    what: str
    detail: str
    fix: str


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _int(text: str | None, base: int = 10) -> int | None:
    try:
        return int(text, base) if text is not None else None
    except ValueError:
        return None


def _link_name(path: Path) -> str | None:
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def parse_cmdline(text: str) -> dict[str, str]:
    """The IOMMU parameters of a kernel command line (init's arguments after `--` are not the kernel's)."""
    out: dict[str, str] = {}
    for word in text.split():
        if word == "--":
            break
        key, _, value = word.partition("=")
        if key in IOMMU_CMDLINE_KEYS:
            out[key] = value
    return out


def parse_meminfo_hugepages(text: str) -> tuple[int | None, int | None, int | None]:
    """(HugePages_Total, HugePages_Free, Hugepagesize in bytes) from /proc/meminfo."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        words = rest.split()
        if words and words[0].isdigit():
            values[key.strip()] = int(words[0]) * (1024 if len(words) > 1 and words[1] == "kB" else 1)
    return values.get("HugePages_Total"), values.get("HugePages_Free"), values.get("Hugepagesize")


def _vfio_module_file(root: Path) -> bool:
    release = os.uname().release if root == Path("/") else (_read(root / "proc/sys/kernel/osrelease") or "")
    mods = root / "lib/modules" / release
    builtin = _read(mods / "modules.builtin") or ""
    if "vfio-pci.ko" in builtin or "vfio_pci.ko" in builtin:
        return True
    base = mods / "kernel/drivers/vfio/pci"
    return any(base.glob("vfio-pci.ko*")) if base.is_dir() else False


def iommu_facts(root: Path = Path("/")) -> IommuFacts:
    groups_dir = root / "sys/kernel/iommu_groups"
    try:
        groups = sum(1 for e in os.scandir(groups_dir) if e.name.isdigit())
    except OSError:
        groups = 0
    vendor = None
    cpuinfo = _read(root / "proc/cpuinfo") or ""
    match = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo, re.M)
    if match:
        vendor = match.group(1)
    loaded = (root / "sys/bus/pci/drivers" / VFIO_DRIVER).is_dir()
    unsafe = _read(root / "sys/module/vfio_iommu_type1/parameters/allow_unsafe_interrupts")
    total, free, size = parse_meminfo_hugepages(_read(root / "proc/meminfo") or "")
    return IommuFacts(
        groups=groups,
        dmar_table=(root / "sys/firmware/acpi/tables/DMAR").exists(),
        ivrs_table=(root / "sys/firmware/acpi/tables/IVRS").exists(),
        cpu_vendor=vendor, cmdline=parse_cmdline(_read(root / "proc/cmdline") or ""),
        vfio_pci_loaded=loaded, vfio_pci_available=loaded or _vfio_module_file(root),
        dev_vfio=(root / "dev/vfio/vfio").exists(),
        unsafe_interrupts=None if unsafe is None else unsafe in ("Y", "1"),
        hugepages_total=total, hugepages_free=free, hugepage_bytes=size)


def pci_device(bdf: str, root: Path = Path("/")) -> PciDevice:
    base = root / "sys/bus/pci/devices" / bdf
    if not base.exists():
        return PciDevice(bdf=bdf, exists=False)
    group_link = _link_name(base / "iommu_group")
    group = _int(group_link)
    members: list[GroupMember] = []
    if group is not None:
        gdir = root / "sys/kernel/iommu_groups" / str(group) / "devices"
        try:
            names = sorted(e.name for e in os.scandir(gdir))
        except OSError:
            names = []
        for name in names:
            mdir = root / "sys/bus/pci/devices" / name
            members.append(GroupMember(name, _link_name(mdir / "driver"),
                                       (_read(mdir / "class") or "").startswith("0x06")))
    virtfns: list[tuple[int, str]] = []
    for entry in base.glob("virtfn*"):
        index = _int(entry.name.removeprefix("virtfn"))
        target = _link_name(entry)
        if index is not None and target:
            virtfns.append((index, target))
    try:
        netdevs = tuple(sorted(e.name for e in os.scandir(base / "net")))
    except OSError:
        netdevs = ()
    override = _read(base / "driver_override")
    autoprobe = _read(base / "sriov_drivers_autoprobe")
    return PciDevice(
        bdf=bdf, exists=True, vendor=_read(base / "vendor"), device=_read(base / "device"),
        pci_class=_read(base / "class"), driver=_link_name(base / "driver"),
        driver_override=None if override in (None, "(null)", "") else override,
        iommu_group=group, group=tuple(members), numa_node=_int(_read(base / "numa_node")),
        sriov_totalvfs=_int(_read(base / "sriov_totalvfs")), sriov_numvfs=_int(_read(base / "sriov_numvfs")),
        sriov_autoprobe=None if autoprobe is None else autoprobe == "1",
        physfn=_link_name(base / "physfn"), virtfns=tuple(n for _, n in sorted(virtfns)), netdevs=netdevs)


def interface_bdf(ifname: str, root: Path = Path("/")) -> str | None:
    """The PCI function behind a network interface (None: no such interface, or not PCI)."""
    link = root / "sys/class/net" / ifname / "device"
    if not link.exists():
        return None
    for part in reversed(Path(os.path.realpath(link)).parts):  # a virtio NIC's device is virtioN under its PCI function
        if BDF_RE.match(part):
            return part
    return None


def iommu_problems(facts: IommuFacts) -> list[Problem]:
    """The host-wide prerequisites of VFIO: an IOMMU in use and the vfio-pci driver."""
    out: list[Problem] = []
    if not facts.enabled:
        vtd = "AMD-Vi (IOMMU)" if facts.amd else "Intel VT-d"
        param = "amd_iommu=on iommu=pt" if facts.amd else "intel_iommu=on iommu=pt"
        if not (facts.dmar_table or facts.ivrs_table):
            detail = (f"no IOMMU: /sys/kernel/iommu_groups is empty and the firmware publishes no "
                      f"{'IVRS' if facts.amd else 'DMAR'} ACPI table ({vtd} is off in the firmware, or the "
                      "machine has none — a VM without a virtual IOMMU)")
            fix = (f"enable {vtd} (and SR-IOV) in the firmware setup, then boot the kernel with `{param}` "
                   "(GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, reboot); a VM needs a virtual IOMMU "
                   "(QEMU: -machine q35,kernel-irqchip=split -device intel-iommu,intremap=on,caching-mode=on)")
        else:
            detail = (f"the firmware has {vtd} on ({'IVRS' if facts.ivrs_table else 'DMAR'} table) but the kernel "
                      f"does not use it: /sys/kernel/iommu_groups is empty (kernel command line: "
                      f"{' '.join(f'{k}={v}' for k, v in facts.cmdline.items()) or 'no IOMMU parameters'})")
            fix = (f"boot the kernel with `{param}` (GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, "
                   "reboot)")
        out.append(Problem("IOMMU", detail, fix))
    if not facts.vfio_pci_available:
        out.append(Problem("vfio-pci", "the vfio-pci driver is neither loaded nor available as a module of the "
                           "running kernel", "use a kernel with CONFIG_VFIO_PCI (every Debian/Ubuntu kernel has it)"))
    elif not facts.vfio_pci_loaded:
        out.append(Problem("vfio-pci", "the vfio-pci module is not loaded",
                           "`modprobe vfio-pci` (add vfio-pci to /etc/modules to load it at boot)"))
    return out


def device_problems(dev: PciDevice, *, what: str) -> list[Problem]:
    """A function to pass through: present, in an IOMMU group, and a group VFIO can take."""
    if not dev.exists:
        return [Problem(what, f"no PCI device {dev.bdf} (/sys/bus/pci/devices/{dev.bdf})",
                        "name a function `lspci -D` lists, e.g. 0000:3b:00.1")]
    if dev.iommu_group is None:
        return [Problem(what, f"{dev.bdf} is in no IOMMU group", "enable the IOMMU (see the IOMMU line)")]
    blockers = dev.blockers()
    if blockers:
        names = ", ".join(f"{m.bdf} ({m.driver})" for m in blockers)
        return [Problem(f"IOMMU group {dev.iommu_group}", f"{dev.bdf} shares IOMMU group {dev.iommu_group} with "
                        f"{names}: VFIO takes a group only when every member is bound to vfio-pci or to no driver",
                        "pass the whole group through, or unbind the others (`echo BDF > "
                        "/sys/bus/pci/devices/BDF/driver/unbind`); a slot behind an ACS-capable root port, or "
                        "an SR-IOV VF, gets a group of its own")]
    return []


def sriov_problems(pf: PciDevice, ifname: str) -> list[Problem]:
    """A PF to make a VF from: SR-IOV capable, with a VF free or room for one."""
    if not pf.exists:
        return [Problem("SR-IOV", f"{ifname} is not a PCI network interface",
                        "name a PF of an SR-IOV NIC (`ls /sys/class/net/*/device/sriov_totalvfs`)")]
    if not pf.sriov_totalvfs:
        return [Problem("SR-IOV", f"{ifname} ({pf.bdf}, driver {pf.driver}) has no SR-IOV capability "
                        f"(sriov_totalvfs {pf.sriov_totalvfs if pf.sriov_totalvfs is not None else 'absent'})",
                        "enable SR-IOV for the NIC in the firmware setup (and its driver's max_vfs/num_vfs option "
                        "where it has one); then `echo N > /sys/class/net/IF/device/sriov_numvfs` works")]
    return []


def hugepage_problems(facts: IommuFacts, need_bytes: int) -> list[Problem]:
    free = (facts.hugepages_free or 0) * (facts.hugepage_bytes or 0)
    if free >= need_bytes:
        return []
    size = facts.hugepage_bytes or 2 * 1024**2
    pages = -(-need_bytes // size)
    return [Problem("hugepages", f"{facts.hugepages_free or 0} free hugepages of {size // 1024} KiB "
                    f"({free // 1024**2} MiB), the VM needs {need_bytes // 1024**2} MiB",
                    f"reserve them: `echo {pages + (facts.hugepages_total or 0) - (facts.hugepages_free or 0)} > "
                    "/proc/sys/vm/nr_hugepages` (or hugepages=N on the kernel command line)")]
