"""Ethernet/IPv4 frame builders and the packet sink that flows write into.

Frames are built with zero checksums; `stream.PcapStream` fills the checksums of each batch at once
as it writes the records.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

_ETH_IP_TCP = struct.Struct("!6s6sH BBHHHBBH4s4s HHIIBBHHH")
_ETH_IP_UDP = struct.Struct("!6s6sH BBHHHBBH4s4s HHHH")
_ETH_IP_ICMP = struct.Struct("!6s6sH BBHHHBBH4s4s BBHHH")
ETH_IPV4 = 0x0800
PROTO_ICMP, PROTO_TCP, PROTO_UDP = 1, 6, 17

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
GATEWAY_MAC = bytes.fromhex("020000000001")


def mac_for(ip: bytes) -> bytes:
    """A stable, locally administered MAC for a host address."""
    return b"\x02\x1d" + ip


@dataclass
class Sink:
    """Collects (timestamp ns, frame) in flow order; `markers` counts embedded markers per sid."""

    ts: list[int] = field(default_factory=list)
    frames: list[bytes] = field(default_factory=list)
    markers: dict[int, int] = field(default_factory=dict)
    flows: int = 0

    def __len__(self) -> int:
        return len(self.frames)


class Path:
    """One direction between two hosts: constant Ethernet/IP fields packed once."""

    __slots__ = ("dst", "dst_mac", "ip_id", "src", "src_mac", "ttl")

    def __init__(self, src: bytes, dst: bytes, src_mac: bytes, dst_mac: bytes, ttl: int, ip_id: int):
        self.src, self.dst, self.src_mac, self.dst_mac = src, dst, src_mac, dst_mac
        self.ttl = ttl
        self.ip_id = ip_id

    def _next_id(self) -> int:
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        return self.ip_id

    def tcp(self, sport: int, dport: int, seq: int, ack: int, flags: int, window: int,
            payload: bytes = b"", options: bytes = b"") -> bytes:
        hlen = 20 + len(options)
        total = 20 + hlen + len(payload)
        head = _ETH_IP_TCP.pack(self.dst_mac, self.src_mac, ETH_IPV4, 0x45, 0, total, self._next_id(),
                                0x4000, self.ttl, PROTO_TCP, 0, self.src, self.dst, sport, dport,
                                seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (hlen // 4) << 4, flags, window, 0, 0)
        return head + options + payload if options else head + payload

    def udp(self, sport: int, dport: int, payload: bytes) -> bytes:
        return udp_frame(self.dst_mac, self.src_mac, self.ttl, self._next_id(), self.src, self.dst, sport, dport,
                         payload)

    def icmp(self, itype: int, code: int, ident: int, seq: int, payload: bytes) -> bytes:
        total = 28 + len(payload)
        return _ETH_IP_ICMP.pack(self.dst_mac, self.src_mac, ETH_IPV4, 0x45, 0, total, self._next_id(), 0,
                                 self.ttl, PROTO_ICMP, 0, self.src, self.dst, itype, code, 0, ident,
                                 seq) + payload


def udp_frame(dst_mac: bytes, src_mac: bytes, ttl: int, ip_id: int, src: bytes, dst: bytes, sport: int,
              dport: int, payload: bytes) -> bytes:
    return _ETH_IP_UDP.pack(dst_mac, src_mac, ETH_IPV4, 0x45, 0, 28 + len(payload), ip_id, 0, ttl, PROTO_UDP, 0,
                            src, dst, sport, dport, 8 + len(payload), 0) + payload
