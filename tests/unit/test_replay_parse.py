from pathlib import Path

from idsbench.spec import Rate
from idsbench.traffic import replay

OUTPUT = """Actual: 179 packets (69000 bytes) sent in 0.089008 seconds
Rated: 775211.2 Bps, 6.20 Mbps, 2011.05 pps
Statistics for network device: ibtx0
\tSuccessful packets:        179
\tFailed packets:            3
\tTruncated packets:         1
"""


def test_parse_final_report():
    r = replay.parse_output(OUTPUT, index=2, requested=2000.0, exit_code=0)
    assert (r.index, r.pkts_sent, r.bytes_sent, r.failed, r.truncated) == (2, 179, 69000, 3, 1)
    assert r.elapsed_s == 0.089008 and r.pps == 2011.05 and r.mbps == 6.20
    assert r.shortfall == 0.0


def test_dead_replayer_counts_zero_and_fatal_is_found():
    text = "\nFatal Error in tcpreplay.c:main() line 122:\n Unable to retrieve information from file x\n"
    r = replay.parse_output(text, index=0, requested=100.0, exit_code=255)
    assert r.pkts_sent == 0 and r.shortfall is None
    assert replay.fatal_message(text).startswith("Unable to retrieve")


def test_shortfall():
    r = replay.parse_output(OUTPUT.replace("2011.05 pps", "1500.0 pps"), index=0, requested=2000.0, exit_code=0)
    assert abs(r.shortfall - 0.25) < 1e-9


def test_argv_per_rate():
    pcap = Path("/x.pcap")
    assert "--topspeed" in replay.tcpreplay_argv("ibtx0", pcap, Rate(kind="topspeed"), 1, 100)
    assert "--pps=20000" in replay.tcpreplay_argv("ibtx0", pcap, Rate(kind="pps", value=20000), 1, 100)
    assert "--mbps=100" in replay.tcpreplay_argv("ibtx0", pcap, Rate(kind="mbps", value=100), 1, 100)
    assert "--multiplier=2" in replay.tcpreplay_argv("ibtx0", pcap, Rate(kind="multiplier", value=2), 1, 100)
    argv = replay.tcpreplay_argv("ibtx0", pcap, Rate(kind="recorded"), 3, 100)
    assert argv[:3] == ["tcpreplay", "-i", "ibtx0"] and "--loop=3" in argv and argv[-1] == "/x.pcap"
    assert not any(a.startswith(("--pps", "--mbps", "--multiplier", "--topspeed")) for a in argv)


def test_requested_pps():
    assert replay.requested_pps(Rate(kind="recorded"), 1000, 10.0, 500_000) == 100.0
    assert replay.requested_pps(Rate(kind="multiplier", value=2), 1000, 10.0, 500_000) == 200.0
    assert replay.requested_pps(Rate(kind="pps", value=5), 1000, 10.0, 500_000) == 5.0
    assert replay.requested_pps(Rate(kind="mbps", value=8), 1000, 10.0, 500_000) == 2000.0
    assert replay.requested_pps(Rate(kind="topspeed"), 1000, 10.0, 500_000) is None


def test_duration_loops_until_time():
    argv = replay.tcpreplay_argv("ibtx0", Path("/x.pcap"), Rate(kind="recorded"), 1, 100, duration_s=30)
    assert "--loop=0" in argv and "--duration=30" in argv


def test_overrun_flags_a_slow_sender():
    ok = replay.parse_output(OUTPUT, index=0, requested=2000.0, exit_code=0, planned_s=0.0895)
    assert not ok.fell_short()
    slow = replay.parse_output(OUTPUT, index=0, requested=None, exit_code=0, planned_s=0.05)
    assert slow.overrun > 0.7 and slow.fell_short()
    assert replay.planned_seconds(1000, 100.0, None) == 10.0
    assert replay.planned_seconds(1000, None, 30.0) == 30.0
    assert replay.planned_seconds(1000, None, None) is None
