"""`idsbench hosts check`: per host, what is ready and what is missing, each with its fix.

Needs nothing installed on the hosts but python3: `facts.py` is sent to `python3 -` over SSH.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench import proc
from idsbench.hosts import hostkeys
from idsbench.hosts.digest import digest
from idsbench.hosts.inventory import HostEntry
from idsbench.hosts.protocol import HostFacts
from idsbench.hosts.ssh import ssh_argv
from idsbench.probe import iommu

FACTS_SCRIPT = Path(__file__).with_name("facts.py")
IOMMU_SCRIPT = Path(__file__).parent.parent / "probe" / "iommu.py"


def facts_script() -> str:
    """probe/iommu.py, then facts.py (its own `from __future__` line dropped: it must open a module)."""
    facts = "\n".join(line for line in FACTS_SCRIPT.read_text().splitlines()
                      if line.strip() != "from __future__ import annotations")
    return IOMMU_SCRIPT.read_text() + "\n\n" + facts + "\n"
PROVISION = "`idsbench hosts provision --inventory FILE`"


@dataclass(frozen=True)
class Item:
    host: str
    what: str
    ok: bool
    detail: str
    fix: str = ""


def remote_facts(host: HostEntry, known_hosts: Path) -> tuple[HostFacts | None, str]:
    # as the login user: the facts say themselves whether sudo works without a password
    login = host.model_copy(update={"become": "none"})
    argv = ssh_argv(login, known_hosts, ["python3", "-", host.role, host.interface or "", host.python,
                                         host.vfio_device or "", host.sriov_pf or ""])
    done = proc.run(argv, input=facts_script(), timeout=90, check=False)
    if done.returncode != 0:
        return None, (done.stderr or done.stdout).strip()[-300:] or f"ssh exit {done.returncode}"
    try:
        return HostFacts.model_validate_json(done.stdout.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):  # ValidationError is a ValueError
        return None, f"unexpected output {done.stdout[-200:]!r}"


def check_hosts(hosts: Sequence[HostEntry], known_hosts: Path) -> list[Item]:
    items: list[Item] = []
    local = digest()
    for status in hostkeys.check(hosts, known_hosts):
        h = status.host
        if status.state == "unreachable":
            items.append(Item(h.name, "reachable", False, f"{h.endpoint}: {status.detail}",
                              "check the address/port, that sshd runs and the network path"))
            continue
        if status.state != "known":
            items.append(Item(h.name, "host key", False, status.describe(),
                              f"verify the fingerprint, then `idsbench hosts trust` (known_hosts: {known_hosts})"))
            continue
        items.append(Item(h.name, "host key", True, status.describe()))
        facts, why = remote_facts(h, known_hosts)
        if facts is None:
            items.append(Item(h.name, "ssh login", False, why,
                              f"allow key login for {h.user} (key {h.key or 'ssh defaults'}); python3 must be installed"))
            continue
        items.append(Item(h.name, "ssh login", True, f"{h.user}@{h.address}, python {facts.python3}"))
        items += _role_items(h, facts, local)
    return items


def _role_items(h: HostEntry, f: HostFacts, local: str) -> list[Item]:
    out = []
    root = f.uid == 0
    if root:
        out.append(Item(h.name, "root", True, "logs in as root"))
    elif h.become == "sudo":
        quiet = f.sudo_without_password
        out.append(Item(h.name, "root", True, "sudo without a password" if quiet else
                        "sudo asks for a password: pass --ask-become-pass to `hosts provision` and `run`"))
    else:
        out.append(Item(h.name, "root", False, f"logs in as uid {f.uid} and no become is set",
                        "log in as root or set ansible_become: true"))
    program = "suricata" if h.role == "sensor" else "tcpreplay"
    version = f.suricata if h.role == "sensor" else f.tcpreplay
    out.append(Item(h.name, program, bool(version), version or "missing", "" if version else f"{PROVISION} installs it"))
    tools = f.ip and f.ethtool
    out.append(Item(h.name, "ip, ethtool", bool(tools), "present" if tools else "missing",
                    "" if tools else "apt-get install iproute2 ethtool"))
    nic = f.interface
    if nic.exists:
        out.append(Item(h.name, f"interface {nic.name}", True,
                        f"mtu {nic.mtu}, {nic.operstate}, carrier {'yes' if nic.carrier else 'no'}"))
    else:
        what = "idsbench_capture_interface" if h.role == "sensor" else "idsbench_transmit_interface"
        out.append(Item(h.name, f"interface {h.interface}", False, "does not exist", f"set {what} to a NIC of the host"))
    if h.role == "sensor" and (h.vfio_device or h.sriov_pf or h.hugepages):
        out += vfio_items(h, f)
    installed = f.idsbench_digest
    if installed == local:
        out.append(Item(h.name, "idsbench", True, f"build {installed} in {h.python}"))
    else:
        detail = f"build {installed} (controller {local})" if installed else f"not installed ({h.python})"
        out.append(Item(h.name, "idsbench", False, detail, f"{PROVISION} installs this build"))
    return out


def vfio_items(h: HostEntry, f: HostFacts) -> list[Item]:
    """The sensor's vm-vfio NIC: IOMMU groups, vfio-pci, the group's viability, SR-IOV capacity, hugepages."""
    v = f.vfio
    if v is None:
        return [Item(h.name, "vm-vfio", False, "the host reported no IOMMU facts", "run `hosts check` again")]
    problems = iommu.iommu_problems(v.iommu)
    out = [Item(h.name, p.what, False, p.detail, p.fix) for p in problems]
    if not problems:
        out.append(Item(h.name, "IOMMU", True, f"{v.iommu.groups} IOMMU groups, vfio-pci "
                        f"{'loaded' if v.iommu.vfio_pci_loaded else 'available'}"))
    if h.vfio_device:
        dev = v.device or iommu.PciDevice(bdf=h.vfio_device, exists=False)
        bad = iommu.device_problems(dev, what=f"device {h.vfio_device}")
        out += [Item(h.name, p.what, False, p.detail, p.fix) for p in bad]
        if not bad:
            out.append(Item(h.name, f"device {dev.bdf}", True, f"driver {dev.driver or 'none'}, IOMMU group "
                            f"{dev.iommu_group} viable ({len(dev.group)} function(s))"))
    if h.sriov_pf:
        pf = v.pf or iommu.PciDevice(bdf="?", exists=False)
        bad = iommu.sriov_problems(pf, h.sriov_pf)
        out += [Item(h.name, p.what, False, p.detail, p.fix) for p in bad]
        if not bad:
            out.append(Item(h.name, f"SR-IOV {h.sriov_pf}", True, f"{pf.bdf} ({pf.driver}): "
                            f"{pf.sriov_numvfs} of {pf.sriov_totalvfs} VFs in use"))
    if h.hugepages:
        from idsbench.spec import parse_size

        bad = iommu.hugepage_problems(v.iommu, parse_size(h.hugepages))
        out += [Item(h.name, p.what, False, p.detail, p.fix) for p in bad]
        if not bad:
            out.append(Item(h.name, "hugepages", True, f"{v.iommu.hugepages_free} free of "
                            f"{(v.iommu.hugepage_bytes or 0) // 1024} KiB"))
    return out


def render(items: Sequence[Item]) -> str:
    width = max((len(i.host) for i in items), default=4)
    lines = []
    for i in items:
        mark = "ok  " if i.ok else "MISS"
        line = f"{mark} {i.host:<{width}}  {i.what}: {i.detail}"
        if not i.ok and i.fix:
            line += f"\n     {'':<{width}}  fix: {i.fix}"
        lines.append(line)
    return "\n".join(lines)
