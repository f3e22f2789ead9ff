"""Parsing the nodetect engine's counters, from outputs recorded on this machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.errors import InputError
from idsbench.sensors.nodetect.stats import (
    CaptureCounters,
    capture_errors,
    parse_ibcapture_line,
    parse_ibcapture_stats,
    parse_tcpdump_reports,
    read_ibcapture_stats,
)

# ibcapture on a veth: nf_evidence02.pcap (572 packets) at 2000 pps, then SIGTERM.
IBCAPTURE_LOSSLESS = (
    '{"t_unix":1795402900.363400,"uptime_s":0.500070,"interface":"ibsm1","threads":1,"final":false,'
    '"kernel_packets":0,"kernel_drops":0,"kernel_freezes":0,"pkts":0,"bytes":0,"truncated":0,'
    '"vlan_tagged":0,"blocks":0}\n'
    '{"t_unix":1795402900.863444,"uptime_s":1.000113,"interface":"ibsm1","threads":1,"final":false,'
    '"kernel_packets":572,"kernel_drops":0,"kernel_freezes":0,"pkts":572,"bytes":325968,"truncated":0,'
    '"vlan_tagged":0,"blocks":27}\n'
    '{"t_unix":1795402901.078348,"uptime_s":1.215017,"interface":"ibsm1","threads":1,"final":true,'
    '"kernel_packets":572,"kernel_drops":0,"kernel_freezes":0,"pkts":572,"bytes":325968,"truncated":0,'
    '"vlan_tagged":0,"blocks":27}\n'
)
# A 2 x 4 KiB ring at topspeed (zeek_modbusBig.pcap, 13622 packets): the kernel drops.
IBCAPTURE_DROPS = (
    '{"t_unix":1795402904.875282,"uptime_s":0.556922,"interface":"ibsm1","threads":1,"final":true,'
    '"kernel_packets":13622,"kernel_drops":12590,"kernel_freezes":4,"pkts":1032,"bytes":75053,'
    '"truncated":0,"vlan_tagged":0,"blocks":41}\n'
)
# tcpdump -w /dev/null: SIGUSR1 before, during and after the replay, then SIGTERM.
TCPDUMP_STDERR = """\
tcpdump: listening on ibsm1, link-type EN10MB (Ethernet), snapshot length 262144 bytes
tcpdump: 0 packets captured, 0 packets received by filter, 0 packets dropped by kernel
tcpdump: 418 packets captured, 572 packets received by filter, 0 packets dropped by kernel
tcpdump: 572 packets captured, 572 packets received by filter, 0 packets dropped by kernel
572 packets captured
572 packets received by filter
0 packets dropped by kernel
"""
TCPDUMP_DROPS = """\
tcpdump: listening on ibsm1, link-type EN10MB (Ethernet), snapshot length 262144 bytes
6411 packets captured
13622 packets received by filter
7211 packets dropped by kernel
"""


def test_ibcapture_series_and_final() -> None:
    log = parse_ibcapture_stats(IBCAPTURE_LOSSLESS)
    assert [p.uptime_s for p in log.points] == [0.50007, 1.000113, 1.215017]
    assert log.bad_lines == ()
    final = log.final
    assert final is not None and final.final and final.t_unix == pytest.approx(1795402901.078348)
    assert final.counters == CaptureCounters(captured_pkts=572, decoded_pkts=572, decoded_bytes=325968)
    assert final.counters.unread_pkts == 0
    assert final.counters.schema_counters() == {"captured_pkts": 572, "dropped_pkts": 0, "decoded_pkts": 572,
                                                "decoded_bytes": 325968, "alerts": 0, "flows": 0}


def test_ibcapture_drops_close_the_accounting() -> None:
    c = parse_ibcapture_line(IBCAPTURE_DROPS.strip()).counters
    assert (c.captured_pkts, c.dropped_pkts, c.decoded_pkts, c.kernel_freezes) == (13622, 12590, 1032, 4)
    assert c.captured_pkts == c.decoded_pkts + c.dropped_pkts


def test_ibcapture_cut_line_is_reported_not_dropped_silently(tmp_path: Path) -> None:
    cut = IBCAPTURE_LOSSLESS.splitlines()[0] + "\n" + IBCAPTURE_LOSSLESS.splitlines()[1][:70]
    path = tmp_path / "stats.json"
    path.write_text(cut)
    log = read_ibcapture_stats(path)
    assert len(log.points) == 1 and log.bad_lines == (2,)
    assert log.final is None and log.last is not None and not log.last.final


_TAIL = ('{"t_unix":1.0,"uptime_s":1.0,"final":false,"kernel_packets":KP,"kernel_drops":0,"pkts":0,'
         '"bytes":0,"kernel_freezes":0,"truncated":0,"vlan_tagged":0}')


@pytest.mark.parametrize("line", [
    "[]",
    "{not json",
    _TAIL.replace("KP", "-1"),
    _TAIL.replace("KP", "true"),
    _TAIL.replace("KP", "1").replace('"t_unix":1.0,', ""),
])
def test_ibcapture_rejects_malformed_lines(line: str) -> None:
    with pytest.raises((ValueError, TypeError)):
        parse_ibcapture_line(line)
    assert parse_ibcapture_stats("\n" + line + "\n").bad_lines == (2,)


def test_missing_stats_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="stats file .*nope.json"):
        read_ibcapture_stats(tmp_path / "nope.json")


def test_tcpdump_periodic_and_exit_reports() -> None:
    log = parse_tcpdump_reports(TCPDUMP_STDERR)
    assert [(p.counters.decoded_pkts, p.counters.captured_pkts, p.final) for p in log.points] == [
        (0, 0, False), (418, 572, False), (572, 572, False), (572, 572, True)]
    assert log.points[1].counters.unread_pkts == 154  # still in libpcap's ring: not a drop
    assert log.final is not None and log.final.t_unix is None
    assert log.final.counters.decoded_bytes == 0  # tcpdump does not count bytes


def test_tcpdump_drops_and_interface_drops() -> None:
    final = parse_tcpdump_reports(TCPDUMP_DROPS).final
    assert final is not None
    assert (final.counters.captured_pkts, final.counters.dropped_pkts, final.counters.decoded_pkts) == (
        13622, 7211, 6411)
    with_if = TCPDUMP_DROPS + "3 packets dropped by interface\n"
    last = parse_tcpdump_reports(with_if).final
    assert last is not None and last.counters.interface_drops == 3
    single = parse_tcpdump_reports("1 packet captured\n1 packet received by filter\n0 packets dropped by kernel\n")
    assert single.final is not None and single.final.counters.decoded_pkts == 1


def test_tcpdump_killed_has_no_final_report() -> None:
    log = parse_tcpdump_reports(TCPDUMP_STDERR.splitlines()[0] + "\n")
    assert log.points == () and log.final is None


def test_capture_errors_keep_errors_only() -> None:
    text = TCPDUMP_STDERR + "tcpdump: ibrx9: No such device exists\n(SIOCGIFHWADDR: No such device)\n"
    assert capture_errors(text) == ["tcpdump: ibrx9: No such device exists"]
    assert capture_errors("ibcapture: capturing on x (threads 1)\nibcapture: error: bind to x: No such device\n"
                          ) == ["ibcapture: error: bind to x: No such device"]
