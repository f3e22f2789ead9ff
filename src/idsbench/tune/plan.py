"""`make_plan(probe, options) -> TuningPlan`: the overlay, host steps and knobs for one topology."""

from __future__ import annotations

from idsbench.errors import SpecError
from idsbench.probe.sysfs import format_cpulist
from idsbench.probemodel import HostProbe, InterfaceProbe
from idsbench.tune.cpus import choose_layout
from idsbench.tune.hostplan import boot_args, boot_step, ethtool_steps, host_knobs, irq_steps, service_steps
from idsbench.tune.model import HostStep, PlanOptions, TuningPlan
from idsbench.tune.nic import choose_spread
from idsbench.tune.overlay import overlay, overlay_knobs
from idsbench.tune.sizing import size


def capture_interface(probe: HostProbe, name: str | None) -> InterfaceProbe | None:
    """The named interface, or the probe's only one; None when the probe has none and none is named."""
    if name is not None:
        iface = probe.interfaces.get(name)
        if iface is None:
            known = ", ".join(probe.interfaces) or "none"
            raise SpecError(f"The probe has no interface {name!r} (it has: {known}).",
                            fix=f"probe it: `idsbench probe --json --iface {name} > FILE`, then --host FILE.")
        return iface
    if len(probe.interfaces) == 1:
        return next(iter(probe.interfaces.values()))
    return None


def make_plan(probe: HostProbe, options: PlanOptions) -> TuningPlan:
    warnings: list[str] = []
    iface = capture_interface(probe, options.iface)
    if iface is None:
        warnings.append("no capture interface: the plan has no NIC steps and af-packet uses 'default'. "
                        "Fix: probe the capture NIC (--iface) and pass --iface.")
    layout, layout_warnings = choose_layout(probe, iface, options.cpus)
    warnings += layout_warnings
    spread = choose_spread(iface, len(layout.workers))
    warnings += spread.warnings
    sizing, sizing_knobs, sizing_warnings = size(
        probe, iface, layout.node, spread.threads, memory_bytes=options.memory_bytes,
        rate_pps=options.rate_pps, flows=options.flows)
    warnings += sizing_warnings
    steps: list[HostStep] = []
    if iface is not None:
        steps += ethtool_steps(iface, spread)
        if probe.hypervisor:
            warnings.append(f"this host is a VM ({probe.hypervisor}): no IRQ control from inside the guest; "
                            "pin vCPUs and the NIC's IRQs on the hypervisor host.")
        else:  # irqbalance first, or it moves the IRQs again right after they were set
            steps += service_steps(probe) + irq_steps(iface, spread, layout)
    boot = boot_step(probe, layout.workers[: spread.threads])
    if boot is not None:
        steps.append(boot)
    knobs = overlay_knobs(layout, spread.threads) + list(spread.knobs) + sizing_knobs
    knobs += host_knobs(probe, layout, iface)
    if layout.spilled:
        knobs.append(next(k for k in knobs if k.name == "threading.worker-cpu-set").model_copy(
            update={"name": "threading.worker-cpu-set.spilled", "value": format_cpulist(layout.spilled),
                    "why": "workers the NIC's node could not hold (remote memory: slower per packet)."}))
    return TuningPlan(
        interface=iface.name if iface is not None else None,
        queues=spread.queues,
        cluster_type=spread.cluster_type,
        layout=layout,
        sizing=sizing,
        suricata=overlay(iface.name if iface is not None else None, spread.threads, spread.cluster_type,
                         layout, sizing),
        host=steps,
        knobs=knobs,
        warnings=warnings,
        boot_args=boot_args(layout.workers[: spread.threads]),
    )
