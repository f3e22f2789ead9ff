"""Embedded wire: a sender namespace and a sensor namespace joined by one veth pair.

Nothing but the replayed packets may cross it: IPv6 is disabled in both namespaces before the
link exists (no router solicitations, no DAD), no addresses are configured (no ARP), offloads are
off (frames arrive as sent, VLAN tags stay in the frame), and the MTU fits the trace's largest frame.
Each namespace holds one idle process, whose PID lets the monitor read `/proc/PID/net/dev` there.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.proc import Child, Supervisor
from idsbench.teardown import TeardownStack, resource_kind

ETH_HEADER = 14
VLAN_SLACK = 8  # room for two VLAN tags beyond the MTU
MAX_MTU = 65535
OFFLOADS = ["rx", "tx", "sg", "tso", "gso", "gro", "lro", "rxvlan", "txvlan", "rx-gro-hw"]
SENDER_IF = "ibtx0"
SENSOR_IF = "ibrx0"


NETNS_DIR = Path("/var/run/netns")


@resource_kind
@dataclass(frozen=True)
class NetnsResource:
    """A named network namespace (`ip netns add`, or a container's attached under a name)."""

    kind: ClassVar[str] = "netns"
    name: str

    def undo(self) -> None:
        if not (NETNS_DIR / self.name).exists():
            return
        proc.run(["ip", "netns", "delete", self.name], timeout=30, check=False)
        if (NETNS_DIR / self.name).exists():
            raise EnvironmentMissing(f"network namespace {self.name} could not be deleted.",
                                     fix="stop the processes still inside it (`ip netns pids NAME`).")

    def describe(self) -> str:
        return f"netns {self.name}"


@resource_kind
@dataclass(frozen=True)
class LinkResource:
    """A network link, inside a namespace (or the host's when netns is None)."""

    kind: ClassVar[str] = "link"
    name: str
    netns: str | None = None

    def undo(self) -> None:
        if self.netns and not (NETNS_DIR / self.netns).exists():
            return  # the namespace went first, and its links with it
        argv = ["ip", *(["-n", self.netns] if self.netns else []), "link", "delete", self.name]
        proc.run(argv, timeout=30, check=False)

    def describe(self) -> str:
        return f"link {self.name}" + (f" in netns {self.netns}" if self.netns else "")


@resource_kind
@dataclass(frozen=True)
class XdpResource:
    """An XDP program a sensor attaches to a link (Suricata's bypass filter, idsbench.bypass; its drops:
    bypass/counting.xdp_drops): detached at teardown, also when the sensor was killed before it could
    detach it itself."""

    kind: ClassVar[str] = "xdp"
    link: str
    netns: str | None = None

    def undo(self) -> None:
        if self.netns and not (NETNS_DIR / self.netns).exists():
            return  # the namespace went first, and its links with it
        proc.run(["ip", *(["-n", self.netns] if self.netns else []), "link", "set", "dev", self.link, "xdp", "off"],
                 timeout=30, check=False)

    def describe(self) -> str:
        return f"xdp program on {self.link}" + (f" in netns {self.netns}" if self.netns else "")


def add_netns(stack: TeardownStack, name: str) -> None:
    """`ip netns add NAME` (registered), quiet: IPv6 off (no RS/DAD chatter), lo up."""
    proc.run(["ip", "netns", "add", name])
    stack.push(NetnsResource(name))
    quiet_netns(name)


def quiet_netns(ns: str) -> None:
    """No IPv6 chatter (router solicitations, DAD) on the wire: only the replayed packets count."""
    if Path("/proc/sys/net/ipv6").is_dir():  # absent on hosts booted with ipv6.disable=1
        for key in ("all", "default"):
            proc.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{key}.disable_ipv6=1"], netns=ns)
    proc.run(["ip", "-n", ns, "link", "set", "lo", "up"])


def offloads_off(ns: str, ifname: str) -> None:
    """Frames arrive as sent: no segmentation/coalescing, VLAN tags stay in the frame. Some
    features are fixed on veth/macvtap; ethtool reports those but changes the rest."""
    argv = ["ethtool", "-K", ifname]
    for feature in OFFLOADS:
        argv += [feature, "off"]
    proc.run(argv, netns=ns, check=False)


def impair(ns: str, ifname: str, *, loss: float, delay_ms: float, jitter_ms: float, reorder: float) -> None:
    """An emulated lossy SPAN port or tap on the sender's end: loss by an eBPF dropper (wire/impair.py,
    any kernel with cls_bpf); delay, jitter and reordering by netem (when the kernel has it). The
    qdiscs go with the namespace."""
    from idsbench.wire.impair import drop_fraction

    if loss:
        drop_fraction(ns, ifname, loss)
    if delay_ms or jitter_ms or reorder:
        argv = ["tc", "qdisc", "replace", "dev", ifname, "root", "netem", "limit", "100000",
                "delay", f"{delay_ms:g}ms", *([f"{jitter_ms:g}ms"] if jitter_ms else [])]
        if reorder:
            argv += ["reorder", f"{reorder * 100:g}%"]
        done = proc.run(argv, netns=ns, check=False)
        if done.returncode != 0:
            raise EnvironmentMissing(
                f"the kernel cannot emulate delay or reordering (netem: {done.stderr.strip()[:200]}).",
                fix="use a kernel with CONFIG_NET_SCH_NETEM for [wire] impair.delay_ms/jitter_ms/reorder, or "
                    "keep only impair.loss.")


def mtu_for(max_frame: int) -> int:
    """Smallest MTU (>= 1500) that lets a frame of `max_frame` bytes cross the veth whole."""
    return min(MAX_MTU, max(1500, max_frame - ETH_HEADER + VLAN_SLACK))


@dataclass(frozen=True)
class WireEnds:
    sender_ns: str
    sender_if: str
    sensor_ns: str
    sensor_if: str
    mtu: int
    sender_holder_pid: int
    sensor_holder_pid: int


def veth_wire(stack: TeardownStack, sender_ns: str, sender_if: str, sensor_ns: str, sensor_if: str,
              mtu: int) -> None:
    """A cable between two namespaces: a veth pair, offloads off, both ends up, the sensor end
    promiscuous (it sees everything on the wire). The pair goes with the namespaces; the sender end
    is recorded for a sensor namespace that outlives the wire."""
    proc.run(["ip", "link", "add", sender_if, "netns", sender_ns, "mtu", str(mtu), "type", "veth",
              "peer", "name", sensor_if, "netns", sensor_ns, "mtu", str(mtu)])
    stack.push(LinkResource(sender_if, sender_ns))
    for ns, ifname in ((sender_ns, sender_if), (sensor_ns, sensor_if)):
        offloads_off(ns, ifname)
        proc.run(["ip", "-n", ns, "link", "set", ifname, "up"])
    proc.run(["ip", "-n", sensor_ns, "link", "set", sensor_if, "promisc", "on"])


class NamespaceWire:
    """Create with `up()`; everything is registered in the supervisor's teardown stack."""

    def __init__(self, sup: Supervisor, *, prefix: str = "ib", mtu: int = 1500,
                 sensor_ns: str | None = None):
        self.sup = sup
        self.prefix = prefix
        self.mtu = mtu
        self.existing_sensor_ns = sensor_ns  # a namespace someone else owns (e.g. a container's)
        self.ident = secrets.token_hex(3)
        self.holders: list[Child] = []

    def up(self) -> WireEnds:
        sender_ns = f"{self.prefix}{self.ident}-snd"
        sensor_ns = self.existing_sensor_ns or f"{self.prefix}{self.ident}-sen"
        add_netns(self.sup.teardown, sender_ns)
        if self.existing_sensor_ns:
            quiet_netns(sensor_ns)
        else:
            add_netns(self.sup.teardown, sensor_ns)
        veth_wire(self.sup.teardown, sender_ns, SENDER_IF, sensor_ns, SENSOR_IF, self.mtu)
        sender_holder = self._holder(sender_ns)
        sensor_holder = self._holder(sensor_ns)
        return WireEnds(sender_ns, SENDER_IF, sensor_ns, SENSOR_IF, self.mtu,
                        sender_holder.pid, sensor_holder.pid)

    def _holder(self, ns: str) -> Child:
        child = self.sup.start(["sleep", "infinity"], name=f"holder-{ns}", netns=ns)
        self.holders.append(child)
        wait_in_netns(child.pid, ns)
        return child


def wait_in_netns(pid: int, ns: str, timeout_s: float = 5.0) -> None:
    """`ip netns exec` joins the namespace after it starts: wait until `pid` is inside `ns`."""
    target = os.stat(NETNS_DIR / ns).st_ino
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino == target:
                return
        except FileNotFoundError:
            break
        time.sleep(0.002)
    raise EnvironmentMissing(
        f"process {pid} did not enter network namespace {ns} within {timeout_s:.0f} s.",
        fix="check that `ip netns exec` works on this host (run `idsbench doctor`).",
    )
