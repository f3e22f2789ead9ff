"""Snort 3's counters, parsed from outputs recorded on this machine (tests/unit/data/snort/).

Recordings: nf_evidence02.pcap (572 packets, 325968 bytes) against two rules (sid 1000002: every
syslog packet, 26; sid 1000001: SMTP "MAIL FROM", 2), read with -r ("readback"), live on a veth
with two packet threads ("live2"), and a 3 x 13622-packet topspeed burst into one thread on 5% of a
CPU with a 1 MiB ring ("drop")."""

from __future__ import annotations

from pathlib import Path

from idsbench.sensors.snort.stats import (
    U64,
    RuleKey,
    SnortCounters,
    count_alerts,
    merge_threads,
    parse_exit_stats,
    parse_perf_monitor,
    perf_series,
    read_alerts,
    read_perf_series,
)

DATA = Path(__file__).parent / "data" / "snort"


def _text(name: str) -> str:
    return (DATA / name).read_text()


def test_exit_stats_of_a_readback() -> None:
    stats = parse_exit_stats(_text("readback_console.txt"))
    assert stats is not None
    assert stats.counters == SnortCounters(received=572, analyzed=572, rx_bytes=325968, alerts=28, logged=28,
                                           flows=9)
    assert stats.pegs["daq"]["pcaps"] == 1
    assert stats.pegs["codec"]["total"] == 572  # the percentage column is not part of the value
    assert stats.pegs["stream_tcp"]["segs_queued"] == 247
    assert "Application" not in str(stats.pegs)  # appid's table is not a module of pegs
    assert stats.counters.schema_counters() == {"captured_pkts": 572, "dropped_pkts": 0, "decoded_pkts": 572,
                                                "decoded_bytes": 325968, "alerts": 28, "flows": 9}


def test_exit_stats_sum_the_packet_threads() -> None:
    stats = parse_exit_stats(_text("live2_console_tail.txt"))
    assert stats is not None
    c = stats.counters
    assert (c.received, c.analyzed, c.dropped, c.rx_bytes, c.alerts) == (572, 572, 0, 325968, 28)


def test_received_excludes_kernel_drops() -> None:
    stats = parse_exit_stats(_text("drop_console_tail.txt"))
    assert stats is not None
    c = stats.counters
    assert (c.received, c.analyzed, c.dropped) == (451, 451, 40415)
    assert c.captured == 3 * 13622  # every packet sent reached the socket: received + dropped
    assert c.schema_counters()["captured_pkts"] == c.schema_counters()["decoded_pkts"] + c.dropped


def test_missing_statistics() -> None:
    text = _text("readback_console.txt")
    assert parse_exit_stats(text[: text.index("Packet Statistics")]) is None  # killed before printing
    empty = parse_exit_stats(_text("no_such_interface_console.txt"))
    assert empty is not None and empty.counters == SnortCounters() and empty.pegs == {}


def test_perf_monitor_series_accumulates_interval_changes() -> None:
    records, bad = parse_perf_monitor(_text("readback_perf_monitor_base.json"))
    assert (len(records), bad) == (41, 0)
    points = perf_series(records)
    assert [p.t_unix for p in points] == sorted(p.t_unix for p in points)
    last = points[-1].counters
    assert (last.received, last.analyzed, last.rx_bytes, last.flows) == (572, 572, 325968, 9)
    assert last.alerts == 27  # the alert after the last record is only in the exit statistics
    # Snort wrote ips_actions.alert = 2**64 - 1 (a change of -1) in one record
    assert any(r.get("ips_actions", {}).get("alert") == U64 - 1 for r in records)  # type: ignore[union-attr]
    wrapped = perf_series([{"timestamp": 1, "detection": {"total_alerts": 5}},
                           {"timestamp": 2, "detection": {"total_alerts": U64 - 1}}])
    assert [p.counters.alerts for p in wrapped] == [5, 4]


def test_perf_monitor_file_cut_while_running() -> None:
    text = _text("readback_perf_monitor_base.json")
    cut = text[: len(text) // 2]
    records, bad = parse_perf_monitor(cut)
    assert bad == 1 and 0 < len(records) < 41
    assert parse_perf_monitor("") == ([], 0)
    assert parse_perf_monitor("[") == ([], 0)


def test_perf_monitor_threads_merge_to_the_totals() -> None:
    series, bad = read_perf_series([DATA / "live2_0_perf_monitor_base.json", DATA / "live2_1_perf_monitor_base.json",
                                    DATA / "absent.json"])
    assert bad == 0 and series
    assert series[-1].counters.analyzed == 572 and series[-1].counters.rx_bytes == 325968
    drop, _ = read_perf_series([DATA / "drop_perf_monitor_base.json"])
    assert drop[-1].counters.dropped == 40415 and drop[-1].counters.captured == 40866


def test_merge_threads_uses_each_threads_latest_value() -> None:
    a = perf_series([{"timestamp": 10, "daq": {"analyzed": 5}}, {"timestamp": 12, "daq": {"analyzed": 1}}])
    b = perf_series([{"timestamp": 11, "daq": {"analyzed": 7}}])
    merged = merge_threads([a, b, []])
    assert [(p.t_unix, p.counters.analyzed) for p in merged] == [(10.0, 5), (11.0, 12), (12.0, 13)]


def test_alerts_per_rule() -> None:
    counts = read_alerts([DATA / "readback_alert_json.txt"])
    assert counts.per_rule == {RuleKey(1, 1000002, 3): 26, RuleKey(1, 1000001, 1): 2}
    assert counts.total == 28 and counts.by_sid() == {1000002: 26, 1000001: 2}
    assert (counts.repaired, counts.bad) == (0, 0)
    threads = read_alerts([DATA / "live2_0_alert_json.txt", DATA / "live2_1_alert_json.txt"])
    assert threads.per_rule == counts.per_rule


def test_alert_with_unescaped_quotes_is_still_counted() -> None:
    # Snort 3.12 writes msg with its quotes unescaped: not JSON, but gid/sid/rev are still there
    lines = ['{ "seconds" : 1, "gid" : 1, "sid" : 1000003, "rev" : 1, "msg" : "a "quoted" msg" }',
             '{ "gid" : 116, "sid" : 3, "rev" : 1 }', "garbage", ""]
    counts = count_alerts(lines)
    assert counts.per_rule == {RuleKey(1, 1000003, 1): 1, RuleKey(116, 3, 1): 1}
    assert (counts.repaired, counts.bad) == (1, 1)
    assert counts.by_sid(116) == {3: 1}
