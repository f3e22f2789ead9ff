"""Is an AF_PACKET engine capturing yet? Its packet sockets, read from /proc.

Some engines log "ready" before their capture threads have bound their sockets: Snort 3 prints
"Commencing packet processing" and only then starts the DAQ in each packet thread (measured: with
`-z 2`, a replay started right after that line lost a third of its packets). A packet socket is
capturing once it is bound to the interface with protocol ETH_P_ALL (before that libdaq's afpacket
binds it with protocol 0, which receives nothing). `/proc/<pid>/net/packet` lists the packet sockets
of the process's network namespace; `/proc/<pid>/fd` says which of them the process holds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ETH_P_ALL = 0x0003


@dataclass(frozen=True)
class PacketSocket:
    """One line of /proc/net/packet."""

    inode: int
    sock_type: int  # 3 = SOCK_RAW, 2 = SOCK_DGRAM
    protocol: int  # host order, e.g. 0x0003 = ETH_P_ALL; 0 = receives nothing
    ifindex: int  # 0 = not bound to an interface
    running: bool

    @property
    def capturing(self) -> bool:
        return self.running and self.protocol == ETH_P_ALL and self.ifindex > 0


def parse_proc_net_packet(text: str) -> list[PacketSocket]:
    """Lines of /proc/net/packet: `sk RefCnt Type Proto Iface R Rmem User Inode` (Proto in hex)."""
    out: list[PacketSocket] = []
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 9:
            continue
        out.append(PacketSocket(inode=int(cols[8]), sock_type=int(cols[2]), protocol=int(cols[3], 16),
                                ifindex=int(cols[4]), running=cols[5] == "1"))
    return out


def socket_inodes(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """Inodes of the sockets process `pid` holds (empty when it is gone)."""
    inodes: set[int] = set()
    fd_dir = proc / str(pid) / "fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(fd_dir / name)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:[") and target.endswith("]"):
            inodes.add(int(target[8:-1]))
    return inodes


def capturing_sockets(pid: int, ifindex: int | None, proc: Path = Path("/proc")) -> int:
    """How many packet sockets of process `pid` capture on interface `ifindex` (in its namespace);
    `ifindex=None`: on any interface."""
    try:
        table = (proc / str(pid) / "net" / "packet").read_text()
    except OSError:
        return 0
    held = socket_inodes(pid, proc)
    return sum(1 for s in parse_proc_net_packet(table)
               if s.inode in held and s.capturing and (ifindex is None or s.ifindex == ifindex))


def interface_index(pid: int, interface: str, proc: Path = Path("/proc")) -> int | None:
    """ifindex of `interface` in the network namespace of process `pid`, from
    /proc/<pid>/net/dev_mcast (`ifindex name users global address` per multicast address; every
    up Ethernet-like link has at least the IPv4 all-hosts group). None when it is not listed: then
    ask `ip -n NS -o link show IF` (its first field)."""
    try:
        text = (proc / str(pid) / "net" / "dev_mcast").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 2 and cols[1] == interface:
            return int(cols[0])
    return None
