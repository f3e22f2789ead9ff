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

from idsbench.errors import EnvironmentMissing
from idsbench.proc import Child, Supervisor

ETH_HEADER = 14
VLAN_SLACK = 8  # room for two VLAN tags beyond the MTU
MAX_MTU = 65535
OFFLOADS = ["rx", "tx", "sg", "tso", "gso", "gro", "lro", "rxvlan", "txvlan", "rx-gro-hw"]
SENDER_IF = "ibtx0"
SENSOR_IF = "ibrx0"


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
        self._add_netns(sender_ns)
        if self.existing_sensor_ns:
            self._quiet_netns(sensor_ns)
        else:
            self._add_netns(sensor_ns)
        self.sup.run(
            ["ip", "link", "add", SENDER_IF, "netns", sender_ns, "mtu", str(self.mtu), "type", "veth",
             "peer", "name", SENSOR_IF, "netns", sensor_ns, "mtu", str(self.mtu)]
        )
        for ns, ifname in ((sender_ns, SENDER_IF), (sensor_ns, SENSOR_IF)):
            self._quiet_offloads(ns, ifname)
            self.sup.run(["ip", "-n", ns, "link", "set", ifname, "up"])
        # The sensor side sees everything on the wire.
        self.sup.run(["ip", "-n", sensor_ns, "link", "set", SENSOR_IF, "promisc", "on"])
        sender_holder = self._holder(sender_ns)
        sensor_holder = self._holder(sensor_ns)
        return WireEnds(sender_ns, SENDER_IF, sensor_ns, SENSOR_IF, self.mtu,
                        sender_holder.pid, sensor_holder.pid)

    def _add_netns(self, ns: str) -> None:
        self.sup.run(["ip", "netns", "add", ns])
        self.sup.teardown.push("netns", {"name": ns})
        self._quiet_netns(ns)

    def _quiet_netns(self, ns: str) -> None:
        for key in ("all", "default"):
            self.sup.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{key}.disable_ipv6=1"], netns=ns)
        self.sup.run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def _quiet_offloads(self, ns: str, ifname: str) -> None:
        # Some features are fixed on veth; ethtool reports those but changes the rest.
        argv = ["ethtool", "-K", ifname]
        for feature in OFFLOADS:
            argv += [feature, "off"]
        self.sup.run(argv, netns=ns, check=False)

    def _holder(self, ns: str) -> Child:
        child = self.sup.start(["sleep", "infinity"], name=f"holder-{ns}", netns=ns)
        self.holders.append(child)
        wait_in_netns(child.pid, ns)
        return child


def wait_in_netns(pid: int, ns: str, timeout_s: float = 5.0) -> None:
    """`ip netns exec` joins the namespace after it starts: wait until `pid` is inside `ns`."""
    target = os.stat(f"/var/run/netns/{ns}").st_ino
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
