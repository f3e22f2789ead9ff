"""read_info / iter_packets on hand-built captures (both byte orders, ns, pcapng) and real ones."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from idsbench.errors import InputError
from idsbench.traffic.pcap import iter_packets, read_info

PCAPS = Path(__file__).resolve().parents[3] / "shared" / "data" / "pcaps"


def eth_ipv4_udp(src: bytes, dst: bytes, sport: int, dport: int, payload: bytes = b"x" * 10,
                 vlan: bool = False) -> bytes:
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, src, dst) + udp
    tag = struct.pack("!HH", 0x8100, 7) if vlan else b""
    return b"\x02" * 6 + b"\x04" * 6 + tag + b"\x08\x00" + ip


def eth_ipv6_tcp(src: bytes, dst: bytes, sport: int, dport: int) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x02, 1024, 0, 0)
    ip = struct.pack("!IHBB16s16s", 6 << 28, len(tcp), 6, 64, src, dst) + tcp
    return b"\x02" * 6 + b"\x04" * 6 + b"\x86\xdd" + ip


ARP = b"\xff" * 6 + b"\x04" * 6 + b"\x08\x06" + b"\x00" * 28
A, B, C = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), bytes([192, 0, 2, 9])
A6, B6 = bytes.fromhex("20010db8" + "0" * 23 + "1"), bytes.fromhex("20010db8" + "0" * 23 + "2")

# (ts seconds, fraction in µs, frame): one UDP conversation both ways, one other, one VLAN-tagged
# packet of the first conversation, an ARP frame and an IPv6 TCP packet
FRAMES = [
    (100, 0, eth_ipv4_udp(A, B, 1000, 53)),
    (100, 250_000, eth_ipv4_udp(B, A, 53, 1000)),
    (101, 500_000, eth_ipv4_udp(A, C, 1001, 53, vlan=True)),
    (101, 600_000, ARP),
    (102, 999_999, eth_ipv6_tcp(A6, B6, 40000, 443)),
    (103, 0, eth_ipv4_udp(A, B, 1000, 53, vlan=True)),
]


def classic(frames=FRAMES, endian: str = "<", nanos: bool = False, snap: int = 65535) -> bytes:
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snap, 1)]
    for sec, usec, frame in frames:
        frac = usec * 1000 if nanos else usec
        cap = frame[:snap]
        out.append(struct.pack(endian + "IIII", sec, frac, len(cap), len(frame)) + cap)
    return b"".join(out)


def _block(btype: int, body: bytes, endian: str = "<") -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(endian + "II", btype, n) + body + struct.pack(endian + "I", n)


def pcapng(endian: str = "<") -> bytes:
    """Two interfaces: 0 in µs (default), 1 in ns (if_tsresol=9); EPBs, one SPB, one OPB."""
    e = endian
    shb = _block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1), e)
    idb0 = _block(1, struct.pack(e + "HHI", 1, 0, 0), e)
    opt = struct.pack(e + "HH", 9, 1) + b"\x09\0\0\0" + struct.pack(e + "HH", 0, 0)
    idb1 = _block(1, struct.pack(e + "HHI", 1, 0, 0) + opt, e)
    blocks = [shb, idb0, idb1]
    for i, (sec, usec, frame) in enumerate(FRAMES[:4]):
        iface = i % 2
        ticks = sec * 1_000_000 + usec if iface == 0 else (sec * 1_000_000 + usec) * 1000
        blocks.append(_block(6, struct.pack(e + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF,
                                            len(frame), len(frame)) + frame, e))
    sec, usec, frame = FRAMES[4]
    ticks = sec * 1_000_000 + usec
    blocks.append(_block(2, struct.pack(e + "HHIIII", 0, 0, ticks >> 32, ticks & 0xFFFFFFFF,
                                        len(frame), len(frame)) + frame, e))
    blocks.append(_block(5, struct.pack(e + "III", 0, 0, 0), e))  # interface statistics: skipped
    blocks.append(_block(3, struct.pack(e + "I", len(FRAMES[5][2])) + FRAMES[5][2], e))
    return b"".join(blocks)


def check_expected(info, *, spb: bool = False) -> None:
    frames = [f for _, _, f in FRAMES]
    assert info.packets == 6
    assert info.bytes == sum(map(len, frames))
    assert info.max_frame == max(map(len, frames))
    assert info.min_frame == min(map(len, frames))
    assert info.link_type == 1
    # UDP A:1000<->B:53 (three packets, two VLAN-tagged or not), A:1001->C:53; TCP over IPv6
    assert info.flows_by_transport == {"tcp": 1, "udp": 2}
    assert info.flows == 3
    assert info.proto_mix["transport"]["udp"]["packets"] == 4
    assert info.proto_mix["transport"]["non-ip"]["packets"] == 1
    assert info.proto_mix["port"]["dns"]["packets"] == 4
    assert info.proto_mix["port"]["https"]["packets"] == 1
    if not spb:
        assert info.duration_s == pytest.approx(3.0)
        assert [p["packets"] for p in info.per_second] == [2, 2, 1, 1]
        assert info.per_second[0]["bytes"] == len(frames[0]) + len(frames[1])
        assert info.peak_pps == 2


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("nanos", [False, True])
def test_classic_pcap_byte_orders_and_resolutions(tmp_path, endian, nanos):
    f = tmp_path / "a.pcap"
    f.write_bytes(classic(endian=endian, nanos=nanos))
    info = read_info(f, cache_dir=tmp_path / "cache")
    check_expected(info)
    assert info.format == "pcap"
    pkts = list(iter_packets(f))
    assert [p.data for p in pkts] == [fr for _, _, fr in FRAMES]
    assert pkts[1].ts_ns == 100_250_000_000 and pkts[4].ts == pytest.approx(102.999999)


def test_snaplen_truncated_packets_count_captured_bytes(tmp_path):
    f = tmp_path / "s.pcap"
    f.write_bytes(classic(snap=40))
    info = read_info(f, cache_dir=tmp_path)
    assert info.bytes == sum(min(len(fr), 40) for _, _, fr in FRAMES)
    assert info.wire_bytes == sum(len(fr) for _, _, fr in FRAMES)
    assert info.max_frame == 40
    assert [p.caplen for p in iter_packets(f)] == [min(len(fr), 40) for _, _, fr in FRAMES]


@pytest.mark.parametrize("endian", ["<", ">"])
def test_pcapng_interfaces_tsresol_and_block_kinds(tmp_path, endian):
    f = tmp_path / "a.pcapng"
    f.write_bytes(pcapng(endian))
    info = read_info(f, cache_dir=tmp_path / "cache")
    assert info.format == "pcapng"
    check_expected(info, spb=True)
    pkts = list(iter_packets(f))
    assert [p.data for p in pkts] == [fr for _, _, fr in FRAMES]
    # interface 1 counts nanoseconds, interface 0 microseconds: both decode to the same times
    assert [p.ts_ns for p in pkts[:5]] == [(s * 1_000_000 + u) * 1000 for s, u, _ in FRAMES[:5]]
    assert pkts[5].ts_ns == 0  # a simple packet block has no timestamp


def test_matches_tshark_on_a_converted_pcapng(tmp_path):
    if not (PCAPS.is_dir() and shutil.which("editcap")):
        pytest.skip("needs ../shared/data/pcaps and editcap")
    src = PCAPS / "tcpreplay_test.pcap"
    ng = tmp_path / "t.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(src), str(ng)], check=True, capture_output=True)
    a, b = read_info(src, cache_dir=tmp_path), read_info(ng, cache_dir=tmp_path)
    for key in ("packets", "bytes", "duration_s", "max_frame", "flows", "flows_by_transport", "per_second"):
        assert getattr(a, key) == getattr(b, key), key


@pytest.mark.parametrize("content,what", [
    (b"", "empty"),
    (b"hello, this is not a capture at all", "not a pcap"),
    (classic()[:20], "truncated"),
    (classic()[:-3], "cut short"),
    (classic()[:24 + 10], "cut short"),
    (pcapng()[:-6], "truncated"),
])
def test_bad_files_raise_input_error_naming_the_file(tmp_path, content, what):
    f = tmp_path / "bad.pcap"
    f.write_bytes(content)
    with pytest.raises(InputError) as err:
        read_info(f, cache_dir=tmp_path / "c")
    assert str(f) in str(err.value) and what in str(err.value)
    assert err.value.fix


def test_missing_file_and_directory(tmp_path):
    for target, what in ((tmp_path / "nope.pcap", "does not exist"), (tmp_path, "directory")):
        with pytest.raises(InputError) as err:
            read_info(target, cache_dir=tmp_path / "c")
        assert str(target) in str(err.value) and what in str(err.value)


def test_results_are_cached_by_sha256(tmp_path):
    f = tmp_path / "a.pcap"
    f.write_bytes(classic())
    info = read_info(f, cache_dir=tmp_path / "c")
    cached = tmp_path / "c" / "traceinfo" / f"{info.sha256}.json"
    assert json.loads(cached.read_text())["info"]["packets"] == 6
    doc = json.loads(cached.read_text())
    doc["info"]["packets"] = 12345  # prove the second call reads the cache, not the file
    cached.write_text(json.dumps(doc))
    assert read_info(f, cache_dir=tmp_path / "c").packets == 12345
    assert read_info(f, cache_dir=tmp_path / "c", use_cache=False).packets == 6
    f.write_bytes(classic()[:-len(FRAMES[-1][2]) - 16])  # changed file: read again, new entry
    changed = read_info(f, cache_dir=tmp_path / "c")
    assert changed.packets == 5 and changed.sha256 != info.sha256


def _capinfos(path: Path) -> tuple[int, int, float]:
    out = subprocess.run(["capinfos", "-M", "-T", "-r", "-c", "-d", "-u", str(path)],
                         capture_output=True, text=True, check=True).stdout.strip().split("\t")
    return int(out[1]), int(out[2]), float(out[3])


def _tshark_conversations(path: Path) -> int:
    out = subprocess.run(["tshark", "-n", "-q", "-r", str(path), "-z", "conv,tcp", "-z", "conv,udp"],
                         capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if "<->" in line)


REAL = sorted(PCAPS.glob("*.pcap")) if PCAPS.is_dir() else []


@pytest.mark.skipif(not PCAPS.is_dir(), reason=f"real captures not found at {PCAPS}")
@pytest.mark.skipif(not (shutil.which("capinfos") and shutil.which("tshark")), reason="capinfos/tshark missing")
@pytest.mark.parametrize("pcap", REAL, ids=[p.name for p in REAL])
def test_real_capture_matches_capinfos_and_tshark(tmp_path, pcap):
    info = read_info(pcap, cache_dir=tmp_path)
    packets, data_bytes, duration = _capinfos(pcap)
    assert (info.packets, info.bytes) == (packets, data_bytes)
    assert info.duration_s == pytest.approx(duration, abs=2e-6)
    assert sum(p["packets"] for p in info.per_second) == packets
    conv = _tshark_conversations(pcap)
    assert abs(info.flows - conv) <= 0.01 * conv, (info.flows, conv)
