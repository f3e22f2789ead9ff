"""A wire of two NIC ports of this host cabled together (`[wire] sender_interface`, `sensor_interface`).

Instead of a veth pair, the sender namespace gets the sender port and the sensor namespace the sensor
port: the replayers transmit on real hardware (or, in the nested lab, on the outer VM's NICs), and a
setup that needs the NIC itself (vm with a macvtap on it; vm-vfio with a VF of it) finds it there.
Each port is moved back to the host's namespace (MTU, promiscuity and up/down as they were, tc qdiscs
removed) by a `nic-move` teardown record, before its namespace is deleted: nothing waits for the
kernel to return it asynchronously, and `idsbench cleanup` after a SIGKILL restores it too.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import ClassVar

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.proc import Child, Supervisor
from idsbench.teardown import resource_kind
from idsbench.wire.netns import NETNS_DIR, WireEnds, add_netns, offloads_off, quiet_netns, wait_in_netns

APPEAR_TIMEOUT_S = 15.0   # a port a deleted namespace is still handing back
CARRIER_TIMEOUT_S = 15.0  # link negotiation after both ends came up


@dataclass(frozen=True)
class PortState:
    mtu: int
    up: bool
    promisc: bool


def port_state(ifname: str, netns: str | None = None) -> PortState | None:
    """MTU, admin state and promiscuity of an interface (None: not in that namespace)."""
    done = proc.run(["ip", *(["-n", netns] if netns else []), "-o", "link", "show", "dev", ifname], check=False)
    if done.returncode != 0:
        return None
    return parse_port_state(done.stdout)


def parse_port_state(line: str) -> PortState | None:
    """From `ip -o link show` output: `2: eth1: <BROADCAST,MULTICAST,PROMISC,UP,LOWER_UP> mtu 1500 …`."""
    if "<" not in line or " mtu " not in line:
        return None
    flags = line[line.index("<") + 1 : line.index(">")].split(",")
    mtu = int(line.split(" mtu ", 1)[1].split()[0])
    return PortState(mtu=mtu, up="UP" in flags, promisc="PROMISC" in flags)


@resource_kind
@dataclass(frozen=True)
class NicMoveResource:
    """A host NIC port lent to a namespace: undo moves it back and restores MTU, promisc and up/down."""

    kind: ClassVar[str] = "nic-move"
    name: str
    netns: str
    mtu: int
    up: bool
    promisc: bool

    def undo(self) -> None:
        if (NETNS_DIR / self.netns).exists() and port_state(self.name, self.netns) is not None:
            ns = ["-n", self.netns]
            proc.run(["ip", *ns, "link", "set", "dev", self.name, "down"], check=False)
            proc.run(["tc", *ns, "qdisc", "del", "dev", self.name, "clsact"], check=False)
            proc.run(["ip", *ns, "link", "set", "dev", self.name, "netns", "1"], check=False)
        if _wait_port(self.name, APPEAR_TIMEOUT_S) is None:
            return  # gone (e.g. its driver was unbound for vfio-pci): its own record restores it
        proc.run(["ip", "link", "set", "dev", self.name, "mtu", str(self.mtu),
                  "promisc", "on" if self.promisc else "off", "up" if self.up else "down"], check=False)

    def describe(self) -> str:
        return f"nic-move {self.name} (back from netns {self.netns})"


def _wait_port(ifname: str, timeout_s: float) -> PortState | None:
    deadline = time.monotonic() + timeout_s
    while True:
        state = port_state(ifname)
        if state is not None or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def carrier(ifname: str, netns: str) -> bool:
    done = proc.run(["cat", f"/sys/class/net/{ifname}/carrier"], netns=netns, check=False)
    return done.stdout.strip() == "1"


class NicWire:
    """`up()` lends the two ports to a sender and a sensor namespace (all in the supervisor's stack)."""

    def __init__(self, sup: Supervisor, sender_if: str, sensor_if: str | None, *, prefix: str = "ib",
                 mtu: int = 1500, sensor_ns: str | None = None):
        self.sup, self.sender_if, self.sensor_if = sup, sender_if, sensor_if
        self.prefix, self.mtu = prefix, mtu
        self.existing_sensor_ns = sensor_ns
        self.ident = secrets.token_hex(3)
        self.holders: list[Child] = []

    def up(self) -> WireEnds:
        stack = self.sup.teardown
        sender_ns = f"{self.prefix}{self.ident}-snd"
        sensor_ns = self.existing_sensor_ns or f"{self.prefix}{self.ident}-sen"
        add_netns(stack, sender_ns)
        if self.existing_sensor_ns:
            quiet_netns(sensor_ns)
        else:
            add_netns(stack, sensor_ns)
        self._lend(self.sender_if, sender_ns, promisc=False)
        if self.sensor_if:
            self._lend(self.sensor_if, sensor_ns, promisc=True)
            self._await_carrier(sender_ns, sensor_ns)
        holders = [self._holder(sender_ns), self._holder(sensor_ns)]
        return WireEnds(sender_ns, self.sender_if, sensor_ns, self.sensor_if or "", self.mtu,
                        holders[0].pid, holders[1].pid)

    def _lend(self, ifname: str, netns: str, *, promisc: bool) -> None:
        state = _wait_port(ifname, APPEAR_TIMEOUT_S)
        if state is None:
            raise EnvironmentMissing(f"[wire] names the interface {ifname}, which this host does not have "
                                     f"(`ip link show {ifname}`).",
                                     fix="name a NIC port of this host in wire.sender_interface/sensor_interface.")
        self.sup.teardown.push(NicMoveResource(ifname, netns, state.mtu, state.up, state.promisc))
        proc.run(["ip", "link", "set", "dev", ifname, "netns", netns])
        offloads_off(netns, ifname)
        done = proc.run(["ip", "-n", netns, "link", "set", "dev", ifname, "mtu", str(self.mtu)], check=False)
        if done.returncode != 0:
            raise EnvironmentMissing(f"{ifname} does not take MTU {self.mtu} (the trace's largest frame needs it): "
                                     f"{done.stderr.strip()[:200]}", fix="use a trace of standard frames, or a NIC "
                                     "with jumbo frames.")
        proc.run(["ip", "-n", netns, "link", "set", "dev", ifname, *(["promisc", "on"] if promisc else []), "up"])

    def _await_carrier(self, sender_ns: str, sensor_ns: str) -> None:
        deadline = time.monotonic() + CARRIER_TIMEOUT_S
        assert self.sensor_if is not None
        while not (carrier(self.sender_if, sender_ns) and carrier(self.sensor_if, sensor_ns)):
            if time.monotonic() > deadline:
                raise EnvironmentMissing(
                    f"no link between {self.sender_if} and {self.sensor_if} within {CARRIER_TIMEOUT_S:.0f} s.",
                    fix="cable the two ports together (or connect their backends), and check `ethtool IF`.")
            time.sleep(0.1)

    def _holder(self, ns: str) -> Child:
        child = self.sup.start(["sleep", "infinity"], name=f"holder-{ns}", netns=ns)
        self.holders.append(child)
        wait_in_netns(child.pid, ns)
        return child
