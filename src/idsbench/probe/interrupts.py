"""A network device's IRQs: /proc/interrupts lines that belong to it, with their CPU affinity."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from idsbench.probe.sysfs import parse_cpulist, read_text
from idsbench.probemodel import Irq

# Names of per-queue vectors: eth0-TxRx-3, i40e-eth0-TxRx-3, virtio2-input.0, mlx5_comp3@pci:...
_QUEUE_NAME = re.compile(r"(txrx|rx|tx|input|output|comp|ch|queue|q)[-_.]?\d+", re.IGNORECASE)


@dataclass(frozen=True)
class IrqLine:
    number: int
    chip: str  # everything between the per-CPU counts and the name (chip, hwirq, type)
    name: str


def parse_interrupts(text: str) -> list[IrqLine]:
    lines = text.splitlines()
    if not lines:
        return []
    ncpu = len(lines[0].split())
    out: list[IrqLine] = []
    for line in lines[1:]:
        match = re.match(r"^\s*(\d+):\s+(.*)$", line)
        if not match:
            continue
        rest = match.group(2).split()
        tail = rest[ncpu:]
        if not tail:
            continue
        out.append(IrqLine(int(match.group(1)), " ".join(tail[:-1]), tail[-1]))
    return out


def device_irq_numbers(device_dir: Path) -> set[int]:
    """MSI/MSI-X vectors of the device behind /sys/class/net/IF/device (or of its PCI parent)."""
    for candidate in (device_dir, device_dir.parent, device_dir.parent.parent):
        msi = candidate / "msi_irqs"
        if msi.is_dir():
            return {int(p.name) for p in msi.iterdir() if p.name.isdigit()}
    return set()


def _belongs(line: IrqLine, ifname: str, bus_info: str | None, device_name: str | None) -> bool:
    name = line.name
    if re.search(rf"(^|[-_@]){re.escape(ifname)}($|[-_@])", name):
        return True
    if bus_info and (bus_info in line.chip or bus_info in name):
        return True
    return bool(device_name and name.startswith(f"{device_name}-"))


def device_irqs(root: Path, ifname: str, bus_info: str | None, device_dir: Path | None) -> list[Irq]:
    lines = parse_interrupts(read_text(root / "proc/interrupts") or "")
    numbers = device_irq_numbers(device_dir) if device_dir is not None else set()
    device_name = device_dir.resolve().name if device_dir is not None and device_dir.exists() else None
    out: list[Irq] = []
    for line in lines:
        if line.number in numbers or _belongs(line, ifname, bus_info, device_name):
            affinity = read_text(root / f"proc/irq/{line.number}/smp_affinity_list")
            out.append(Irq(number=line.number, name=line.name,
                           affinity=parse_cpulist(affinity) if affinity is not None else None,
                           queue=bool(_QUEUE_NAME.search(line.name))))
    return out
