"""The lab's networks: a management bridge in a namespace of its own, reached from the controller
over one veth (one 198.18.0.0/15 address and the connected route of the lab's /24, nothing else),
each host's namespace attached to it, and one veth wire per pair (sender `eth1` ─ sensor `eth1`).

Every namespace, link and address is a teardown resource (see `lab.lab`)."""

from __future__ import annotations

import ipaddress
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from idsbench import proc
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.teardown import TeardownStack, resource_kind
from idsbench.wire.netns import LinkResource, add_netns, veth_wire

BENCH_NET = ipaddress.IPv4Network("198.18.0.0/15")  # RFC 2544 benchmarking range
BRIDGE = "br0"
MGMT_IF = "mgmt0"   # in each host: its management interface
WIRE_IF = "eth1"    # in each host: the pair's wire (capture on the sensor, transmit on the sender)


@resource_kind
@dataclass(frozen=True)
class AddressResource:
    """An address on a link of the root namespace (its connected route goes with it)."""

    kind: ClassVar[str] = "lab-address"
    ifname: str
    cidr: str

    def undo(self) -> None:
        if Path(f"/sys/class/net/{self.ifname}").exists():
            proc.run(["ip", "addr", "del", self.cidr, "dev", self.ifname], check=False)

    def describe(self) -> str:
        return f"address {self.cidr} on {self.ifname}"


def used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network the root namespace has an address or a route in."""
    nets = []
    addrs = json.loads(proc.run(["ip", "-j", "-4", "addr", "show"]).stdout or "[]")
    for link in addrs:
        for a in link.get("addr_info", []):
            nets.append(ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False))
    routes = json.loads(proc.run(["ip", "-j", "-4", "route", "show", "table", "all"]).stdout or "[]")
    for r in routes:
        dst = r.get("dst", "")
        if dst and dst != "default" and ":" not in dst:
            try:
                nets.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
            except ValueError:
                continue
    return nets


def choose_subnet(name: str, used: list[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """A /24 of 198.18.0.0/15 that overlaps nothing in `used`, starting from a hash of the lab
    name (concurrent labs of different names rarely probe the same /24s)."""
    subnets = list(BENCH_NET.subnets(new_prefix=24))
    start = zlib.crc32(name.encode()) % len(subnets)
    for i in range(len(subnets)):
        candidate = subnets[(start + i) % len(subnets)]
        if not any(candidate.overlaps(u) for u in used):
            return candidate
    raise EnvironmentMissing("every /24 of 198.18.0.0/15 is in use on this host.",
                             fix="remove unused labs (`idsbench lab down --all`).")


def check_name(name: str) -> None:
    if not (name[:1].isalpha() and name.isalnum() and name.islower() and len(name) <= 10):
        raise SpecError(f"lab name {name!r} is not 1-10 lowercase letters/digits starting with a letter.",
                        fix="pass --name e.g. `iblab` (link names derive from it and are limited to 15 characters).")


def disable_ipv6(ifname: str) -> None:
    path = Path(f"/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6")
    if path.exists():
        path.write_text("1")


def management(stack: TeardownStack, name: str, subnet: ipaddress.IPv4Network) -> str:
    """The bridge namespace and the controller's veth; returns the controller's address."""
    mgmt_ns = f"{name}-mgmt"
    add_netns(stack, mgmt_ns)
    proc.run(["ip", "-n", mgmt_ns, "link", "add", BRIDGE, "type", "bridge"])
    proc.run(["ip", "-n", mgmt_ns, "link", "set", BRIDGE, "up"])
    root_if = f"{name}-c"
    proc.run(["ip", "link", "add", root_if, "type", "veth", "peer", "name", "ctl", "netns", mgmt_ns])
    stack.push(LinkResource(root_if, None))
    disable_ipv6(root_if)
    controller = str(subnet.network_address + 1)
    cidr = f"{controller}/{subnet.prefixlen}"
    proc.run(["ip", "addr", "add", cidr, "dev", root_if])
    stack.push(AddressResource(root_if, cidr))
    proc.run(["ip", "link", "set", root_if, "up"])
    proc.run(["ip", "-n", mgmt_ns, "link", "set", "ctl", "master", BRIDGE, "up"])
    return controller


def host_namespace(stack: TeardownStack, lab: str, host: str, address: str, prefixlen: int) -> str:
    """A host's network namespace with its management interface on the bridge."""
    ns = f"{lab}-{host.replace('-', '')}"[:40]
    add_netns(stack, ns)
    port = host.replace("-", "")[:15]
    proc.run(["ip", "link", "add", MGMT_IF, "netns", ns, "type", "veth", "peer", "name", port, "netns", f"{lab}-mgmt"])
    proc.run(["ip", "-n", f"{lab}-mgmt", "link", "set", port, "master", BRIDGE, "up"])
    proc.run(["ip", "-n", ns, "addr", "add", f"{address}/{prefixlen}", "dev", MGMT_IF])
    proc.run(["ip", "-n", ns, "link", "set", MGMT_IF, "up"])
    return ns


def pair_wire(stack: TeardownStack, sender_ns: str, sensor_ns: str, mtu: int) -> None:
    """The pair's cable: frames only, no addresses, offloads off, the sensor end promiscuous."""
    veth_wire(stack, sender_ns, WIRE_IF, sensor_ns, WIRE_IF, mtu)
