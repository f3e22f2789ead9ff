"""`tune plan --apply`: make the plan's safe steps (ethtool and IRQ affinity on the named interface)
on THIS host, after confirmation, writing the undo script before each change. Never touches the
boot line or services, and refuses an interface that carries a default route."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from idsbench import proc
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.probe.netif import probe_interface
from idsbench.probe.sysfs import format_cpulist, read_text
from idsbench.tune.hostplan import irq_steps
from idsbench.tune.model import HostStep, TuningPlan
from idsbench.tune.nic import Spread


@dataclass(frozen=True)
class ApplyResult:
    applied: tuple[str, ...]
    undo_file: Path | None
    failed: str | None  # the step that failed and why (nothing after it was run)


def default_route_interfaces(root: Path = Path("/")) -> set[str]:
    """Interfaces carrying an IPv4 or IPv6 default route in this network namespace."""
    names: set[str] = set()
    for line in (read_text(root / "proc/net/route") or "").splitlines()[1:]:
        parts = line.split()
        if len(parts) > 2 and parts[1] == "00000000" and parts[7] == "00000000":
            names.add(parts[0])
    for line in (read_text(root / "proc/net/ipv6_route") or "").splitlines():
        parts = line.split()
        if len(parts) == 10 and parts[0] == "0" * 32 and parts[1] == "00" and parts[9] != "lo":
            names.add(parts[9])
    return names


def _write_undo(path: Path, interface: str, undo: list[str]) -> None:
    text = "#!/bin/sh\n# Undo of `idsbench tune plan --apply` on " + interface + \
        f" ({time.strftime('%Y-%m-%d %H:%M:%S')}); run: sh {path}\n" + "".join(f"{u}\n" for u in undo)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _run_step(step: HostStep) -> str | None:
    """None on success, else why it failed."""
    if step.kind == "ethtool" and step.argv:
        done = proc.run(step.argv, timeout=30, check=False)
        return None if done.returncode == 0 else (done.stderr or done.stdout).strip()[:300] or f"exit {done.returncode}"
    if step.kind == "irq" and step.irq is not None and step.cpus:
        try:
            Path(f"/proc/irq/{step.irq}/smp_affinity_list").write_text(format_cpulist(step.cpus) + "\n")
        except OSError as exc:
            return f"{exc.strerror or exc}"
        return None
    return f"{step.kind} steps are never applied automatically"


def apply_plan(plan: TuningPlan, undo_dir: Path, *, confirm: Callable[[str], bool], out: TextIO) -> ApplyResult:
    name = plan.interface
    if name is None:
        raise SpecError("--apply needs the capture interface.", fix="pass --iface IF.")
    if not Path(f"/sys/class/net/{name}").exists():
        raise SpecError(f"--apply changes interfaces of this host, and {name!r} is not one of them.",
                        fix="probe and apply on the host (and namespace) that has it.")
    if name in default_route_interfaces():
        raise SpecError(f"{name} carries this host's default route: changing its queues and offloads can "
                        "cut this host off the network, so --apply refuses.",
                        fix="review `--format shell` and run it by hand if you mean it.")
    ethtool = [s for s in plan.host if s.safe and s.kind == "ethtool"]
    irq_planned = [s for s in plan.host if s.safe and s.kind == "irq"]
    skipped = [s for s in plan.host if not s.safe]
    print(f"--apply on {name}: {len(ethtool)} ethtool change(s), IRQ affinity for "
          f"{len(irq_planned)} IRQ(s) (re-read after the ethtool changes):", file=out)
    for step in ethtool + irq_planned:
        print(f"  {step.command}", file=out)
    for step in skipped:
        print(f"  (not applied, do it by hand: {step.command})", file=out)
    if not ethtool and not irq_planned:
        print("nothing to apply.", file=out)
        return ApplyResult((), None, None)
    if not confirm(f"Apply these changes to {name}? [y/N] "):
        print("nothing changed.", file=out)
        return ApplyResult((), None, None)
    undo_dir.mkdir(parents=True, exist_ok=True)
    undo_file = undo_dir / f"tune-undo-{name}-{time.strftime('%Y%m%d-%H%M%S')}.sh"
    undo: list[str] = []
    applied: list[str] = []
    _write_undo(undo_file, name, undo)
    for step in ethtool:
        failed = _apply_one(step, undo, undo_file, name, applied)
        if failed:
            return _finish(applied, undo_file, failed, out)
    # Queue changes renumber/reassign IRQs: plan the affinity from the interface as it is now.
    live = probe_interface(name)
    spread = Spread(plan.cluster_type, len(plan.layout.workers), plan.queues, False, (), ())
    for step in irq_steps(live, spread, plan.layout):
        failed = _apply_one(step, undo, undo_file, name, applied)
        if failed:
            return _finish(applied, undo_file, failed, out)
    return _finish(applied, undo_file, None, out)


def _apply_one(step: HostStep, undo: list[str], undo_file: Path, name: str, applied: list[str]) -> str | None:
    if step.undo:
        undo.insert(0, step.undo)
        _write_undo(undo_file, name, undo)  # on disk before the change is made
    why = _run_step(step)
    if why is not None:
        if step.undo:
            undo.pop(0)
            _write_undo(undo_file, name, undo)
        return f"`{step.command}` failed: {why}"
    applied.append(step.command)
    return None


def _finish(applied: list[str], undo_file: Path, failed: str | None, out: TextIO) -> ApplyResult:
    print(f"applied {len(applied)} change(s).", file=out)
    if failed:
        print(f"stopped: {failed}", file=out)
    print(f"undo: sh {undo_file}", file=out)
    return ApplyResult(tuple(applied), undo_file, failed)


def require_root() -> None:
    if os.geteuid() != 0:
        raise EnvironmentMissing("--apply changes NIC settings and IRQ affinity, which needs root.",
                                 fix="run it as root (sudo).")
