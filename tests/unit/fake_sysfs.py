"""A fake sysfs/procfs tree (a tmp dir shaped like /sys/bus/pci/devices, /sys/kernel/iommu_groups,
/sys/class/net, /proc) and a fake kernel that reacts to idsbench's writes as Linux does: driver
unbind/bind/drivers_probe with driver_override, sriov_numvfs creating and removing VFs (probed by
their driver only with sriov_drivers_autoprobe on)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from idsbench.errors import EnvironmentMissing
from idsbench.setups.vfio.device import Sysfs


@dataclass
class FakeHost:
    root: Path
    native: dict[str, str] = field(default_factory=dict)  # bdf -> the driver that claims it
    next_group: int = 20

    # --- building --------------------------------------------------------------------------------
    def base(self, *, iommu: bool = True, dmar: bool = True, vendor: str = "GenuineIntel", cmdline: str = "",
             vfio_loaded: bool = True, hugepages: tuple[int, int] = (0, 0)) -> FakeHost:
        for d in ("sys/bus/pci/devices", "sys/kernel/iommu_groups", "sys/class/net", "proc", "dev/vfio",
                  "sys/firmware/acpi/tables", "sys/bus/pci/drivers"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        if dmar:
            (self.root / "sys/firmware/acpi/tables" / ("DMAR" if vendor == "GenuineIntel" else "IVRS")).write_text("")
        (self.root / "proc/cpuinfo").write_text(f"processor\t: 0\nvendor_id\t: {vendor}\n")
        (self.root / "proc/cmdline").write_text(cmdline or "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet")
        (self.root / "proc/meminfo").write_text(
            f"MemTotal: 24000000 kB\nHugePages_Total: {hugepages[0]}\nHugePages_Free: {hugepages[1]}\n"
            "Hugepagesize: 2048 kB\n")
        (self.root / "proc/sys/kernel").mkdir(parents=True, exist_ok=True)
        (self.root / "proc/sys/kernel/osrelease").write_text("6.1.0-fake")
        for drv in ("igb", "igbvf", "pcieport", "snd_hda_intel", *(["vfio-pci"] if vfio_loaded else [])):
            (self.root / "sys/bus/pci/drivers" / drv).mkdir(exist_ok=True)
        if vfio_loaded:
            (self.root / "dev/vfio/vfio").write_text("")
        self.iommu = iommu
        return self

    def device(self, bdf: str, *, driver: str | None, pci_class: str = "0x020000", group: int | None = None,
               netdev: str | None = None, totalvfs: int | None = None) -> Path:
        d = self.root / "sys/bus/pci/devices" / bdf
        d.mkdir(parents=True)
        for name, value in (("vendor", "0x8086"), ("device", "0x10c9"), ("class", pci_class), ("numa_node", "-1"),
                            ("driver_override", "(null)"), ("modalias", "pci:v00008086d000010C9")):
            (d / name).write_text(value + "\n")
        if driver:
            self.native[bdf] = driver
            self._link_driver(bdf, driver)
        if self.iommu:
            self._group(bdf, group)
        if netdev:
            (d / "net" / netdev).mkdir(parents=True)
            net = self.root / "sys/class/net" / netdev
            net.mkdir(parents=True)
            os.symlink(f"../../../bus/pci/devices/{bdf}", net / "device")
        if totalvfs is not None:
            (d / "sriov_totalvfs").write_text(f"{totalvfs}\n")
            (d / "sriov_numvfs").write_text("0\n")
            (d / "sriov_drivers_autoprobe").write_text("1\n")
        return d

    def _group(self, bdf: str, group: int | None) -> None:
        if group is None:
            group, self.next_group = self.next_group, self.next_group + 1
        g = self.root / "sys/kernel/iommu_groups" / str(group) / "devices"
        g.mkdir(parents=True, exist_ok=True)
        os.symlink(f"../../../../bus/pci/devices/{bdf}", g / bdf)
        os.symlink(f"../../../kernel/iommu_groups/{group}", self.root / "sys/bus/pci/devices" / bdf / "iommu_group")

    def _link_driver(self, bdf: str, driver: str) -> None:
        link = self.root / "sys/bus/pci/devices" / bdf / "driver"
        if link.is_symlink():
            link.unlink()
        os.symlink(f"../../../bus/pci/drivers/{driver}", link)

    def driver(self, bdf: str) -> str | None:
        link = self.root / "sys/bus/pci/devices" / bdf / "driver"
        return os.path.basename(os.readlink(link)) if link.is_symlink() else None

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text().strip()


class FakeKernel(Sysfs):
    """Applies a write as the kernel would (only the files idsbench writes)."""

    def __init__(self, host: FakeHost):
        super().__init__(host.root)
        self.host = host
        self.writes: list[tuple[str, str]] = []

    def write(self, rel: str, value: str) -> None:
        self.writes.append((rel, value.strip()))
        parts = rel.split("/")
        h = self.host
        if rel == "sys/bus/pci/drivers_probe":
            self._probe(value.strip())
        elif parts[:4] == ["sys", "bus", "pci", "drivers"] and parts[5] == "bind":
            bdf, drv = value.strip(), parts[4]
            override = h.read(f"sys/bus/pci/devices/{bdf}/driver_override")
            if not (h.root / "sys/bus/pci/drivers" / drv).is_dir() or override not in ("(null)", drv) or \
                    (override == "(null)" and h.native.get(bdf) != drv):
                raise EnvironmentMissing(f"writing {bdf} to {rel} failed: No such device.")
            h._link_driver(bdf, drv)
        elif parts[-2:] == ["driver", "unbind"]:
            (h.root / "sys/bus/pci/devices" / parts[4] / "driver").unlink()
        elif parts[-1] == "driver_override":
            (h.root / rel).write_text((value.strip() or "(null)") + "\n")
        elif parts[-1] == "sriov_drivers_autoprobe":
            (h.root / rel).write_text(value.strip() + "\n")
        elif parts[-1] == "sriov_numvfs":
            self._numvfs(parts[4], int(value))
        else:
            raise AssertionError(f"unexpected write {rel} = {value!r}")

    def _probe(self, bdf: str) -> None:
        h = self.host
        override = h.read(f"sys/bus/pci/devices/{bdf}/driver_override")
        drv = h.native.get(bdf) if override == "(null)" else override
        if drv and (h.root / "sys/bus/pci/drivers" / drv).is_dir():
            h._link_driver(bdf, drv)

    def _numvfs(self, pf: str, n: int) -> None:
        h = self.host
        d = h.root / "sys/bus/pci/devices" / pf
        current = int(h.read(f"sys/bus/pci/devices/{pf}/sriov_numvfs"))
        if current and n:
            raise EnvironmentMissing("writing sriov_numvfs failed: Device or resource busy.")
        for i in range(current):  # remove
            vf = os.path.basename(os.readlink(d / f"virtfn{i}"))
            (d / f"virtfn{i}").unlink()
            _rmtree(h.root / "sys/bus/pci/devices" / vf)
            for g in (h.root / "sys/kernel/iommu_groups").iterdir():
                if (g / "devices" / vf).is_symlink():
                    (g / "devices" / vf).unlink()
        autoprobe = h.read(f"sys/bus/pci/devices/{pf}/sriov_drivers_autoprobe") == "1"
        for i in range(n):
            vf = f"{pf[:-4]}10.{i}"
            h.device(vf, driver="igbvf" if autoprobe else None)
            h.native[vf] = "igbvf"
            os.symlink(f"../{vf}", d / f"virtfn{i}")
            os.symlink(f"../{pf}", h.root / "sys/bus/pci/devices" / vf / "physfn")
        (d / "sriov_numvfs").write_text(f"{n}\n")


def _rmtree(path: Path) -> None:
    for entry in sorted(path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if entry.is_symlink() or entry.is_file():
            entry.unlink()
        else:
            entry.rmdir()
    path.rmdir()
