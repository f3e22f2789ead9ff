"""A macvtap (mode passthru) on the wire's sensor end: how the container-vtap and vm setups see
the wire, as a host NIC mirrored to a guest or a container would.

AF_PACKET on a macvtap sees every replayed frame once the macvtap is UP (while it is down, recv
fails with ENETDOWN); qemu reads the same frames from its character device.

Broadcast and multicast frames do not reach a macvlan/macvtap in the softirq that receives them: the
lower device queues a clone for a work item (drivers/net/macvlan.c, the port's broadcast queue, 1,000
frames by default) and counts a full queue's frames as its own `rx_dropped`. That work item runs on the
CPU the frame arrived on, the sender's, where the native replayer holds the CPU at SCHED_FIFO: the kernel
leaves ordinary tasks 5% of each second, so the queue fills. Measured here (a RT-priority sender, 5,000
back-to-back broadcasts into a passthru macvtap's lower veth): 3,933 dropped with the default queue, 0 with
20,000. A trace's multicast share (19% of sv_base64-decode-5885.pcap) at 50k pps is ~9,500 a second:
`BC_QUEUE_LEN` holds several seconds of that.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from idsbench import proc
from idsbench.teardown import TeardownStack
from idsbench.wire.netns import LinkResource, offloads_off

BC_QUEUE_LEN = 65536  # the lower device's broadcast/multicast queue (module docstring); clones, freed as delivered


@dataclass(frozen=True)
class Macvtap:
    name: str
    netns: str
    mtu: int


def create(stack: TeardownStack, *, lower: str, netns: str, name: str, mtu: int) -> Macvtap:
    """A passthru macvtap on `lower` inside `netns` (registered for removal), offloads off, with a broadcast
    queue that holds what arrives while the replayer keeps the CPU (module docstring)."""
    proc.run(["ip", "-n", netns, "link", "add", "link", lower, "name", name, "mtu", str(mtu),
              "type", "macvtap", "mode", "passthru", "bcqueuelen", str(BC_QUEUE_LEN)])
    stack.push(LinkResource(name, netns))
    offloads_off(netns, name)
    return Macvtap(name, netns, mtu)


def move(stack: TeardownStack, tap: Macvtap, target_ns: str) -> Macvtap:
    """Move the macvtap into another namespace (e.g. a container's)."""
    proc.run(["ip", "-n", tap.netns, "link", "set", tap.name, "netns", target_ns])
    stack.push(LinkResource(tap.name, target_ns))
    return Macvtap(tap.name, target_ns, tap.mtu)


def bring_up(tap: Macvtap) -> None:
    """UP and promiscuous: nothing reaches AF_PACKET or qemu before, and without promisc the
    macvtap's own multicast filter drops frames for groups nobody joined."""
    proc.run(["ip", "-n", tap.netns, "link", "set", tap.name, "mtu", str(tap.mtu), "promisc", "on", "up"])


def char_device(tap: Macvtap, node: Path) -> str:
    """Make `node` the macvtap's character device (our own node: /dev/tapN is named after an
    ifindex that is only unique per namespace); returns the macvtap's MAC address."""
    sysfs = f"/sys/class/net/{tap.name}"
    ifindex = proc.run(["cat", f"{sysfs}/ifindex"], netns=tap.netns).stdout.strip()
    dev = proc.run(["cat", f"{sysfs}/macvtap/tap{ifindex}/dev"], netns=tap.netns).stdout.strip()
    mac = proc.run(["cat", f"{sysfs}/address"], netns=tap.netns).stdout.strip()
    major, minor = (int(x) for x in dev.split(":"))
    os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(major, minor))
    return mac


def usable() -> bool:
    """Probe: a macvtap on a veth in a throw-away namespace (built-in or module, either works)."""
    if os.geteuid() != 0:
        return False
    ns = f"ibdoctor{os.getpid()}"
    if proc.run(["ip", "netns", "add", ns], check=False).returncode != 0:
        return False
    try:
        proc.run(["ip", "-n", ns, "link", "add", "ibp0", "type", "veth", "peer", "name", "ibp1"], check=False)
        return proc.run(["ip", "-n", ns, "link", "add", "link", "ibp0", "name", "ibvt0", "type", "macvtap",
                         "mode", "passthru"], check=False).returncode == 0
    finally:
        proc.run(["ip", "netns", "delete", ns], check=False)
