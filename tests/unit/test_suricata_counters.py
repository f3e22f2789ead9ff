"""Counter mapping from eve stats (missing = 0), CounterPoints, and final counters of a finished run."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from idsbench.errors import SensorFailed
from idsbench.sensors.base import Counters
from idsbench.sensors.suricata import SuricataRun, counters_from_stats, point_from_record

FULL_STATS = {
    "uptime": 7,
    "capture": {"kernel_packets": 1000, "kernel_drops": 12, "errors": 0},
    "decoder": {
        "pkts": 988, "bytes": 500000, "invalid": 3, "vlan": 4,
        "event": {"ipv4": {"trunc_pkt": 2, "opt_invalid": 0}, "afpacket": {"trunc_pkt": 1}},
    },
    "flow": {"total": 40, "tcp": 30, "udp": 9, "icmpv4": 1, "active": 5},
    "detect": {"alert": 17, "engines": [{"id": 0}]},
}


def test_full_mapping() -> None:
    c = counters_from_stats(FULL_STATS)
    assert c == Counters(
        captured_pkts=1000, dropped_pkts=12, decoded_pkts=988, decoded_bytes=500000,
        alerts=17, flows=40, invalid_pkts=3, decoder_events=3,
    )


def test_missing_counters_are_zero() -> None:
    assert counters_from_stats({}) == Counters()
    assert counters_from_stats({"decoder": {"pkts": 5}}) == Counters(decoded_pkts=5)
    assert counters_from_stats({"capture": None, "detect": "weird"}) == Counters()


def test_flows_without_total_sum_per_protocol() -> None:
    c = counters_from_stats({"flow": {"tcp": 3, "udp": 4, "icmpv4": 1, "icmpv6": 2, "active": 99}})
    assert c.flows == 10


def test_counters_helpers() -> None:
    a = Counters(captured_pkts=5, alerts=2)
    b = Counters(captured_pkts=3, alerts=4, flows=1)
    assert a.max_with(b) == Counters(captured_pkts=5, alerts=4, flows=1)
    assert Counters.from_mapping({"alerts": 3, "bogus": 1, "flows": None}) == Counters(alerts=3)
    assert Counters.field_names()[0] == "captured_pkts"
    assert set(a.as_dict()) == set(Counters.field_names())


def test_point_from_record() -> None:
    rec = {"timestamp": "2026-11-22T05:12:27.669436+0000", "event_type": "stats", "stats": FULL_STATS}
    p = point_from_record(rec)
    assert p is not None
    assert p.t_unix == pytest.approx(datetime(2026, 11, 22, 5, 12, 27, 669436, tzinfo=timezone.utc).timestamp())
    assert p.uptime_s == 7.0 and p.counters.alerts == 17
    assert point_from_record({"event_type": "alert"}) is None


def _run(tmp_path: Path) -> SuricataRun:
    return SuricataRun(
        argv=["suricata"], log_dir=tmp_path, eve_path=tmp_path / "eve.json",
        log_path=tmp_path / "suricata.log", yaml_path=tmp_path / "suricata.yaml",
        pid_path=tmp_path / "suricata.pid", console_path=tmp_path / "stdout.txt",
    )


def _stats_line(t: str, uptime: int, pkts: int, drops: int = 0, alerts: int = 0) -> str:
    return json.dumps({
        "timestamp": t, "event_type": "stats",
        "stats": {"uptime": uptime, "capture": {"kernel_packets": pkts, "kernel_drops": drops},
                  "decoder": {"pkts": pkts - drops}, "detect": {"alert": alerts}},
    }, separators=(",", ":"))


def test_series_and_final_counters_from_eve(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.counter_series() == [] and run.alerts_by_signature() == {} and run.live_counters() is None
    alert = json.dumps({"timestamp": "2026-01-01T00:00:01.0+0000", "event_type": "alert",
                        "alert": {"signature_id": 1}}, separators=(",", ":"))
    run.eve_path.write_text("\n".join([
        _stats_line("2026-01-01T00:00:01.000000+0000", 1, 10),
        alert,
        _stats_line("2026-01-01T00:00:02.000000+0000", 2, 50, drops=5, alerts=1),
    ]) + "\n")
    series = run.counter_series()
    assert [p.uptime_s for p in series] == [1.0, 2.0]
    assert series[1].t_unix - series[0].t_unix == pytest.approx(1.0)
    final = run.final_counters()
    assert (final.captured_pkts, final.dropped_pkts, final.decoded_pkts, final.alerts) == (50, 5, 45, 1)
    assert run.alerts_by_signature() == {1: 1}
    live = run.live_counters()  # the newest record, read incrementally
    assert live is not None and live.counters.captured_pkts == 50 and live.uptime_s == 2.0
    with run.eve_path.open("a") as fh:
        fh.write(_stats_line("2026-01-01T00:00:03.000000+0000", 3, 70)[:40])  # half a line: not yet
    assert run.live_counters() == live
    with run.eve_path.open("a") as fh:
        fh.write(_stats_line("2026-01-01T00:00:03.000000+0000", 3, 70)[40:] + "\n")
    assert run.live_counters().counters.captured_pkts == 70


def test_final_counters_take_max_with_shutdown_summary(tmp_path: Path) -> None:
    # The last stats record lags; the shutdown lines in suricata.log have the final totals.
    run = _run(tmp_path)
    run.eve_path.write_text(_stats_line("2026-01-01T00:00:01.000000+0000", 1, 215, alerts=1) + "\n")
    run.log_path.write_text(
        "[1 - Suricata-Main] 2026-01-01 00:00:03 Info: counters: Alerts: 2\n"
        "[1 - Suricata-Main] 2026-01-01 00:00:03 Notice: device: sen0: packets: 572, drops: 3 (0.52%), invalid chksum: 0\n"
    )
    final = run.final_counters()
    assert (final.captured_pkts, final.dropped_pkts, final.alerts, final.decoded_pkts) == (572, 3, 2, 215)


def test_final_counters_without_any_source_fail(tmp_path: Path) -> None:
    run = _run(tmp_path)
    run.log_path.write_text("[1 - Suricata-Main] 2026-01-01 00:00:00 Error: x: boom\n")
    with pytest.raises(SensorFailed, match="no stats record"):
        run.final_counters()


def test_a_record_with_captured_behind_decoded_counts_the_decoded_as_captured():
    """capture.kernel_packets is refreshed less often than decoder.pkts (measured 336,311 vs 491,806 in one
    record mid-search): a decoded packet was captured."""
    stats = {"capture": {"kernel_packets": 336_311, "kernel_drops": 10}, "decoder": {"pkts": 491_806}}
    c = counters_from_stats(stats)
    assert (c.captured_pkts, c.decoded_pkts, c.dropped_pkts, c.unprocessed_pkts) == (491_816, 491_806, 10, 0)
    ahead = counters_from_stats({"capture": {"kernel_packets": 500_000, "kernel_drops": 10},
                                 "decoder": {"pkts": 491_806}})
    assert ahead.captured_pkts == 500_000 and ahead.unprocessed_pkts == 8_184  # still in the ring: unchanged
