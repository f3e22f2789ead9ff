"""Frames of any size the trace holds reach the sensor whole through the runner's wire; where a capture path
cannot carry them (AF_XDP, XDP in the veth's driver), the campaign is refused before any sample, and the
trace re-segmented to MTU 1500 runs exact on those paths."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from idsbench.errors import SpecError
from idsbench.run.campaign import run_campaign
from idsbench.spec import spec_from_dict
from idsbench.wire.netns import mtu_for

from .conftest import PCAPS, TEST_PREFIX, unavailable

PINTEREST = PCAPS / "ndpi_pinterest.pcap"  # 911 packets; 11 IPv6 TCP super-frames (GRO), up to 12,506 bytes

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


def test_super_frames_are_refused_on_xdp_paths_and_run_exact_once_resegmented(tmp_path, state_dir, cache_dir):
    if not PINTEREST.is_file():
        unavailable(f"{PINTEREST} is absent (../shared/data beside the checkout)")

    def campaign(name: str, trace: Path, sensor: dict[str, object]) -> Path:
        spec = spec_from_dict({"name": name, "samples": 1, "timing": {"settle_s": 1},
                               "traffic": {"traces": [str(trace)], "rate": {"pps": 2000}},
                               "sensor": {"ground_truth": False, **sensor}})
        run_campaign(spec, tmp_path / name, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
        return tmp_path / name

    # as captured: AF_XDP failed inside Suricata ("Failed to create socket: Numerical result out of range") and
    # the XDP bypass ran without its filter ("Unable to set XDP", 0 bypassed); now both are refused up front
    for name, sensor in (("afxdp", {"capture": ["af-xdp"]}), ("xdpbypass", {"bypass": ["xdp"]})):
        with pytest.raises(SpecError, match="idsbench trace resegment") as refused:
            campaign(name, PINTEREST, sensor)
        assert "12,506" in str(refused.value)
        assert not (tmp_path / name / "campaign.json").exists()
    split = tmp_path / "pinterest-mtu1500.pcap"
    done = subprocess.run([str(Path(sys.executable).parent / "idsbench"), "trace", "resegment", str(PINTEREST),
                           "--mtu", "1500", "--out", str(split), "--json"], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    assert result["frames_split"] == 11 and result["max_frame_out"] <= 1514
    packets = result["packets_out"]
    for name, sensor in (("afxdp", {"capture": ["af-xdp"]}), ("xdpbypass", {"bypass": ["xdp"]})):
        out = campaign(name, split, sensor)
        (summary_path,) = out.glob("cases/*/s0/summary.json")
        s = json.loads(summary_path.read_text())
        c = s["sensor"]["counters"]
        assert s["status"] == "ok" and s["placement"]["mtu"] == mtu_for(result["max_frame_out"]) <= 1508, s.get("reason")
        assert (s["replay"]["sent_pkts"], c["decoded_pkts"], c["dropped_pkts"]) == (packets, packets, 0), c
        log = (summary_path.parent / "suricata.log").read_text()
        assert "Unable to set XDP" not in log and "Failed to create socket" not in log
