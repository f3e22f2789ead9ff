"""What each capture method and bypass mode carries at the MTU a trace's largest frame needs (issue 41 item
9): AF_XDP's 4 KiB frames, XDP in a veth's driver up to MTU 3506 — refused before any sample with the
reason and the fixes (af-packet or ebpf, or the trace re-segmented), never a sample failed inside Suricata
or a bypass that silently bypasses nothing."""

from __future__ import annotations

import pytest

from idsbench.campaign_settings import campaign_settings
from idsbench.capture import VETH_NATIVE_XDP_MAX_MTU
from idsbench.errors import SpecError
from idsbench.plan import plan
from idsbench.run.preflight import check_frames
from idsbench.spec import spec_from_dict
from idsbench.store.schema import TraceRecord

TRACE = "big.pcap"


def _check(sensor: dict[str, object], max_frame: int, *, kinds: tuple[str, ...] = ("baremetal",),
           local_wire: bool = True) -> None:
    spec = spec_from_dict({"name": "frames", "traffic": {"traces": [TRACE]}, "setup": {"kinds": list(kinds)},
                           "sensor": sensor})
    traces = {TRACE: TraceRecord(ref=TRACE, path=f"/data/{TRACE}", sha256="", packets=10, bytes=10_000,
                                 duration_s=1.0, max_frame=max_frame)}
    check_frames(campaign_settings(spec), plan(spec), traces, local_wire=local_wire)


def test_af_xdp_refuses_frames_above_its_socket_frames_with_the_fixes() -> None:
    with pytest.raises(SpecError) as e:
        _check({"capture": ["af-packet", "af-xdp"], "capture_options": {"af-xdp": {"xdp-mode": "skb"}}}, 12_506)
    text = str(e.value)
    assert "af-xdp takes frames of at most 3,840 bytes" in text and "largest is 12,506" in text
    assert "idsbench trace resegment /data/big.pcap --mtu 1500 --out big-mtu1500.pcap" in text
    assert 'sensor.capture = "af-packet"' in text
    _check({"capture": ["af-xdp"], "capture_options": {"af-xdp": {"xdp-mode": "skb"}}}, 3_840)  # fits its frames
    with pytest.raises(SpecError, match="3,840 bytes"):  # on real hosts too: the limit is the socket's own
        _check({"capture": ["af-xdp"], "capture_options": {"af-xdp": {"xdp-mode": "skb"}}}, 5_000, local_wire=False)


def test_native_xdp_on_a_veth_refuses_an_mtu_its_driver_cannot_take() -> None:
    fits = VETH_NATIVE_XDP_MAX_MTU + 14 - 8   # the largest frame whose wire MTU (frame - 14 + VLAN slack) fits
    _check({"capture": ["af-xdp"]}, fits)
    with pytest.raises(SpecError, match=f"takes an MTU of at most {VETH_NATIVE_XDP_MAX_MTU:,}"):
        _check({"capture": ["af-xdp"]}, fits + 1)
    _check({"capture": ["af-xdp"]}, fits + 1, local_wire=False)  # a host's NIC: its driver's limit is its own


def test_the_xdp_bypass_is_refused_where_its_filter_would_not_attach() -> None:
    with pytest.raises(SpecError) as e:
        _check({"bypass": ["off", "xdp"]}, 12_506)
    text = str(e.value)
    assert 'sensor.bypass = "xdp"' in text and "bypasses nothing" in text and "MTU of 12,500" in text
    assert 'sensor.bypass = "ebpf"' in text and "idsbench trace resegment" in text
    for fine in ("ebpf", "local", "off"):
        _check({"bypass": [fine]}, 12_506)
    _check({"bypass": ["xdp"]}, 1_514)


def test_af_packet_carries_any_frame_the_wire_does() -> None:
    for capture in ("af-packet", "af-packet-v2", "pcap"):
        _check({"capture": [capture]}, 40_934)
