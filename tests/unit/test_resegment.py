"""Re-segmenting TCP super-frames to a wire MTU (traffic/resegment.py): segments as GSO sends them —
payload split at the MSS, sequence numbers, flags, IPv4 identification, lengths and checksums — and the
frames that cannot be split refused, naming them."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from idsbench.errors import InputError
from idsbench.traffic.checksum import internet_checksum
from idsbench.traffic.pcap import iter_packets
from idsbench.traffic.resegment import Unsplittable, resegment, split_frame

MAC = bytes.fromhex("020000000001") + bytes.fromhex("020000000002")
OPTIONS = bytes.fromhex("0101080a0000000100000002")  # NOP NOP timestamps: a 32-byte TCP header
ACK, PSH, FIN, CWR = 0x10, 0x08, 0x01, 0x80


def _tcp(seq: int, flags: int, payload: bytes) -> bytes:
    return struct.pack("!HHIIBBHHH", 40000, 443, seq, 7, (32 // 4) << 4, flags, 512, 0xBEEF, 0) + OPTIONS + payload


def v4_frame(payload: bytes, seq: int = 1000, flags: int = ACK | PSH | FIN | CWR, ident: int = 0xFFFE,
             vlan: bool = False) -> bytes:
    tcp = _tcp(seq, flags, payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), ident, 0x4000, 64, 6, 0, bytes([10, 0, 0, 1]),
                     bytes([10, 0, 0, 2]))
    tag = struct.pack("!HH", 0x8100, 5) if vlan else b""
    return MAC + tag + struct.pack("!H", 0x0800) + ip + tcp


def v6_frame(payload: bytes, seq: int = 1000, flags: int = ACK | PSH, next_header: int = 6) -> bytes:
    tcp = _tcp(seq, flags, payload)
    ip = struct.pack("!IHBB16s16s", 6 << 28, len(tcp), next_header, 64, b"\x20\x01" + b"\0" * 13 + b"\x01",
                     b"\x20\x01" + b"\0" * 13 + b"\x02")
    return MAC + struct.pack("!H", 0x86DD) + ip + tcp


def _tcp_ok_v4(frame: bytes, l3: int) -> bool:
    ihl = (frame[l3] & 15) * 4
    tcp = frame[l3 + ihl:]
    return internet_checksum(frame[l3 + 12:l3 + 20] + struct.pack("!BBH", 0, 6, len(tcp)) + tcp) == 0


def test_an_ipv4_super_frame_becomes_mss_segments_as_gso_sends_them() -> None:
    payload = bytes(range(256)) * 40  # 10,240 bytes
    segments = split_frame(v4_frame(payload), 1500)
    mss = 1500 - 20 - 32
    assert len(segments) == -(-len(payload) // mss) == 8
    joined = b"".join(s[14 + 20 + 32:] for s in segments)
    assert joined == payload
    for k, s in enumerate(segments):
        assert len(s) - 14 <= 1500
        total, ident = struct.unpack_from("!HH", s, 16)
        assert total == len(s) - 14 and ident == (0xFFFE + k) & 0xFFFF  # the identification wraps
        assert internet_checksum(s[14:34]) == 0 and _tcp_ok_v4(s, 14)
        seq, flags = struct.unpack_from("!I", s, 38)[0], s[14 + 20 + 13]
        assert seq == 1000 + k * mss
        assert s[14 + 20 + 20:14 + 20 + 32] == OPTIONS
        last, first = k == len(segments) - 1, k == 0
        assert bool(flags & FIN) == last and bool(flags & PSH) == last and bool(flags & CWR) == first
        assert flags & ACK


def test_a_vlan_tagged_frame_and_an_ipv6_frame_split_too() -> None:
    tagged = split_frame(v4_frame(b"x" * 4000, vlan=True), 1500)
    assert len(tagged) == 3 and all(s[12:16] == b"\x81\x00\x00\x05" and _tcp_ok_v4(s, 18) for s in tagged)
    segments = split_frame(v6_frame(b"y" * 5000, seq=0xFFFFFF00), 1500)
    mss = 1500 - 40 - 32
    assert len(segments) == 4 and b"".join(s[14 + 40 + 32:] for s in segments) == b"y" * 5000
    for k, s in enumerate(segments):
        assert struct.unpack_from("!H", s, 18)[0] == len(s) - 54
        tcp = s[54:]
        pseudo = s[22:54] + struct.pack("!IxxxB", len(tcp), 6)
        assert internet_checksum(pseudo + tcp) == 0
        assert struct.unpack_from("!I", s, 58)[0] == (0xFFFFFF00 + k * mss) & 0xFFFFFFFF  # the sequence wraps


def test_a_frame_within_the_mtu_is_kept_byte_for_byte() -> None:
    frame = v4_frame(b"z" * 100)
    assert split_frame(frame, 1500) == [frame]


@pytest.mark.parametrize("frame, why", [
    (v6_frame(b"u" * 3000, next_header=17), "next header 17"),
    (MAC + b"\x08\x06" + b"\0" * 3000, "ethertype 0x0806"),
])
def test_what_is_not_one_tcp_segment_is_unsplittable(frame: bytes, why: str) -> None:
    with pytest.raises(Unsplittable, match=why):
        split_frame(frame, 1500)


def _pcap(path: Path, frames: list[bytes], truncate: int | None = None) -> Path:
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i, f in enumerate(frames):
        kept = f[:truncate] if truncate else f
        out.append(struct.pack("<IIII", 100 + i, 500, len(kept), len(f)) + kept)
    path.write_bytes(b"".join(out))
    return path


def test_a_capture_is_rewritten_with_its_timestamps_and_the_counts_said(tmp_path: Path) -> None:
    src = _pcap(tmp_path / "in.pcap", [v4_frame(b"a" * 200), v4_frame(b"b" * 12_000), v6_frame(b"c" * 3000)])
    result = resegment(src, tmp_path / "out.pcap", mtu=1500)
    packets = list(iter_packets(tmp_path / "out.pcap"))
    assert result.packets_in == 3 and result.frames_split == 2 and result.packets_out == len(packets) == 1 + 9 + 3
    assert result.max_frame_in == len(v4_frame(b"b" * 12_000)) and result.max_frame_out == max(p.wirelen for p in packets) <= 1514
    assert [p.ts_ns for p in packets[:3]] == [100_000_500_000, 101_000_500_000, 101_000_500_000]


def test_unsplittable_frames_are_named_and_nothing_is_written(tmp_path: Path) -> None:
    src = _pcap(tmp_path / "in.pcap", [v4_frame(b"a" * 200), v6_frame(b"u" * 3000, next_header=17)])
    with pytest.raises(InputError, match=r"1 frame\(s\) above MTU 1500 cannot be split.*packet 1 \(3086 bytes\)"):
        resegment(src, tmp_path / "out.pcap")
    assert not (tmp_path / "out.pcap").exists()
    truncated = _pcap(tmp_path / "cut.pcap", [v4_frame(b"t" * 4000)], truncate=96)
    with pytest.raises(InputError, match="kept 96 of its"):
        resegment(truncated, tmp_path / "out.pcap")
    with pytest.raises(InputError, match="--mtu 100 is not a wire MTU"):
        resegment(src, tmp_path / "out.pcap", mtu=100)
