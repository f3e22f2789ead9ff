"""distinct_copy: disjoint address sets per replayer index, same packets and flows, valid checksums."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from idsbench.errors import InputError
from idsbench.traffic.dissect import dissect
from idsbench.traffic.pcap import iter_packets, open_capture, read_info
from idsbench.traffic.pcapfmt import index_capture
from idsbench.traffic.rewrite import distinct_copy
from idsbench.traffic.synth import synthesize
from tests.unit.test_traffic_pcap import PCAPS, eth_ipv6_tcp
from tests.unit.test_traffic_synth import checksum_errors, ones_sum, tcp_state_errors


def addresses(path: Path) -> set[tuple[int, ...]]:
    with open_capture(path) as (buf, raw):
        d = dissect(buf, index_capture(buf, raw, path))
        v4 = d.l3 == 4
        v6 = d.l3 == 6
        out = {(4, int(a)) for a in np.concatenate([d.src4[v4], d.dst4[v4]])}
        out |= {(6, int(h), int(lo)) for h, lo in np.concatenate([d.src6[v6], d.dst6[v6]])}
    return out


def is_special(a: tuple[int, ...]) -> bool:
    if a[0] == 4:
        return a[1] >> 24 in (0, 127) or a[1] >> 29 == 7  # this-net, loopback, 224/3
    return a[1] >> 56 == 0xFF or a[1] >> 54 == 0xFE80 >> 6


@pytest.fixture(scope="module")
def synth_trace(tmp_path_factory) -> Path:
    return synthesize("mixed", tmp_path_factory.mktemp("rw") / "m.pcap", packets=4000, seed=5).path


def test_copies_have_disjoint_addresses_and_same_shape(tmp_path, synth_trace):
    assert distinct_copy(synth_trace, 0, tmp_path) == synth_trace
    copies = [distinct_copy(synth_trace, i, tmp_path) for i in range(4)]
    sets = [{a for a in addresses(c) if not is_special(a)} for c in copies]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not sets[i] & sets[j], (i, j)
    base = read_info(synth_trace, cache_dir=tmp_path)
    for c, s in zip(copies[1:], sets[1:]):
        info = read_info(c, cache_dir=tmp_path)
        assert (info.packets, info.bytes, info.flows, info.flows_by_transport) == \
               (base.packets, base.bytes, base.flows, base.flows_by_transport)
        assert len(s) == len(sets[0])
        assert checksum_errors(c) == []
        assert tcp_state_errors(c)[0] == []
    # private clients stay private (10/8), public servers stay outside HOME_NET (100.64/10)
    assert all(a[1] >> 24 == 10 or a[1] >> 22 == (100 << 2 | 1) for a in sets[1])
    assert distinct_copy(synth_trace, 2, tmp_path) == copies[2]  # cached


def test_payloads_and_timestamps_untouched(tmp_path, synth_trace):
    """Only addresses and checksums change: mask them and the frames are identical."""
    copy = distinct_copy(synth_trace, 3, tmp_path)

    def masked(d: bytes) -> bytes:
        b = bytearray(d)
        b[24:34] = bytes(10)  # IPv4 header checksum, source, destination
        at = {6: 50, 17: 40}.get(d[23])
        if at:
            b[at:at + 2] = b"\0\0"
        return bytes(b)

    changed = 0
    for a, b in zip(iter_packets(synth_trace), iter_packets(copy), strict=True):
        assert a.ts_ns == b.ts_ns and a.caplen == b.caplen
        assert masked(a.data) == masked(b.data)
        changed += a.data[26:34] != b.data[26:34]
    assert changed == read_info(synth_trace, cache_dir=tmp_path).packets


def _good_checksums(path: Path) -> list[bool]:
    """Per IPv4 TCP/UDP packet with its full segment: is the transport checksum valid?"""
    out = []
    for p in iter_packets(path):
        d = p.data
        if p.caplen != p.wirelen or d[12:14] != b"\x08\x00" or d[23] not in (6, 17):
            continue
        if struct.unpack("!H", d[20:22])[0] & 0x3FFF:
            continue
        ihl = (d[14] & 0x0F) * 4
        total = struct.unpack("!H", d[16:18])[0]
        l4 = d[14 + ihl:14 + total]
        if d[23] == 17 and l4[6:8] == b"\0\0":
            continue
        pseudo = d[26:34] + struct.pack("!BBH", 0, d[23], len(l4))
        out.append(ones_sum(pseudo + l4) == 0xFFFF and ones_sum(d[14:14 + ihl]) == 0xFFFF)
    return out


@pytest.mark.skipif(not PCAPS.is_dir(), reason=f"real captures not found at {PCAPS}")
@pytest.mark.parametrize("name", ["tcpreplay_test.pcap", "sv_base64-decode-5885.pcap", "nf_evidence02.pcap"])
def test_real_capture_checksums_stay_as_valid_as_they_were(tmp_path, name):
    src = PCAPS / name
    copy = distinct_copy(src, 1, tmp_path)
    assert _good_checksums(copy) == _good_checksums(src)
    assert read_info(copy, cache_dir=tmp_path).flows == read_info(src, cache_dir=tmp_path).flows
    assert not {a for a in addresses(copy) if not is_special(a)} & addresses(src)


def test_ipv6_and_icmpv6_checksums_are_updated(tmp_path):
    a6, b6 = bytes.fromhex("20010db8" + "0" * 23 + "1"), bytes.fromhex("20010db8" + "0" * 23 + "2")
    frames = [eth_ipv6_tcp(a6, b6, 40000, 443)]
    icmp = struct.pack("!BBHHH", 128, 0, 0, 1, 1) + b"ping"
    frames.append(frames[0][:14] + struct.pack("!IHBB16s16s", 6 << 28, len(icmp), 58, 64, a6, b6) + icmp)

    def fix(frame: bytes) -> bytes:  # valid upper-layer checksum over the IPv6 pseudo-header
        l4 = bytearray(frame[54:])
        at = 16 if frame[20] == 6 else 2
        pseudo = frame[22:54] + struct.pack("!IxxxB", len(l4), frame[20])
        struct.pack_into("!H", l4, at, 0xFFFF - ones_sum(pseudo + bytes(l4)))
        return frame[:54] + bytes(l4)

    frames = [fix(f) for f in frames]
    src = tmp_path / "v6.pcap"
    src.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + b"".join(
        struct.pack("<IIII", 1, 0, len(f), len(f)) + f for f in frames))
    copy = distinct_copy(src, 2, tmp_path)
    for p in iter_packets(copy):
        d = p.data
        assert d[22:24] == b"\xfd\x1d" and d[38:40] == b"\xfd\x1d"
        pseudo = d[22:54] + struct.pack("!IxxxB", len(d) - 54, d[20])
        assert ones_sum(pseudo + d[54:]) == 0xFFFF


def test_bad_index(tmp_path, synth_trace):
    with pytest.raises(InputError, match="replayer index"):
        distinct_copy(synth_trace, 64, tmp_path)
