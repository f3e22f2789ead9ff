"""The host-speed witness: its log (store/witness.py), a sample's figure and `host_speed` /
`sensor_us_per_pkt_norm` (analysis/sample.py), the drift figure (report/figures_host.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from idsbench.analysis.sample import host_speed, median_witness_rate, sample_figures
from idsbench.monitor import witnessloop
from idsbench.monitor.witness import Witness, start_witness
from idsbench.proc import Supervisor
from idsbench.report.figures_host import host_speed_figure
from idsbench.store.reader import SampleRecord
from idsbench.store.schema import (
    CaseParams,
    ReplayRecord,
    SampleSummary,
    SensorCostRecord,
    TraceRecord,
    WitnessRecord,
)
from idsbench.store.witness import Piece, cpu_share, read_witness, span_rate, witness_record
from idsbench.teardown import TeardownStack

TRACE = TraceRecord(ref="t.pcap", path="/t.pcap", sha256="0" * 64, packets=10, bytes=1000, duration_s=1.0)


def test_the_log_reader_leaves_out_the_header_a_cut_last_line_and_lines_that_do_not_parse(tmp_path: Path):
    log = tmp_path / "witness.csv"
    log.write_text(witnessloop.HEADER + "10.0,1000,1000000\nnot,a,line\n10.2,2000,1000000\n10.4,3000,10")
    assert read_witness(log) == [Piece(10.0, 1000, 1_000_000), Piece(10.2, 2000, 1_000_000)]
    assert read_witness(tmp_path / "none.csv") == []


def test_the_rate_is_over_the_pieces_that_ended_inside_the_span():
    pieces = [Piece(9.9, 5000, 1_000_000), Piece(10.0, 1000, 1_000_000), Piece(10.2, 3000, 1_000_000),
              Piece(10.5, 9000, 1_000_000)]
    # 4,000 iterations in 2 ms of CPU: 2 per µs; the pieces before and after the span are left out
    assert span_rate(pieces, 10.0, 10.2) == (2.0, 2)
    assert span_rate(pieces, 11.0, 12.0) == (None, 0)
    # 4 ms of CPU over 0.6 s of log + one period before the first piece
    assert cpu_share(pieces, 0.2) == pytest.approx(0.004 / 0.8)


def test_a_samples_witness_record(tmp_path: Path):
    log = tmp_path / "witness.csv"
    log.write_text(witnessloop.HEADER + "".join(f"{10 + k * 0.2:.4f},1000,500000\n" for k in range(10)))
    w = witness_record(log, [1], 0.2, 0.001, 10.1, 11.0)
    assert (w.pieces, w.rate, w.span_s, w.cpus) == (5, 2.0, 0.9, (1,))


def test_the_loop_calibrates_to_its_piece_and_the_spin_is_deterministic():
    n = witnessloop.calibrate(0.002)
    assert n >= 100 and witnessloop.spin(1000) == witnessloop.spin(1000)


def _sample(tmp_path: Path, case: str, index: int, start: float, us_per_pkt: float | None,
            rate: float | None) -> SampleRecord:
    summary = SampleSummary(
        campaign="c", case_id=case, sample=index, trace=TRACE, case=CaseParams(trace="t.pcap", replayers=1, rate="pps=10"),
        replay=ReplayRecord(start_unix=start, end_unix=start + 1, sent_pkts=10, sent_bytes=1000),
        cost=None if us_per_pkt is None else SensorCostRecord(cpu_s=1.0, processed_pkts=10, us_per_pkt=us_per_pkt),
        witness=None if rate is None else WitnessRecord(cpus=(1,), period_s=0.2, piece_s=0.001, span_s=1.0,
                                                        pieces=5, rate=rate))
    return SampleRecord(case, index, tmp_path / f"{case}-{index}", summary)


def test_host_speed_is_the_rate_over_the_campaigns_median_and_normalises_cpu_per_packet(tmp_path: Path):
    samples = [_sample(tmp_path, "x", i, 100.0 + i, 10.0, rate) for i, rate in enumerate((1.8, 2.0, 2.2))]
    samples.append(_sample(tmp_path, "x", 3, 104.0, 10.0, None))  # no witness: no figure, not in the median
    median = median_witness_rate(s.summary for s in samples)
    assert median == 2.0
    assert [host_speed(s.summary, median) for s in samples] == [0.9, 1.0, 1.1, None]
    assert median_witness_rate(s.summary for s in samples[:2]) == pytest.approx(1.9)  # an even count
    # a 10% faster host made the packets look 10% cheaper: at the median speed they cost 10% more
    fast = sample_figures(samples[2], 0.5, median_rate=median)
    assert fast.host_speed == 1.1 and fast.sensor_us_per_pkt == 10.0 and fast.sensor_us_per_pkt_norm == 11.0
    none = sample_figures(samples[3], 0.5, median_rate=median)
    assert none.host_speed is None and none.sensor_us_per_pkt_norm is None and none.sensor_us_per_pkt == 10.0


class _Campaign:
    def __init__(self, samples: list[SampleRecord]):
        self.samples = samples


def test_the_drift_figure_has_a_point_per_sample_with_a_witness(tmp_path: Path):
    samples = [_sample(tmp_path, "x", i, 100.0 + 60 * i, 10.0, 2.0 + 0.1 * i) for i in range(4)]
    fig = host_speed_figure(_Campaign(samples), [], {})  # type: ignore[arg-type]
    assert fig is not None
    (line,) = fig.axes[0].get_lines()[:1]
    assert list(line.get_xdata()) == [0.0, 1.0, 2.0, 3.0]  # minutes since the first sample
    assert host_speed_figure(_Campaign([_sample(tmp_path, "x", 0, 1.0, 1.0, None)]), [], {}) is None  # type: ignore[arg-type]


def test_the_witness_process_logs_pieces_on_its_cpu_and_the_teardown_stack_ends_it(tmp_path: Path):
    log = tmp_path / "witness.csv"
    cpu = max(os.sched_getaffinity(0))
    with TeardownStack(state_dir=tmp_path / "state") as stack:
        w = start_witness(Supervisor(stack), [cpu], log)
        assert isinstance(w, Witness) and w.child is not None
        pid = w.child.pid
        assert os.sched_getaffinity(pid) == {cpu} or _wait(lambda: os.sched_getaffinity(pid) == {cpu})
        assert _wait(lambda: len(read_witness(log)) >= 2), log.read_text() if log.exists() else "no log"
    assert w.child.poll() is not None  # the stack ended it (stop() was never called)
    pieces = read_witness(log)
    assert all(p.iterations > 0 and p.cpu_ns > 0 for p in pieces)


def _wait(check: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False
