"""A sender and a sensor namespace joined by a veth pair, for the Suricata, capture-engine and Snort tests.

Names start with the test prefix; IPv6 is off before the link exists and offloads are off, so only
replayed frames cross it. Everything is deleted on exit, also after errors.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from idsbench import proc

MTU = 9000


@dataclass(frozen=True)
class Wire:
    sender_ns: str
    sender_if: str
    sensor_ns: str
    sensor_if: str


@contextmanager
def veth_pair(prefix: str, mtu: int = MTU) -> Iterator[Wire]:
    tag = f"{prefix}{uuid.uuid4().hex[:6]}"
    wire = Wire(f"{tag}-snd", f"{tag}t", f"{tag}-sen", f"{tag}r")
    created: list[str] = []
    try:
        for ns in (wire.sender_ns, wire.sensor_ns):
            proc.run(["ip", "netns", "add", ns])
            created.append(ns)
            proc.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                      "net.ipv6.conf.default.disable_ipv6=1"], netns=ns)
        proc.run(["ip", "link", "add", wire.sender_if, "netns", wire.sender_ns, "mtu", str(mtu), "type", "veth",
                  "peer", "name", wire.sensor_if, "netns", wire.sensor_ns, "mtu", str(mtu)])
        for ns, ifname in ((wire.sender_ns, wire.sender_if), (wire.sensor_ns, wire.sensor_if)):
            proc.run(["ethtool", "-K", ifname, "tso", "off", "gso", "off", "gro", "off", "tx", "off",
                      "rx", "off", "rxvlan", "off", "txvlan", "off"], netns=ns, check=False)
            proc.run(["ip", "-n", ns, "link", "set", ifname, "up"])
        yield wire
    finally:
        for ns in reversed(created):
            proc.run(["ip", "netns", "delete", ns], check=False)
