"""Synthesizer: determinism, exact sizes, valid checksums, coherent TCP state, marker ground truth."""

from __future__ import annotations

import hashlib
import json
import struct
from collections import defaultdict
from pathlib import Path

import pytest

from idsbench.cli.main import main
from idsbench.errors import InputError, SpecError
from idsbench.traffic.pcap import iter_packets, read_info
from idsbench.traffic.resolve import resolve_trace, synth_metadata
from idsbench.traffic.synth import PROFILES, make_params, synthesize


def ones_sum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def checksum_errors(path: Path) -> list[str]:
    """Independent (pure Python) check of IPv4 header and TCP/UDP/ICMP checksums of every frame."""
    errors = []
    for n, p in enumerate(iter_packets(path)):
        d = p.data
        if p.caplen != p.wirelen or d[12:14] != b"\x08\x00":
            continue
        ip = d[14:14 + (d[14] & 0x0F) * 4]
        if ones_sum(ip) != 0xFFFF:
            errors.append(f"packet {n}: IPv4 header checksum")
        total = struct.unpack("!H", d[16:18])[0]
        proto, l4 = d[23], d[14 + len(ip):14 + total]
        if struct.unpack("!H", d[20:22])[0] & 0x1FFF or struct.unpack("!H", d[20:22])[0] & 0x2000:
            continue  # fragments: no complete L4 segment here
        if proto == 17 and l4[6:8] == b"\0\0":
            continue  # UDP without checksum
        if proto in (6, 17):
            pseudo = ip[12:20] + struct.pack("!BBH", 0, proto, len(l4))
            if ones_sum(pseudo + l4) != 0xFFFF:
                errors.append(f"packet {n}: {'TCP' if proto == 6 else 'UDP'} checksum")
        elif proto == 1 and ones_sum(l4) != 0xFFFF:
            errors.append(f"packet {n}: ICMP checksum")
    return errors


def tcp_state_errors(path: Path) -> tuple[list[str], int]:
    """Per direction: each segment starts where the previous ended; ACKs only acknowledge sent data;
    every connection starts with SYN, SYN-ACK and ends with FIN or RST. Returns (errors, connections)."""
    nxt: dict[tuple, int] = {}
    sent: dict[tuple, int] = {}
    flags_seen: dict[tuple, list[int]] = defaultdict(list)
    errors = []
    for n, p in enumerate(iter_packets(path)):
        d = p.data
        if d[23] != 6:
            continue
        ihl = (d[14] & 0x0F) * 4
        t = 14 + ihl
        sport, dport, seq, ack, off, flags = struct.unpack("!HHIIBB", d[t:t + 14])
        payload = len(d) - t - (off >> 4) * 4
        key = (d[26:30], sport, d[30:34], dport)
        rev = (d[30:34], dport, d[26:30], sport)
        conn = min(key, rev)
        flags_seen[conn].append(flags)
        if flags & 0x02:  # SYN
            nxt[key] = (seq + 1) & 0xFFFFFFFF
        elif key not in nxt:
            errors.append(f"packet {n}: data before SYN")
            continue
        elif seq != nxt[key] and not flags & 0x04:
            errors.append(f"packet {n}: seq {seq} != expected {nxt[key]}")
        else:
            nxt[key] = (seq + payload + (1 if flags & 0x01 else 0)) & 0xFFFFFFFF
        sent[key] = nxt[key]
        # an ACK may lag behind but never run ahead of what the peer has sent
        if flags & 0x10 and rev in sent and ack != sent[rev] and (sent[rev] - ack) & 0xFFFFFFFF > 1 << 30:
            errors.append(f"packet {n}: ack {ack} ahead of peer's {sent[rev]}")
    for conn, fl in flags_seen.items():
        if fl[0] != 0x02 or fl[1] != 0x12:
            errors.append(f"{conn}: no SYN / SYN-ACK opening")
        if not any(f & 0x05 for f in fl[-3:]):
            errors.append(f"{conn}: not closed by FIN or RST")
    return errors, len(flags_seen)


def count_markers(path: Path) -> int:
    """Client-to-server packets holding the marker (a flow carries at most one)."""
    n = 0
    for p in iter_packets(path):
        d = p.data
        if b"idsbench-marker" not in d:
            continue
        if d[23] == 1:
            n += d[34] == 8  # echo request only
        elif d[23] in (6, 17):
            n += 1 if d[26:28] == b"\x0a\x0a" else 0  # client side: the 10.10.0.0/16 range
    return n


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_profiles_are_deterministic_exact_and_valid(tmp_path, profile):
    rate = 1.0 if profile == "bulk" else 0.2  # bulk: one or two flows in 3000 packets
    a = synthesize(profile, tmp_path / "a.pcap", packets=3000, seed=7, marker_rate=rate)
    b = synthesize(profile, tmp_path / "b.pcap", packets=3000, seed=7, marker_rate=rate)
    c = synthesize(profile, tmp_path / "c.pcap", packets=3000, seed=8, marker_rate=rate)
    digest = hashlib.sha256((tmp_path / "a.pcap").read_bytes()).hexdigest()
    assert a.sha256 == b.sha256 == digest
    assert (tmp_path / "a.pcap").read_bytes() == (tmp_path / "b.pcap").read_bytes()
    assert c.sha256 != a.sha256
    info = read_info(a.path, cache_dir=tmp_path / "cache")
    assert info.packets == a.packets == 3000
    assert info.bytes == a.bytes
    assert info.link_type == 1 and info.max_frame <= 1514
    assert checksum_errors(a.path) == []
    errors, conns = tcp_state_errors(a.path)
    assert errors == []
    if profile != "dns":
        assert conns > 0
    assert a.markers > 0 and count_markers(a.path) == a.markers == sum(a.markers_by_sid.values())
    meta = json.loads((tmp_path / "a.pcap.json").read_text())
    assert meta["markers"] == a.markers and meta["sha256"] == a.sha256 and meta["packets"] == 3000


def test_mixed_profile_has_the_enterprise_mix(tmp_path):
    r = synthesize("mixed", tmp_path / "m.pcap", packets=20000, seed=3)
    info = read_info(r.path, cache_dir=tmp_path)
    ports = info.proto_mix["port"]
    for service in ("http", "https", "dns", "smtp", "ssh"):
        assert ports.get(service, {}).get("packets", 0) > 0, service
    assert info.proto_mix["transport"]["icmp"]["packets"] > 0
    assert info.flows_by_transport["tcp"] > 20 and info.flows_by_transport["udp"] > 20
    sizes = {p.caplen for p in iter_packets(r.path)}
    assert min(sizes) < 100 and max(sizes) == 1514 and len(sizes) > 200  # varied sizes


def test_rate_duration_and_flows_parameters(tmp_path):
    r = synthesize("web", tmp_path / "w.pcap", duration_s=2.0, rate_pps=3000, seed=1)
    assert r.packets == 6000
    assert 1.5 < r.duration_s <= 2.0
    info = read_info(r.path, cache_dir=tmp_path)
    assert max(p["packets"] for p in info.per_second) < 6000  # spread over the seconds
    few = synthesize("bulk", tmp_path / "b.pcap", packets=20000, flows=8, seed=1)
    assert few.packets == 20000 and abs(few.flows - 8) <= 2
    many = synthesize("mixed", tmp_path / "m.pcap", packets=20000, flows=200, seed=1)
    assert abs(many.flows - 200) <= 20
    assert abs(read_info(few.path, cache_dir=tmp_path).flows - few.flows) <= 1


def test_address_ranges(tmp_path):
    r = synthesize("dns", tmp_path / "d.pcap", packets=400, client_net="172.20.0.0/24",
                   server_net="198.51.100.0/28", seed=2)
    for p in iter_packets(r.path):
        src, dst = p.data[26:30], p.data[30:34]
        assert {src[:3], dst[:3]} == {bytes([172, 20, 0]), bytes([198, 51, 100])}


@pytest.mark.parametrize("kwargs,match", [
    ({"packets": 0}, "packets"),
    ({"rate_pps": -1}, "rate"),
    ({"flows": 0}, "flows"),
    ({"marker_rate": 2.0}, "marker"),
    ({"client_net": "10.0.0.0/30"}, "address range"),
    ({"packets": 10, "duration_s": 1.0, "rate_pps": 5.0}, "at most two"),
])
def test_bad_parameters_are_spec_errors(kwargs, match):
    with pytest.raises(SpecError, match=match):
        make_params("mixed", **kwargs)
    with pytest.raises(SpecError, match="unknown traffic profile"):
        make_params("nope")


def test_builtin_mixed_default_trace(tmp_path):
    path = resolve_trace("builtin:mixed", tmp_path)
    again = resolve_trace("builtin:mixed", tmp_path)
    assert path == again and path.parent == tmp_path / "synth"
    info = read_info(path, cache_dir=tmp_path)
    assert 20_000 <= info.packets <= 60_000
    assert 4.0 <= info.duration_s <= 5.5
    meta = synth_metadata(path)
    assert meta is not None and meta.packets == info.packets and meta.sha256 == info.sha256
    assert meta.markers is not None and meta.markers >= 1
    other = tmp_path / "elsewhere"
    assert read_info(resolve_trace("builtin:mixed", other), cache_dir=other).sha256 == info.sha256


def test_resolve_paths_and_errors(tmp_path):
    real = synthesize("dns", tmp_path / "x.pcap", packets=10).path
    assert resolve_trace(str(real), tmp_path) == real
    (tmp_path / "notpcap.pcap").write_text("hello")
    for ref, what in (("builtin:nope", "unknown generated trace"), (str(tmp_path / "no.pcap"), "does not exist"),
                      (str(tmp_path / "notpcap.pcap"), "not a pcap"), (str(tmp_path), "not a regular file")):
        with pytest.raises(InputError, match=what) as err:
            resolve_trace(ref, tmp_path)
        assert ref in str(err.value) and err.value.fix


def test_cli_synth_and_info(tmp_path, capsys):
    out = tmp_path / "s.pcap"
    assert main(["trace", "synth", "--profile", "small-packets", "--out", str(out), "--packets", "500",
                 "--seed", "4", "--markers", "0.2", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["packets"] == 500 and res["markers"] > 0
    assert main(["trace", "info", str(out), "--json", "--cache-dir", str(tmp_path / "c")]) == 0
    info = json.loads(capsys.readouterr().out)
    for key in ("packets", "bytes", "duration_s", "max_frame", "link_type", "flows", "sha256", "per_second"):
        assert key in info
    assert info["packets"] == 500 and info["sha256"] == res["sha256"]
    assert all(set(p) == {"t", "packets", "bytes"} for p in info["per_second"])
    assert main(["trace", "info", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    table = capsys.readouterr().out
    assert "packets" in table and "500" in table and "by transport" in table
    assert main(["trace", "info", str(tmp_path / "missing.pcap")]) == 2
    assert "does not exist" in capsys.readouterr().err
