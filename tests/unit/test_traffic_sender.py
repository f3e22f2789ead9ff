"""The sender seam (tcpreplay | native by name) and the schedule maths (deadlines, wire lateness)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from idsbench.errors import SpecError
from idsbench.spec import Rate
from idsbench.traffic.schedule import deadlines_ns, wire_lateness
from idsbench.traffic.sender import NativeSender, ReplayJob, SenderOutput, TcpreplaySender, get_sender

RECORDED = Rate(kind="recorded")


def job(rate: Rate = RECORDED, replayers: int = 2, duration_s: float | None = None) -> ReplayJob:
    pcaps = tuple(Path(f"/traces/r{i}.pcap") for i in range(replayers))
    return ReplayJob("ibtx0", pcaps, rate, 2, duration_s, trace_packets=1000, trace_duration_s=10.0,
                     trace_bytes=500_000, cpus=(0, 1))


def test_senders_by_name():
    assert isinstance(get_sender("tcpreplay"), TcpreplaySender)
    assert isinstance(get_sender("native"), NativeSender)
    with pytest.raises(SpecError) as err:
        get_sender("trex")
    assert "tcpreplay" in str(err.value) and "native" in str(err.value)


def test_job_requested_rate_and_plan():
    j = job(Rate(kind="multiplier", value=2.0))
    assert j.requested_pps == 200.0 and j.planned_s == 10.0  # 2 loops x 1000 packets at 200 pps
    assert job(Rate(kind="topspeed")).requested_pps is None
    assert job(duration_s=7.0).planned_s == 7.0


def test_tcpreplay_is_one_process_per_replayer():
    procs = TcpreplaySender().processes(job())
    assert [p.name for p in procs] == ["tcpreplay-0", "tcpreplay-1"]
    assert [p.output for p in procs] == ["replay-0.txt", "replay-1.txt"]
    assert procs[1].argv[-1] == "/traces/r1.pcap" and "--loop=2" in procs[1].argv
    text = "Actual: 2000 packets (1000000 bytes) sent in 10.5 seconds\nRated: 1.0 Bps, 0.76 Mbps, 190.47 pps\n"
    results = TcpreplaySender().results(job(), [SenderOutput(text, 0), SenderOutput("", 1)])
    assert [r.pkts_sent for r in results] == [2000, 0] and results[0].sender == "tcpreplay"
    assert results[0].fell_short() is False and results[0].lateness is None
    assert TcpreplaySender().failure(SenderOutput("", 1)) == "exit status 1"


def test_native_is_one_process_for_all_replayers():
    sender = NativeSender(program=Path("/opt/ibreplay"))
    (proc,) = sender.processes(job())
    assert proc.argv[0] == "/opt/ibreplay" and proc.replayers == (0, 1) and proc.output == "replay-native.json"
    assert proc.argv.count("--pcap") == 2 and "--cpus" in proc.argv
    doc = {"tool": "ibreplay", "start_unix": 5.0, "interrupted": False, "cpu_s": 0.1, "replayers": [
        {"index": i, "pkts_sent": 2000, "bytes_sent": 1_000_000, "failed": 0, "retries": 0, "elapsed_s": 10.0,
         "pps": 200.0, "mbps": 0.8, "cpu_s": 0.05, "lateness_us": {"p50": 1, "p99": 2, "max": 3},
         "per_second": []} for i in range(2)]}
    out = SenderOutput(json.dumps(doc), 0)
    results = sender.results(job(), [out])
    assert [r.index for r in results] == [0, 1] and all(r.rate_ratio == 2.0 for r in results)
    assert sender.start_unix([out]) == 5.0 and sender.failure(out) is None
    assert sender.failure(SenderOutput("ibreplay: bad interface x: No such device\n", 1)) == \
        "bad interface x: No such device"


def test_deadlines_per_rate_kind():
    offsets = np.array([0, 100, 300], dtype=np.int64)
    sizes = np.array([10, 20, 30], dtype=np.int64)
    assert deadlines_ns(offsets, sizes, Rate(kind="recorded"), 2).tolist() == [0, 100, 300, 300, 400, 600]
    assert deadlines_ns(offsets, sizes, Rate(kind="multiplier", value=2.0)).tolist() == [0, 50, 150]
    assert deadlines_ns(offsets, sizes, Rate(kind="pps", value=1e9 / 10)).tolist() == [0, 10, 20]
    # 8 Mbit/s = 1 byte per µs: the bytes before each packet, in µs
    assert deadlines_ns(offsets, sizes, Rate(kind="mbps", value=8.0), 2).tolist() == \
        [0, 10_000, 30_000, 60_000, 70_000, 90_000]
    assert deadlines_ns(offsets, sizes, Rate(kind="topspeed")) is None


def test_wire_lateness_sees_drift_and_pairs_interleaved_replayers():
    deadlines = np.arange(0, 1_000_000_000, 1_000_000, dtype=np.int64)  # 1000 packets, 1 ms apart
    drifting = deadlines + np.arange(1000) * 50_000 + 7_000_000_000  # 50 µs later each time, unknown clock
    late = wire_lateness(drifting, deadlines)
    assert late.max_ms == pytest.approx(999 * 0.05) and late.p50_ms == pytest.approx(500 * 0.05, rel=0.01)
    two = np.concatenate([deadlines, deadlines + 3_000])  # two replayers, one 3 µs behind the other
    late2 = wire_lateness(two + 123, np.tile(deadlines, 2))
    assert late2.max_ms == pytest.approx(0.003) and late2.p50_ms <= 0.003
    with pytest.raises(ValueError):
        wire_lateness(deadlines[:-1], deadlines)


def test_planned_per_second():
    from idsbench.traffic.schedule import planned_per_second

    offsets = np.array([0, 400_000_000, 1_200_000_000, 2_500_000_000], dtype=np.int64)
    sizes = np.array([100, 200, 300, 400], dtype=np.int64)
    plan = planned_per_second(deadlines_ns(offsets, sizes, Rate(kind="multiplier", value=2.0), 2), sizes, 2)
    # the second loop starts one span (2.5 s) later; at 2X every deadline halves:
    # 0, .2, .6 | 1.25, 1.25, 1.45, 1.85 | 2.5 s
    assert [(s.t, s.pkts, s.bytes) for s in plan] == [(0, 3, 600), (1, 4, 1000), (2, 1, 400)]
