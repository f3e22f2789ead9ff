"""The host half of the plan: ethtool changes, IRQ affinity, irqbalance, the boot line.

Only what the probe shows the NIC supports is planned (a field the probe could not read means
ethtool could not do it either); each step carries the command that undoes it.
"""

from __future__ import annotations

import re
import shlex

from idsbench.probe.sysfs import format_cpulist
from idsbench.probemodel import HostProbe, InterfaceProbe, Irq
from idsbench.tune.model import DOCS, SEPTUN, THESIS, CpuLayout, HostStep, Knob
from idsbench.tune.nic import Spread, symmetric_key

# ethtool -K short names -> the long names `ethtool -k` prints. Off: the sensor must see packets
# as they were on the wire, not merged (GRO/LRO) or left for segmentation.
OFFLOADS_OFF = (
    ("gro", "generic-receive-offload"), ("lro", "large-receive-offload"),
    ("tso", "tcp-segmentation-offload"), ("gso", "generic-segmentation-offload"),
    ("sg", "scatter-gather"), ("rx", "rx-checksumming"), ("tx", "tx-checksumming"),
    ("rxvlan", "rx-vlan-offload"), ("txvlan", "tx-vlan-offload"), ("rx-gro-hw", "rx-gro-hw"),
)
RX_USECS = 125
FLOW_HASH = "sdfn"
GRUB_DROPIN = "/etc/default/grub.d/90-idsbench-tune.cfg"


def _ethtool(args: list[str], undo: list[str] | None, why: str) -> HostStep:
    return HostStep(kind="ethtool", command=shlex.join(["ethtool", *args]), argv=["ethtool", *args],
                    undo=shlex.join(["ethtool", *undo]) if undo else None, why=why, safe=True)


def _onoff(value: bool | None) -> str:
    return "on" if value else "off"


def ethtool_steps(iface: InterfaceProbe, spread: Spread) -> list[HostStep]:
    name = iface.name
    steps: list[HostStep] = []
    c = iface.channels
    if spread.queues is not None and c is not None:
        field = "combined" if c.combined_max else "rx"
        current = c.combined if field == "combined" else c.rx
        if current != spread.queues:
            steps.append(_ethtool(["-L", name, field, str(spread.queues)],
                                  ["-L", name, field, str(current)] if current else None,
                                  f"{spread.queues} RX queue(s), one per af-packet thread ({SEPTUN})."))
    if iface.offloads:
        on = [(short, long) for short, long in OFFLOADS_OFF
              if iface.offloads.get(long) and long not in iface.offloads_fixed]
        if on:
            steps.append(_ethtool(["-K", name, *[w for short, _ in on for w in (short, "off")]],
                                  ["-K", name, *[w for short, _ in on for w in (short, "on")]],
                                  f"offloads off: the sensor sees packets as on the wire, not merged by "
                                  f"GRO/LRO ({DOCS}: packet capture, offloading)."))
        if (spread.cluster_type == "cluster_qm" and iface.offloads.get("receive-hashing") is False
                and "receive-hashing" not in iface.offloads_fixed):
            steps.append(_ethtool(["-K", name, "rxhash", "on"], ["-K", name, "rxhash", "off"],
                                  "RSS hashing on: the NIC spreads flows over the queues."))
    if spread.set_key and spread.queues and iface.rss is not None:
        table = iface.rss.indirection or []
        even = sorted(set(table)) == list(range(spread.queues))
        if not (iface.rss.symmetric and even):
            undo = ["-X", name, "hkey", iface.rss.hash_key, "default"] if iface.rss.hash_key else ["-X", name, "default"]
            steps.append(_ethtool(["-X", name, "hkey", symmetric_key(iface), "equal", str(spread.queues)], undo,
                                  f"symmetric Toeplitz key and an even indirection table over {spread.queues} "
                                  f"queues ({DOCS}: high performance configuration; {SEPTUN})."))
    if spread.cluster_type == "cluster_qm" and iface.rx_flow_hash:
        for flow, letters in iface.rx_flow_hash.items():
            if letters != FLOW_HASH:
                steps.append(_ethtool(["-N", name, "rx-flow-hash", flow, FLOW_HASH],
                                      ["-N", name, "rx-flow-hash", flow, letters] if letters else None,
                                      f"{flow}: hash on addresses and ports (sdfn) so a flow stays on one queue ({SEPTUN})."))
    r = iface.rings
    if r is not None and r.rx_max and r.rx != r.rx_max:
        steps.append(_ethtool(["-G", name, "rx", str(r.rx_max)], ["-G", name, "rx", str(r.rx)] if r.rx else None,
                              f"largest NIC RX ring ({r.rx_max}): absorbs bursts before the kernel polls ({SEPTUN})."))
    co = iface.coalesce
    if co is not None and (co.adaptive_rx or co.rx_usecs != RX_USECS):
        undo = ["-C", name, "adaptive-rx", _onoff(co.adaptive_rx)] if co.adaptive_rx is not None else ["-C", name]
        if co.rx_usecs is not None:
            undo += ["rx-usecs", str(co.rx_usecs)]
        steps.append(_ethtool(["-C", name, "adaptive-rx", "off", "rx-usecs", str(RX_USECS)],
                              undo if len(undo) > 2 else None,
                              f"fixed interrupt moderation ({RX_USECS} µs): steady batches instead of "
                              f"adaptive swings ({DOCS}: high performance configuration)."))
    p = iface.pause
    if p is not None and (p.rx or p.tx):
        steps.append(_ethtool(["-A", name, "rx", "off", "tx", "off"],
                              ["-A", name, "rx", _onoff(p.rx), "tx", _onoff(p.tx)],
                              f"no pause frames: a passive sensor must never slow the tap/span ({SEPTUN})."))
    return steps


def _queue_index(irq: Irq) -> int:
    numbers = re.findall(r"\d+", irq.name)
    return int(numbers[-1]) if numbers else irq.number


def irq_steps(iface: InterfaceProbe, spread: Spread, layout: CpuLayout) -> list[HostStep]:
    queue_irqs = sorted((i for i in iface.irqs if i.queue), key=_queue_index) or sorted(iface.irqs, key=lambda i: i.number)
    if spread.cluster_type == "cluster_qm" and spread.queues:
        wanted = [(irq, [layout.workers[k % len(layout.workers)]]) for k, irq in enumerate(queue_irqs[: spread.queues])]
        why = f"queue i's IRQ on worker i's CPU: softirq, ring and worker on one core, on the NIC's node ({SEPTUN}; {THESIS})."
    else:
        wanted = [(irq, layout.management) for irq in queue_irqs]
        why = f"the queue's softirq work on the management CPU, not stealing a worker's cycles ({THESIS})."
    steps: list[HostStep] = []
    for irq, cpus in wanted:
        if irq.affinity == cpus:
            continue
        path = f"/proc/irq/{irq.number}/smp_affinity_list"
        undo = f"echo {format_cpulist(irq.affinity)} > {path}" if irq.affinity else None
        steps.append(HostStep(kind="irq", command=f"echo {format_cpulist(cpus)} > {path}", undo=undo,
                              why=f"{irq.name}: {why}", safe=True, irq=irq.number, cpus=cpus))
    return steps


def service_steps(probe: HostProbe) -> list[HostStep]:
    if not probe.irqbalance:
        return []
    return [HostStep(kind="service", command="systemctl disable --now irqbalance",
                     undo="systemctl enable --now irqbalance", safe=False,
                     why=f"irqbalance would move the NIC's IRQs off the worker CPUs again ({DOCS}: high performance configuration).")]


def boot_args(workers: list[int]) -> str:
    cpus = format_cpulist(workers)
    return f"isolcpus={cpus} nohz_full={cpus} rcu_nocbs={cpus}"


def boot_step(probe: HostProbe, workers: list[int]) -> HostStep | None:
    args = boot_args(workers)
    b = probe.boot
    if (b.isolcpus, b.nohz_full, b.rcu_nocbs) == (format_cpulist(workers),) * 3:
        return None
    line = shlex.quote(f'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX {args}"')
    return HostStep(kind="boot", command=f"printf '%s\\n' {line} > {GRUB_DROPIN} && update-grub",
                    undo=f"rm -f {GRUB_DROPIN} && update-grub", safe=False,
                    why=f"worker CPUs out of the scheduler's balancing, without timer ticks and RCU callbacks; "
                    f"takes effect at the next boot ({SEPTUN}; {THESIS}).")


def host_knobs(probe: HostProbe, layout: CpuLayout, iface: InterfaceProbe | None) -> list[Knob]:
    knobs = [Knob(name="boot.isolcpus", value=boot_args(layout.workers),
                  why=f"isolate the worker CPUs (applied at the next boot; --apply never changes it) ({SEPTUN}).")]
    if probe.hypervisor:
        knobs.append(Knob(name="irq-affinity", value="not applicable",
                          why=f"a VM ({probe.hypervisor}): guest IRQ affinity does not pin the host's vCPU threads or "
                          "the physical NIC's IRQs; pin those on the hypervisor host."))
    elif iface is not None and not iface.irqs:
        knobs.append(Knob(name="irq-affinity", value="none",
                          why=f"{iface.name} has no IRQs of its own (virtual device): nothing to pin."))
    knobs.append(Knob(name="irqbalance", value="off" if probe.irqbalance else "already off",
                      why=f"it would undo the IRQ affinity ({DOCS}: high performance configuration)."))
    return knobs
