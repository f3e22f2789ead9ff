"""What a host has for its role: programs and versions, the interface, root, idsbench's venv.

Standard library only: `idsbench hosts check` sends this file to `python3 -` on hosts where
idsbench is not installed yet; the agent's `hello` returns the same facts. The controller reads
them as `hosts.protocol.HostFacts`.

    python3 - ROLE IFACE VENV_PYTHON [VFIO_DEVICE [SRIOV_PF]] < facts.py     prints one JSON object

With a vm-vfio NIC named, also the IOMMU facts of probe/iommu.py, which `hosts check` sends ahead of
this file (so its functions are this script's own globals there).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

try:  # installed (the agent's hello)
    from idsbench.probe import iommu as _iommu
except ImportError:  # `hosts check`: probe/iommu.py's source runs ahead of this file in the same script
    _iommu = sys.modules[__name__]

SEARCH = os.pathsep.join([os.environ.get("PATH", "/usr/bin:/bin"), "/usr/local/sbin", "/usr/sbin", "/sbin"])


def _which(program: str) -> str | None:
    """Also in the sbin directories a non-root login's PATH lacks (root will run them)."""
    return shutil.which(program, path=SEARCH)


def _version(argv: list[str], marker: str) -> str | None:
    path = _which(argv[0])
    if path is None:
        return None
    try:
        # direct, not idsbench.proc: this file runs as `python3 -` on hosts without idsbench (standard library only)
        done = subprocess.run([path, *argv[1:]], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in (done.stdout + done.stderr).splitlines():
        if marker in line.lower():
            for word in line.replace(",", " ").split():
                if word[:1].isdigit() and "." in word:
                    return word
    return None


def interface(name: str | None) -> dict[str, object]:
    if not name:
        return {"name": None, "exists": False}
    base = Path("/sys/class/net") / name
    if not base.exists():
        return {"name": name, "exists": False}

    def read(key: str) -> str:
        try:
            return (base / key).read_text().strip()
        except OSError:
            return ""

    mtu = read("mtu")
    return {"name": name, "exists": True, "mtu": int(mtu) if mtu.isdigit() else None,
            "operstate": read("operstate"), "carrier": read("carrier") == "1"}


def sudo_ok() -> bool:
    if os.geteuid() == 0:
        return True
    if shutil.which("sudo") is None:
        return False
    try:  # direct: standard library only (see _version)
        return subprocess.run(["sudo", "-n", "true"], capture_output=True, timeout=10,
                              stdin=subprocess.DEVNULL).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def venv_digest(python: str) -> str | None:
    if not python or not Path(python).exists():
        return None
    try:  # direct: standard library only (see _version)
        done = subprocess.run([python, "-m", "idsbench.hosts.digest"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def vfio_facts(vfio_device: str | None, sriov_pf: str | None) -> dict[str, object]:
    out: dict[str, object] = {"iommu": asdict(_iommu.iommu_facts())}
    if vfio_device:
        out["device"] = asdict(_iommu.pci_device(vfio_device))
    if sriov_pf:
        bdf = _iommu.interface_bdf(sriov_pf)
        out["pf_interface"] = sriov_pf
        out["pf"] = asdict(_iommu.pci_device(bdf)) if bdf else None
    return out


def collect_facts(role: str, iface: str | None, venv_python: str | None = None, vfio_device: str | None = None,
                  sriov_pf: str | None = None) -> dict[str, object]:
    facts: dict[str, object] = {
        "role": role, "uid": os.geteuid(), "sudo_without_password": sudo_ok(), "cpus": os.cpu_count(),
        "python3": sys.version.split()[0],
        "suricata": _version(["suricata", "-V"], "suricata") if role == "sensor" else None,
        "tcpreplay": _version(["tcpreplay", "-V"], "tcpreplay") if role == "sender" else None,
        "ip": _which("ip") is not None, "ethtool": _which("ethtool") is not None,
        "interface": interface(iface),
    }
    if venv_python is not None:
        facts["venv_python"] = venv_python if Path(venv_python).exists() else None
        facts["idsbench_digest"] = venv_digest(venv_python)
    if vfio_device or sriov_pf:
        facts["vfio"] = vfio_facts(vfio_device, sriov_pf)
    return facts


def host_facts(role: str, iface: str | None) -> dict[str, object]:
    return collect_facts(role, iface)


if __name__ == "__main__":
    args = sys.argv[1:] + [""] * 5
    print(json.dumps(collect_facts(args[0], args[1] or None, args[2] or None, args[3] or None, args[4] or None)))
