"""Re-segment a capture's TCP super-frames to a wire MTU (`idsbench trace resegment`).

A capture taken on a host with TSO/GRO holds TCP frames far above any wire's MTU (16,162 and 40,934
bytes on captures users brought; 12,506 in ndpi_pinterest.pcap): the NIC or the kernel merged the
segments before the capture saw them. Replayed as they are, the wire's MTU must follow them, and capture
paths that cannot take such frames then refuse (AF_XDP's 4 KiB frames, XDP in a veth's driver above MTU
3506: idsbench.capture's frame limits). This splits each such frame as GSO puts it on a wire: segments of
at most MSS payload bytes (the MTU less the IP and TCP headers; the TCP options are kept in each),
sequence numbers advanced, FIN and PSH on the last segment only, CWR on the first only, IPv4's
identification incremented per segment, the lengths and checksums computed anew (so a super-frame whose
checksum the capture saw only partly, as checksum offload leaves it, comes out valid). Every segment keeps
the frame's timestamp. Frames within the MTU are copied as they are.

A frame above the MTU that is not a whole TCP segment over IPv4 or IPv6 (UDP, an IP fragment, an IPv6
extension header, a frame the capture truncated) has no such split: the input is refused, naming the
first such frames.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from idsbench.errors import InputError
from idsbench.store.atomic import write_bytes
from idsbench.traffic.checksum import internet_checksum
from idsbench.traffic.pcap import iter_packets
from idsbench.traffic.protocols import PCAP_MAGIC_NS

ETHERNET = 1
ETH_HEADER = 14
VLAN_TYPES = (0x8100, 0x88A8)
IPV4, IPV6, TCP = 0x0800, 0x86DD, 6
MIN_MTU = 576
SNAPLEN = 262_144
FIN, PSH, CWR = 0x01, 0x08, 0x80
FIX = "re-segment only TCP super-frames (GSO/GRO), or capture the traffic with offloads off (ethtool -K IF gro off tso off gso off)."


@dataclass(frozen=True)
class ResegmentResult:
    """What `resegment` did: packets in and out, the frames split, the largest frame written."""

    packets_in: int
    packets_out: int
    frames_split: int
    max_frame_in: int
    max_frame_out: int
    mtu: int

    def to_dict(self) -> dict[str, int]:
        return {"packets_in": self.packets_in, "packets_out": self.packets_out, "frames_split": self.frames_split,
                "max_frame_in": self.max_frame_in, "max_frame_out": self.max_frame_out, "mtu": self.mtu}


class Unsplittable(ValueError):
    """A frame above the MTU that is not one whole TCP segment over IPv4/IPv6 (why)."""


def split_frame(frame: bytes, mtu: int) -> list[bytes]:
    """`frame` (Ethernet) as the frames GSO would send at `mtu` (itself when it fits); Unsplittable."""
    l3 = ETH_HEADER
    ethertype = struct.unpack_from("!H", frame, 12)[0] if len(frame) >= ETH_HEADER else 0
    while ethertype in VLAN_TYPES and len(frame) >= l3 + 4:
        ethertype = struct.unpack_from("!H", frame, l3 + 2)[0]
        l3 += 4
    if len(frame) - l3 <= mtu:
        return [frame]
    if ethertype == IPV4:
        return _split_v4(frame, l3, mtu)
    if ethertype == IPV6:
        return _split_v6(frame, l3, mtu)
    raise Unsplittable(f"ethertype 0x{ethertype:04x}, not IPv4 or IPv6")


def _split_v4(frame: bytes, l3: int, mtu: int) -> list[bytes]:
    ihl = (frame[l3] & 0x0F) * 4
    total, ident, frag, proto = struct.unpack_from("!HHHxB", frame, l3 + 2)
    if proto != TCP:
        raise Unsplittable(f"IPv4 protocol {proto}, not TCP")
    if frag & 0x3FFF:
        raise Unsplittable("an IPv4 fragment")
    end = l3 + total
    if end > len(frame) or ihl < 20:
        raise Unsplittable("the capture holds less than its IPv4 length (truncated)")
    segments = _segments(frame, l3 + ihl, end, mtu - ihl)
    out = []
    for k, tcp in enumerate(segments):
        header = bytearray(frame[l3:l3 + ihl])
        struct.pack_into("!HH", header, 2, ihl + len(tcp), (ident + k) & 0xFFFF)
        struct.pack_into("!H", header, 10, 0)
        struct.pack_into("!H", header, 10, internet_checksum(bytes(header)))
        pseudo = frame[l3 + 12:l3 + 20] + struct.pack("!BBH", 0, TCP, len(tcp))
        out.append(frame[:l3] + bytes(header) + _with_checksum(tcp, pseudo))
    return out


def _split_v6(frame: bytes, l3: int, mtu: int) -> list[bytes]:
    if len(frame) < l3 + 40:
        raise Unsplittable("a truncated IPv6 header")
    payload_len, next_header = struct.unpack_from("!HB", frame, l3 + 4)
    if next_header != TCP:
        raise Unsplittable(f"IPv6 next header {next_header}, not TCP (extension headers are not split)")
    end = l3 + 40 + payload_len
    if payload_len == 0 or end > len(frame):
        raise Unsplittable("the capture holds less than its IPv6 payload length (truncated, or a jumbogram)")
    out = []
    for tcp in _segments(frame, l3 + 40, end, mtu - 40):
        header = bytearray(frame[l3:l3 + 40])
        struct.pack_into("!H", header, 4, len(tcp))
        pseudo = frame[l3 + 8:l3 + 40] + struct.pack("!IxxxB", len(tcp), TCP)
        out.append(frame[:l3] + bytes(header) + _with_checksum(tcp, pseudo))
    return out


def _segments(frame: bytes, l4: int, end: int, room: int) -> list[bytearray]:
    """The TCP segments (header with options, then payload; checksum zeroed) whose IP payload fits `room`."""
    if end - l4 < 20:
        raise Unsplittable("a truncated TCP header")
    doff = (frame[l4 + 12] >> 4) * 4
    if doff < 20 or l4 + doff > end:
        raise Unsplittable("a TCP header longer than its packet")
    mss = room - doff
    if mss <= 0:
        raise Unsplittable(f"its TCP and IP headers alone exceed the MTU ({doff} bytes of TCP header)")
    seq = struct.unpack_from("!I", frame, l4 + 4)[0]
    flags = frame[l4 + 13]
    payload = frame[l4 + doff:end]
    pieces = [payload[i:i + mss] for i in range(0, len(payload), mss)] or [b""]
    out = []
    for k, piece in enumerate(pieces):
        header = bytearray(frame[l4:l4 + doff])
        struct.pack_into("!I", header, 4, (seq + k * mss) & 0xFFFFFFFF)
        last, first = k == len(pieces) - 1, k == 0
        header[13] = flags & ~((0 if last else FIN | PSH) | (0 if first else CWR)) & 0xFF
        struct.pack_into("!H", header, 16, 0)
        out.append(header + piece)
    return out


def _with_checksum(tcp: bytearray, pseudo: bytes) -> bytes:
    struct.pack_into("!H", tcp, 16, internet_checksum(pseudo + bytes(tcp)))
    return bytes(tcp)


def resegment(src: Path, dest: Path, mtu: int = 1500) -> ResegmentResult:
    """Write `src` to `dest` (classic pcap, ns timestamps) with every frame above `mtu` split (module doc);
    InputError naming the input and the fix for a frame that cannot be split or a link type other than
    Ethernet. `dest` is written whole or not at all."""
    if not MIN_MTU <= mtu <= 65_535:
        raise InputError(f"--mtu {mtu} is not a wire MTU.", fix=f"give an MTU from {MIN_MTU} to 65535 (Ethernet: 1500).")
    records = [struct.pack("<IHHiIII", PCAP_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, ETHERNET)]
    n_in = n_out = split = max_in = max_out = 0
    bad: list[str] = []
    for index, packet in enumerate(iter_packets(src)):
        n_in += 1
        max_in = max(max_in, packet.wirelen)
        if packet.link_type != ETHERNET:
            raise InputError(f"{src}: packet {index} has link type {packet.link_type}, not Ethernet: only Ethernet "
                             "captures are re-segmented.", fix="convert the capture to Ethernet (e.g. tcprewrite --dlt=enet).")
        try:
            if packet.caplen < packet.wirelen and packet.wirelen - ETH_HEADER > mtu:
                raise Unsplittable(f"the capture kept {packet.caplen} of its {packet.wirelen} bytes")
            frames = split_frame(packet.data, mtu)
        except Unsplittable as why:
            bad.append(f"packet {index} ({packet.wirelen} bytes): {why}")
            continue
        if len(frames) > 1:
            split += 1
        seconds, nanos = divmod(packet.ts_ns, 1_000_000_000)
        for frame in frames:
            wire = packet.wirelen if len(frames) == 1 else len(frame)
            records.append(struct.pack("<IIII", seconds, nanos, len(frame), wire) + frame)
            max_out = max(max_out, wire)
            n_out += 1
    if bad:
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        raise InputError(f"{src}: {len(bad)} frame(s) above MTU {mtu} cannot be split into TCP segments: "
                         f"{'; '.join(bad[:3])}{more}.", fix=FIX)
    write_bytes(dest, b"".join(records))
    return ResegmentResult(n_in, n_out, split, max_in, max_out, mtu)
