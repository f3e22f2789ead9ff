"""Which hypervisor (if any) runs this host: /sys/hypervisor, cpuid leaf 0x40000000 (from ibtimer),
DMI vendor/product, and the cpuinfo `hypervisor` flag. The most specific source names it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from idsbench.probe.sysfs import read_text

# cpuid leaf 0x40000000 vendor signatures.
CPUID_VENDORS = {
    "KVMKVMKVM": "kvm",
    "Microsoft Hv": "hyperv",
    "VMwareVMware": "vmware",
    "XenVMMXenVMM": "xen",
    "TCGTCGTCGTCG": "qemu-tcg",
    "VBoxVBoxVBox": "virtualbox",
    "ACRNACRNACRN": "acrn",
    "bhyve bhyve": "bhyve",
    " lrpepyh  vr": "parallels",
    "QNXQVMBSQG": "qnx",
}

# DMI sys_vendor / product_name substrings (lower case).
DMI_VENDORS = (
    ("qemu", "qemu"),
    ("kvm", "kvm"),
    ("vmware", "vmware"),
    ("innotek", "virtualbox"),
    ("virtualbox", "virtualbox"),
    ("xen", "xen"),
    ("amazon ec2", "amazon"),
    ("google compute engine", "google"),
    ("parallels", "parallels"),
    ("bochs", "bochs"),
    ("microsoft corporation virtual machine", "hyperv"),
)


@dataclass(frozen=True)
class HypervisorFacts:
    name: str | None
    evidence: tuple[str, ...]


def detect(root: Path, cpu_flags: list[str], cpuid_vendor: str | None) -> HypervisorFacts:
    evidence: list[str] = []
    names: list[str] = []
    sys_type = read_text(root / "sys/hypervisor/type")
    if sys_type:
        evidence.append(f"/sys/hypervisor/type = {sys_type!r}")
        names.append(sys_type.lower())
    if cpuid_vendor is not None:
        vendor = cpuid_vendor.rstrip("\0")
        evidence.append(f"cpuid 0x40000000 = {vendor!r}")
        names.append(CPUID_VENDORS.get(vendor, CPUID_VENDORS.get(vendor.strip(), vendor.strip() or "unknown")))
    dmi = root / "sys/class/dmi/id"
    dmi_text = " ".join(t for t in (read_text(dmi / "sys_vendor"), read_text(dmi / "product_name")) if t)
    if dmi_text:
        for needle, name in DMI_VENDORS:
            if needle in dmi_text.lower():
                evidence.append(f"DMI {dmi_text!r}")
                names.append(name)
                break
    if "hypervisor" in cpu_flags:
        evidence.append("cpuinfo flag 'hypervisor'")
        names.append("unknown")
    named = [n for n in names if n != "unknown"]
    return HypervisorFacts(name=named[0] if named else (names[0] if names else None), evidence=tuple(evidence))
