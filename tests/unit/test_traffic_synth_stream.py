"""The synthesizer writes while it generates: packets in (time, order added) order, memory bounded
by the flows still running (not the trace), temporary files removed, checksums in C = numpy."""

from __future__ import annotations

import numpy as np
import pytest

from idsbench.traffic import checksum
from idsbench.traffic.pcap import iter_packets
from idsbench.traffic.synth import make_params, synthesize
from idsbench.traffic.synth.generate import generate
from idsbench.traffic.synth.stream import PcapStream


def frame(tag: int, size: int = 60) -> bytes:
    ip = bytes([0x45, 0, 0, size - 14, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2])
    udp = bytes([0, 53, 0, 53, 0, size - 34, 0, 0])
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp + tag.to_bytes(4, "big") + bytes(size - 46)


def test_stream_orders_by_time_then_by_order_added(tmp_path):
    s = PcapStream(tmp_path / "s.pcap", start_ns=10**18)
    s.add([5_000, 1_000, 3_000], [frame(1), frame(2), frame(3)])
    s.flush(4_000)  # 1000 and 3000 are final; 5000 waits
    s.add([4_000, 5_000, 4_000], [frame(4), frame(5), frame(6)])  # ties: the earlier added first
    s.close()
    got = [(p.ts_ns - 10**18, int.from_bytes(p.data[42:46], "big")) for p in iter_packets(s.path)]
    assert got == [(1_000, 2), (3_000, 3), (4_000, 4), (4_000, 6), (5_000, 1), (5_000, 5)]
    assert (s.packets, s.min_ts, s.max_ts) == (6, 1_000, 5_000)
    assert not list(tmp_path.glob(".*tmp"))


def test_a_packet_before_the_watermark_is_refused_and_nothing_is_left(tmp_path):
    s = PcapStream(tmp_path / "s.pcap", start_ns=0)
    s.add([2_000], [frame(1)])
    s.flush(3_000)
    s.add([1_000], [frame(2)])
    with pytest.raises(AssertionError):
        s.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("profile", ["mixed", "dns", "small-packets"])
def test_pending_packets_do_not_grow_with_the_trace(tmp_path, profile):
    peaks = []
    for packets in (40_000, 160_000):
        run = generate(make_params(profile, packets=packets, seed=2), tmp_path / f"{packets}.pcap")
        run.stream.close()
        peaks.append(run.stream.peak_pending_bytes)
    assert peaks[1] <= 2 * peaks[0] + (8 << 20) and peaks[1] < 96 << 20, peaks


def test_flow_target_attempts_leave_only_the_capture(tmp_path):
    r = synthesize("mixed", tmp_path / "m.pcap", packets=8000, flows=150, seed=4)
    assert abs(r.flows - 150) <= 15
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pcap", "m.pcap.json"]
    assert sum(1 for _ in iter_packets(r.path)) == 8000


def test_native_checksums_equal_numpy(tmp_path):
    rng = np.random.default_rng(5)
    frames = []
    for i in range(500):
        proto = (6, 17, 1, 47)[i % 4]
        size = int(rng.integers(54, 1514))
        payload = rng.integers(0, 256, size - 34, dtype=np.uint8).tobytes()
        ip = bytes([0x45, 0, (size - 14) >> 8, (size - 14) & 0xFF, 0, i & 0xFF, 0, 0, 64, proto, 0x12, 0x34]) + \
            rng.integers(0, 256, 8, dtype=np.uint8).tobytes()
        frames.append(b"\x02" * 12 + b"\x08\x00" + ip + payload)
    blob = b"".join(frames)
    offsets = np.concatenate(([0], np.cumsum([len(f) for f in frames])[:-1])).astype(np.int64)
    a, b = bytearray(blob), bytearray(blob)
    checksum.fill_ipv4_frames(np.frombuffer(a, dtype=np.uint8), offsets)
    checksum.fill_ipv4_records(b, offsets)
    assert checksum._native_fill() is not None  # the C path was taken
    assert a == b and a != bytearray(blob)
    with pytest.raises(ValueError):
        checksum.fill_ipv4_records(bytearray(blob[:100]), np.array([90], dtype=np.int64))


@pytest.mark.parametrize("profile,seed", [("mixed", 7), ("web", 9), ("bulk", 11)])
def test_vector_segmentation_gives_the_same_bytes_as_the_loop(tmp_path, monkeypatch, profile, seed):
    from idsbench.traffic.synth import tcp

    fast = synthesize(profile, tmp_path / "fast.pcap", packets=30_000, seed=seed)
    monkeypatch.setattr(tcp, "VECTOR_BYTES", 1 << 62)  # every send through the per-segment loop
    loop = synthesize(profile, tmp_path / "loop.pcap", packets=30_000, seed=seed)
    assert fast.sha256 == loop.sha256
