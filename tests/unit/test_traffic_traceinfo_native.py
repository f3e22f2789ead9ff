"""The native trace reader (ibtrace) gives exactly the TraceInfo of the numpy reader: on odd frames
(MPLS, QinQ, IPv6 extension headers and fragments, cooked/loopback/raw links, snaplen cuts), on
timestamps out of order or spread over years, on pcapng, on every shared capture and on the
synthesized profiles; and the same InputError for corrupt files."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from idsbench.errors import InputError
from idsbench.traffic.pcap import read_info
from idsbench.traffic.synth import synthesize

from .test_traffic_pcap import classic, pcapng

PCAPS = Path(__file__).resolve().parents[3] / "shared" / "data" / "pcaps"
A4, B4 = bytes([10, 0, 0, 1]), bytes([192, 0, 2, 7])
A6 = bytes.fromhex("20010db8000000000000000000000001")
B6 = bytes.fromhex("ffffffffffffffffffffffffffffffff")  # all-ones words must not confuse the flow set
MAC = b"\x02" * 6 + b"\x04" * 6


def ipv4(proto: int, l4: bytes, frag: int = 0, ihl: int = 5, src: bytes = A4, dst: bytes = B4) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(l4), 1, frag, 64, proto, 0, src, dst) + \
        b"\0" * (4 * ihl - 20) + l4


def ipv6(nh: int, payload: bytes, src: bytes = A6, dst: bytes = B6) -> bytes:
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nh, 64, src, dst) + payload


def ports(sport: int, dport: int, extra: bytes = b"x" * 12) -> bytes:
    return struct.pack("!HH", sport, dport) + extra


def eth(etype: int, body: bytes, tags: tuple[int, ...] = ()) -> bytes:
    return MAC + b"".join(struct.pack("!HH", t, 5) for t in tags) + struct.pack("!H", etype) + body


def mpls(body: bytes, labels: int = 2) -> bytes:
    stack = b"".join(struct.pack("!I", (100 + i) << 12 | (1 << 8 if i == labels - 1 else 0) | 64)
                     for i in range(labels))
    return eth(0x8847, stack + body)


ODD_FRAMES: list[bytes] = [
    eth(0x0800, ipv4(6, ports(1000, 80))),
    eth(0x0800, ipv4(6, ports(80, 1000))),  # the same flow backwards
    eth(0x0800, ipv4(17, ports(5353, 5353)), tags=(0x8100, 0x8100)),  # QinQ
    eth(0x0800, ipv4(17, ports(1, 2)), tags=(0x88A8, 0x8100, 0x8100)),  # a third tag: not decoded
    mpls(ipv4(17, ports(123, 123))),
    mpls(ipv6(6, ports(40000, 443)), labels=3),
    mpls(b"\x45", labels=1),  # the label ends where the capture does
    eth(0x0800, ipv4(6, ports(1000, 80), frag=0x2000 | 0)),  # first fragment: has ports
    eth(0x0800, ipv4(6, b"later fragment", frag=185)),  # not the first: no ports
    eth(0x0800, ipv4(17, ports(9, 10), ihl=7)),
    eth(0x0800, ipv4(132, ports(2905, 2905))),  # SCTP
    eth(0x0800, ipv4(1, b"\x08\x00" + b"\0" * 30)),
    eth(0x0800, ipv4(47, b"gre")),
    eth(0x0800, b"\x45\x00"),  # truncated IPv4 header
    eth(0x86DD, ipv6(0, b"\x2c\x00" + b"\0" * 6 + b"\x11\x00\x00\x00\x00\x00\x00\x01" + ports(53, 9999))),
    eth(0x86DD, ipv6(44, b"\x11\x00\x00\x08\x00\x00\x00\x01" + b"later")),  # non-first fragment
    eth(0x86DD, ipv6(60, b"\x3c\x00" + b"\0" * 6 + b"\x3c\x00" + b"\0" * 6 + b"\x06\x00" + b"\0" * 6 + ports(1, 2))),
    eth(0x86DD, ipv6(17, ports(443, 50000), src=B6, dst=A6)),
    eth(0x0806, b"\0" * 28),
    b"\x01\x02",  # shorter than an Ethernet header
]


def odd_capture(path: Path, stamps: list[int], snap: int = 65535, link: int = 1, frames: list[bytes] | None = None,
                nanos: bool = True) -> Path:
    frames = ODD_FRAMES if frames is None else frames
    out = [struct.pack("<IHHiIII", 0xA1B23C4D if nanos else 0xA1B2C3D4, 2, 4, 0, 0, snap, link)]
    for i, f in enumerate(frames):
        ts = stamps[i % len(stamps)] + i
        cap = f[:snap]
        out.append(struct.pack("<IIII", ts // 10**9, ts % 10**9 if nanos else ts % 10**9 // 1000, len(cap), len(f)) + cap)
    path.write_bytes(b"".join(out))
    return path


def same(path: Path, tmp_path: Path) -> None:
    fast = read_info(path, cache_dir=tmp_path / "n", use_cache=False, engine="native")
    slow = read_info(path, cache_dir=tmp_path / "p", use_cache=False, engine="python")
    assert fast.to_dict() == slow.to_dict()


@pytest.mark.parametrize("snap", [65535, 40, 20])
def test_odd_frames(tmp_path, snap):
    same(odd_capture(tmp_path / "odd.pcap", [10**18 + k * 10**8 for k in range(len(ODD_FRAMES))], snap=snap),
         tmp_path)


def test_timestamps_out_of_order_and_far_apart(tmp_path):
    base = 1_600_000_000 * 10**9
    same(odd_capture(tmp_path / "back.pcap", [base + 5 * 10**9 + 7, base, base + 3 * 10**9 + 999_999_999]), tmp_path)
    same(odd_capture(tmp_path / "years.pcap", [base, base + 10**17]), tmp_path)  # sparse seconds
    same(odd_capture(tmp_path / "same.pcap", [base]), tmp_path)  # zero duration


@pytest.mark.parametrize("link,frame", [
    (113, b"\0" * 14 + b"\x08\x00" + ipv4(17, ports(53, 1))),  # Linux cooked v1
    (276, b"\x86\xdd" + b"\0" * 18 + ipv6(6, ports(22, 5000))),  # Linux cooked v2
    (0, b"\x02\0\0\0" + ipv4(6, ports(1, 443))),  # BSD loopback, host order
    (108, b"\0\0\0\x1e" + ipv6(17, ports(53, 53))),  # OpenBSD loop, network order AF_INET6
    (101, ipv4(6, ports(25, 2525))),
    (228, ipv6(6, ports(1, 2))),  # IPv4 link type holding IPv6: the version nibble decides
    (147, b"user link type"),
])
def test_link_types(tmp_path, link, frame):
    same(odd_capture(tmp_path / "link.pcap", [10**18], link=link, frames=[frame, frame[:3], frame]), tmp_path)


@pytest.mark.parametrize("endian", ["<", ">"])
def test_hand_built_classic_and_pcapng(tmp_path, endian):
    a = tmp_path / "a.pcap"
    a.write_bytes(classic(endian=endian, nanos=endian == ">"))
    same(a, tmp_path)
    ng = tmp_path / "a.pcapng"
    ng.write_bytes(pcapng(endian))
    same(ng, tmp_path)


@pytest.mark.parametrize("profile", ["mixed", "web", "dns", "small-packets", "bulk"])
def test_synthesized_profiles(tmp_path, profile):
    same(synthesize(profile, tmp_path / f"{profile}.pcap", packets=3000, seed=3).path, tmp_path)


REAL = sorted(PCAPS.glob("*.pcap")) if PCAPS.is_dir() else []


@pytest.mark.skipif(not REAL, reason=f"real captures not found at {PCAPS}")
@pytest.mark.parametrize("pcap", REAL, ids=[p.name for p in REAL])
def test_real_captures(tmp_path, pcap):
    same(pcap, tmp_path)


@pytest.mark.parametrize("cut,what", [(-3, "cut short"), (24 + 10, "cut short"), (20, "truncated")])
def test_corrupt_classic_names_the_file(tmp_path, cut, what):
    data = classic()
    f = tmp_path / "bad.pcap"
    f.write_bytes(data[:cut])
    with pytest.raises(InputError) as err:
        read_info(f, cache_dir=tmp_path, use_cache=False, engine="native")
    assert str(f) in str(err.value) and what in str(err.value) and err.value.fix


def test_corrupt_pcapng_names_the_file(tmp_path):
    f = tmp_path / "bad.pcapng"
    f.write_bytes(pcapng()[:-6])
    with pytest.raises(InputError) as err:
        read_info(f, cache_dir=tmp_path, use_cache=False, engine="native")
    assert str(f) in str(err.value) and "truncated" in str(err.value)
