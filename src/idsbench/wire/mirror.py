"""The duet's wire: one sender, a hub namespace that copies every frame to two sensor namespaces.

    sender ns: ibtx0 ─veth─ hub ns: ibin0 ─(mirror)─┬─► ibp0 ─veth─ slot 0's ns: ibrx0
                                                    └─► ibp1 ─veth─ slot 1's ns: ibrx0

Each slot is an ordinary wire from the sender's point of view (`WireEnds`: the shared sender end and
that slot's sensor end), so setups, the drain and the loss waterfall work per side unchanged: what the
mirror fails to copy is wire loss on that side (an unimpaired wire's loss makes the sample invalid).

Methods (`MIRROR_METHODS`; the duet uses `DuetDeps.mirror`, default `bpf`):
- `bpf`: an eBPF tc program on `ibin0`'s ingress (`mirror_program`): per frame a random bit picks which
  port gets a clone first, the frame itself goes to the other, so neither slot is always first (with
  mirred's fixed order slot 1 cost 7-9% less than slot 0 in two A/A runs).
- `mirred`: a tc ingress filter on `ibin0` — `u32 match u32 0 0` (every frame, any protocol)
  with `mirred egress mirror dev ibp0 pipe mirred egress redirect dev ibp1`: slot 0 gets a clone first,
  slot 1 the original. Copies every frame whatever its addresses.
- `bridge`: a bridge acting as a hub (`ageing_time 0`: nothing learned, every frame flooded; STP,
  multicast snooping and br_netfilter off). Measured here: it drops frames with a multicast source
  address and IEEE 802.3x pause frames (01:80:c2:00:00:01) — 10 of 30 test frames arrived — so it is
  kept for the benchmark's cost comparison only.

Where the mirror's work is charged: the sender's transmit on a veth is received by `ibin0` through the
sending CPU's backlog, and the NET_RX softirq that follows (the tc filter or bridge, both copies, both
veth transmits, both sensors' AF_PACKET ring copies) runs on that CPU, in the sender's own system call
when it re-enables bottom halves, or in that CPU's ksoftirqd when softirqs are deferred. With
CONFIG_IRQ_TIME_ACCOUNTING off (this kernel) softirq time counts to the task it interrupts: the
replayers' cgroup (`sender_cpu_pct`) or ksoftirqd (the root cgroup), never a sensor's cgroup — as long
as no sensor runs on the sender's CPU (the duet's placement keeps them apart where the host allows).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from idsbench import proc
from idsbench.proc import Child, Supervisor
from idsbench.teardown import TeardownStack
from idsbench.wire.impair import _insn, attach_classifier
from idsbench.wire.netns import (
    SENDER_IF,
    SENSOR_IF,
    LinkResource,
    WireEnds,
    add_netns,
    offloads_off,
    quiet_netns,
    wait_in_netns,
)

MIRROR_METHODS = ("bpf", "mirred", "bridge")
FUNC_GET_PRANDOM_U32, FUNC_CLONE_REDIRECT, FUNC_REDIRECT = 7, 13, 23
HUB_IN = "ibin0"
HUB_PORTS = ("ibp0", "ibp1")
BRIDGE = "ibbr0"


@dataclass(frozen=True)
class MirrorEnds:
    """The shared sender end, the hub and each slot's wire (`slots[i]`: sender → slot i's sensor end)."""

    sender_ns: str
    sender_if: str
    hub_ns: str
    mtu: int
    sender_holder_pid: int
    hub_holder_pid: int
    slots: tuple[WireEnds, WireEnds]
    method: str


def mirror_argv(method: str, ports: tuple[str, str] = HUB_PORTS) -> list[list[str]]:
    """The commands (run in the hub namespace) that make `ibin0` copy every frame to both ports."""
    if method == "mirred":
        return [["tc", "qdisc", "add", "dev", HUB_IN, "ingress"],
                ["tc", "filter", "add", "dev", HUB_IN, "parent", "ffff:", "protocol", "all", "prio", "1", "u32",
                 "match", "u32", "0", "0", "action", "mirred", "egress", "mirror", "dev", ports[0], "pipe",
                 "action", "mirred", "egress", "redirect", "dev", ports[1]]]
    if method == "bridge":
        return [["ip", "link", "add", BRIDGE, "type", "bridge", "ageing_time", "0", "stp_state", "0",
                 "mcast_snooping", "0", "nf_call_iptables", "0", "nf_call_ip6tables", "0", "nf_call_arptables", "0"],
                *(["ip", "link", "set", port, "master", BRIDGE] for port in (HUB_IN, *ports)),
                ["ip", "link", "set", BRIDGE, "up"]]
    raise ValueError(f"unknown mirror method {method!r}; use one of {', '.join(MIRROR_METHODS)}")


class MirrorWire:
    """Create with `up()`; every namespace and link goes into the supervisor's teardown stack.
    `sensor_ns[i]`: a namespace someone else owns (a container's) for slot i, or None (made here)."""

    def __init__(self, sup: Supervisor, *, prefix: str = "ib", mtu: int = 1500,
                 sensor_ns: tuple[str | None, str | None] = (None, None), method: str = "mirred"):
        if method not in MIRROR_METHODS:
            raise ValueError(f"unknown mirror method {method!r}")
        self.sup, self.prefix, self.mtu, self.method = sup, prefix, mtu, method
        self.existing = sensor_ns
        self.ident = secrets.token_hex(3)
        self.holders: list[Child] = []

    def up(self) -> MirrorEnds:
        stack = self.sup.teardown
        base = f"{self.prefix}{self.ident}"
        sender_ns, hub_ns = f"{base}-snd", f"{base}-hub"
        add_netns(stack, sender_ns)
        add_netns(stack, hub_ns)
        sensor_ns: list[str] = []
        for i, existing in enumerate(self.existing):
            if existing:
                quiet_netns(existing)
                sensor_ns.append(existing)
            else:
                sensor_ns.append(f"{base}-s{i}")
                add_netns(stack, sensor_ns[-1])
        _veth(stack, sender_ns, SENDER_IF, hub_ns, HUB_IN, self.mtu)
        for port, ns in zip(HUB_PORTS, sensor_ns):
            _veth(stack, hub_ns, port, ns, SENSOR_IF, self.mtu)
            proc.run(["ip", "-n", ns, "link", "set", SENSOR_IF, "promisc", "on"])
        if self.method == "bpf":
            index = [_ifindex(hub_ns, port) for port in HUB_PORTS]
            attach_classifier(hub_ns, HUB_IN, mirror_program(index[0], index[1]), "ingress")
        else:
            for argv in mirror_argv(self.method):
                proc.run(argv, netns=hub_ns)
        sender_pid, hub_pid = self._holder(sender_ns), self._holder(hub_ns)
        slot_pids = [self._holder(ns) for ns in sensor_ns]
        slots = tuple(WireEnds(sender_ns, SENDER_IF, ns, SENSOR_IF, self.mtu, sender_pid, pid)
                      for ns, pid in zip(sensor_ns, slot_pids))
        return MirrorEnds(sender_ns, SENDER_IF, hub_ns, self.mtu, sender_pid, hub_pid,
                          (slots[0], slots[1]), self.method)

    def _holder(self, ns: str) -> int:
        child = self.sup.start(["sleep", "infinity"], name=f"holder-{ns}", netns=ns)
        self.holders.append(child)
        wait_in_netns(child.pid, ns)
        return child.pid


def mirror_program(first: int, second: int) -> bytes:
    """eBPF (tc direct action): per frame a random bit picks which port gets the copy first — a clone
    to one (`bpf_clone_redirect`, egress), the frame itself to the other (`bpf_redirect`)."""
    def branch(a: int, b: int) -> list[bytes]:
        return [_insn(0xBF, dst=1, src=6),               # r1 = skb
                _insn(0xB7, dst=2, imm=a), _insn(0xB7, dst=3, imm=0),
                _insn(0x85, imm=FUNC_CLONE_REDIRECT),    # clone to port a (egress)
                _insn(0xB7, dst=1, imm=b), _insn(0xB7, dst=2, imm=0),
                _insn(0x85, imm=FUNC_REDIRECT),          # the frame to port b: r0 = TC_ACT_REDIRECT
                _insn(0x95)]
    first_branch = branch(first, second)
    return b"".join([
        _insn(0xBF, dst=6, src=1),                       # r6 = skb (kept across calls)
        _insn(0x85, imm=FUNC_GET_PRANDOM_U32),
        _insn(0x57, dst=0, imm=1),                       # r0 &= 1
        _insn(0x55, dst=0, off=len(first_branch), imm=0),  # if r0 != 0: the other order
        *first_branch, *branch(second, first)])


def _ifindex(ns: str, ifname: str) -> int:
    out = proc.run(["ip", "-n", ns, "-o", "link", "show", ifname]).stdout
    return int(out.split(":", 1)[0])


def _veth(stack: TeardownStack, ns_a: str, if_a: str, ns_b: str, if_b: str, mtu: int) -> None:
    """A veth pair between two namespaces, offloads off, both ends up (recorded by its first end)."""
    proc.run(["ip", "link", "add", if_a, "netns", ns_a, "mtu", str(mtu), "type", "veth",
              "peer", "name", if_b, "netns", ns_b, "mtu", str(mtu)])
    stack.push(LinkResource(if_a, ns_a))
    for ns, ifname in ((ns_a, if_a), (ns_b, if_b)):
        offloads_off(ns, ifname)
        proc.run(["ip", "-n", ns, "link", "set", ifname, "up"])
