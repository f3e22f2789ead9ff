"""Frames of any size the trace holds reach the sensor whole through the runner's wire."""

from __future__ import annotations

import json
import struct

import pytest

from idsbench.run.campaign import run_campaign
from idsbench.spec import spec_from_dict

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")


def _ipv4_udp_frame(payload_len: int, vlan: int | None = None) -> bytes:
    udp_len = 8 + payload_len
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    csum = 0
    for i in range(0, 20, 2):
        csum += (ip[i] << 8) | ip[i + 1]
    while csum >> 16:
        csum = (csum & 0xFFFF) + (csum >> 16)
    ip = ip[:10] + struct.pack("!H", ~csum & 0xFFFF) + ip[12:]
    udp = struct.pack("!HHHH", 40000, 9999, udp_len, 0)  # checksum 0: none (valid for IPv4)
    eth = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01"
    if vlan is not None:
        eth += struct.pack("!HH", 0x8100, vlan)
    return eth + b"\x08\x00" + ip + udp + bytes(payload_len)


def test_jumbo_tso_sized_and_vlan_frames_arrive_whole(tmp_path, state_dir, cache_dir):
    sizes = [18, 1472, 8972, 20000, 65000]  # UDP payloads: 60 B .. 65 kB frames
    frames = [_ipv4_udp_frame(n) for n in sizes] + [_ipv4_udp_frame(1000, vlan=42)]
    pcap = tmp_path / "frames.pcap"
    with open(pcap, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for i, frame in enumerate(frames):
            fh.write(struct.pack("<IIII", 1_700_000_000 + i, 0, len(frame), len(frame)) + frame)
    spec = spec_from_dict({"name": "frames", "samples": 1, "timing": {"settle_s": 1},
                           "traffic": {"traces": [str(pcap)], "rate": {"pps": 100}}})
    run_campaign(spec, tmp_path / "c", state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    (summary_path,) = (tmp_path / "c").glob("cases/*/s0/summary.json")
    s = json.loads(summary_path.read_text())
    c = s["sensor"]["counters"]
    assert s["placement"]["mtu"] >= max(len(f) for f in frames) - 14
    assert (c["captured_pkts"], c["decoded_pkts"], c["dropped_pkts"]) == (len(frames), len(frames), 0)
    # The kernel moves the VLAN tag into metadata: Suricata's byte count lacks those 4 bytes.
    assert c["decoded_bytes"] == sum(len(f) for f in frames) - 4
    assert c["invalid_pkts"] == 0
