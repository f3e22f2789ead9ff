"""Requested against achieved rate per second (analysis/fidelity.py)."""

from __future__ import annotations

import pytest

from idsbench.analysis.fidelity import sample_fidelity, trace_rate
from idsbench.store.schema import CaseParams, PerSecond, ReplayerRecord, ReplayRecord, SampleSummary, TraceRecord

TRACE = TraceRecord(ref="t.pcap", path="/t.pcap", sha256="0" * 64, packets=25, bytes=2500, duration_s=2.5,
                    per_second=(PerSecond(t=0, packets=10), PerSecond(t=1, packets=10), PerSecond(t=2, packets=5)))


def test_trace_rate_repeats_loops_back_to_back():
    # 2 loops of a 2.5 s trace: second 2 holds the first loop's last 5 packets and the second's first 5
    assert trace_rate(TRACE, 2, 1.0) == pytest.approx((10, 10, 10, 10, 10))


def test_trace_rate_compresses_by_the_multiplier():
    assert trace_rate(TRACE, 1, 2.0) == pytest.approx((20, 5))
    assert sum(trace_rate(TRACE, 3, 1.5)) == pytest.approx(75)


def _summary(rate: str, replayers: list[ReplayerRecord], **replay: object) -> SampleSummary:
    return SampleSummary(campaign="c", case_id="x", sample=0, status="ok", trace=TRACE,
                         case=CaseParams(trace="t.pcap", replayers=len(replayers), rate=rate),
                         replay=ReplayRecord(start_unix=0, end_unix=3, sent_pkts=0, sent_bytes=0,
                                             replayers=tuple(replayers), **replay))  # type: ignore[arg-type]


def test_the_native_schedule_is_summed_over_replayers():
    per_second = (PerSecond(t=0, packets=100, due_packets=100), PerSecond(t=1, packets=80, due_packets=100))
    r = [ReplayerRecord(index=i, pkts_sent=180, bytes_sent=0, per_second=per_second) for i in range(2)]
    f = sample_fidelity(_summary("pps=100", r))
    assert f is not None and f.achieved_pps == (200, 160) and f.requested_pps == (200, 200)


def test_tcpreplay_rates_come_from_the_case():
    r = [ReplayerRecord(index=0, pkts_sent=250, bytes_sent=0)]
    f = sample_fidelity(_summary("pps=100", r, requested_pps_per_replayer=100.0, planned_s=2.5))
    assert f is not None and f.achieved_pps == () and f.requested_pps == pytest.approx((100, 100, 50))
    recorded = sample_fidelity(_summary("recorded", r * 1))
    assert recorded is not None and recorded.requested_pps == pytest.approx((10, 10, 5))
    assert sample_fidelity(_summary("topspeed", r)).requested_pps is None  # type: ignore[union-attr]
