"""The nodetect engine's adapter (the capture path without detection): argv per method, settings, readiness and live/final counters from
outputs in the format ibcapture and tcpdump (under ibtick) write (docs/snort.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idsbench.errors import SensorFailed, SpecError
from idsbench.sensors import registry
from idsbench.sensors.base import SensorOptions
from idsbench.sensors.nodetect import NoDetect, nodetect_settings
from idsbench.sensors.nodetect.run import NoDetectRun


class FakeNoDetect(NoDetect):
    def _program(self, name: str) -> Path:
        return Path(f"/cache/native/{name}-0123456789abcdef")


def test_registered() -> None:
    assert {"suricata", "snort", "nodetect"} <= set(registry.names()) and "capture" not in registry.names()
    assert registry.engine("nodetect").name == "nodetect"
    assert registry.capture_methods("nodetect").names() == ("afpacket", "libpcap")


def test_afpacket_argv_one_thread_per_cpu_in_a_fanout_group(tmp_path: Path) -> None:
    run = FakeNoDetect().prepare(tmp_path, "ibr1", SensorOptions(stats_interval_s=2, overrides=(("threads", "2"),)),
                                mtu=9000)
    argv = run.argv
    assert argv[:3] == ["/cache/native/ibcapture-0123456789abcdef", "-i", "ibr1"]
    assert argv[argv.index("--threads") + 1] == "2" and argv[argv.index("--interval") + 1] == "2"
    assert "--fanout" in argv and argv[argv.index("--stats") + 1] == str(tmp_path.resolve() / "capture-stats.json")
    one = FakeNoDetect().prepare(tmp_path, "ibr1", SensorOptions(overrides=(("threads", "1"),)))
    assert "--fanout" not in one.argv


def test_libpcap_argv_is_tcpdump_under_ibtick(tmp_path: Path) -> None:
    run = FakeNoDetect().prepare(tmp_path, "ibr1", SensorOptions(capture="libpcap",
                                                                overrides=(("buffer_kib", "256"),)))
    assert run.argv == ["/cache/native/ibtick-0123456789abcdef", "--interval", "1", "--", "tcpdump", "-i", "ibr1",
                        "-n", "-w", "/dev/null", "-B", "256"]
    assert run.method == "libpcap"


def test_settings_are_checked() -> None:
    with pytest.raises(SpecError, match="rings"):
        nodetect_settings(SensorOptions(overrides=(("rings", "2"),)))
    with pytest.raises(SpecError, match="whole number"):
        nodetect_settings(SensorOptions(overrides=(("block_count", "many"),)))
    with pytest.raises(SpecError, match="nodetect has no such capture method") as err:
        FakeNoDetect().prepare(Path("/tmp"), "x", SensorOptions(capture="pfring"))
    assert err.value.fix == "nodetect captures with afpacket, libpcap."


def test_block_must_hold_a_jumbo_frame(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="block_size >= 9086"):
        FakeNoDetect().prepare(tmp_path, "ibr1", SensorOptions(overrides=(("block_size", "8192"),)), mtu=9000)


def test_no_rules_and_static_programs_shared() -> None:
    c = FakeNoDetect()
    assert c.resolve_rules(["builtin:events", "/x.rules"]) == []
    assert c.image_packages() == ("tcpdump",)
    assert [p.name.split("-")[0] for p in c.host_paths()] == ["ibcapture", "ibtick"]


def _line(t: float, kp: int, kd: int, p: int, final: bool = False) -> str:
    return json.dumps({"t_unix": t, "uptime_s": t - 100, "interface": "ibr1", "threads": 2, "final": final,
                       "kernel_packets": kp, "kernel_drops": kd, "kernel_freezes": 0, "pkts": p,
                       "bytes": 60 * p, "truncated": 0, "vlan_tagged": 0, "blocks": 1}) + "\n"


def _run(tmp_path: Path, method: str) -> NoDetectRun:
    return NoDetectRun(argv=["x"], log_dir=tmp_path, method=method, interface="ibr1",
                      console_path=tmp_path / "stdout.txt", stats_path=tmp_path / "capture-stats.json")


def test_ibcapture_live_then_final(tmp_path: Path) -> None:
    run = _run(tmp_path, "afpacket")
    assert run.live_counters() is None
    stats = tmp_path / "capture-stats.json"
    stats.write_text(_line(101, 0, 0, 0) + _line(102, 500, 10, 480)[:30])
    p = run.live_counters()
    assert p is not None and p.t_unix == 101 and p.counters.captured_pkts == 0
    with stats.open("a") as fh:
        fh.write(_line(102, 500, 10, 480)[30:])
    p = run.live_counters()
    assert p is not None and (p.counters.captured_pkts, p.counters.unprocessed_pkts) == (500, 10)
    with stats.open("a") as fh:
        fh.write(_line(103, 500, 10, 490, final=True))
    final = run.final_counters()
    assert (final.captured_pkts, final.dropped_pkts, final.decoded_pkts, final.decoded_bytes) == (500, 10, 490, 29400)
    assert final.unprocessed_pkts == 0 and final.alerts == 0
    assert [q.t_unix for q in run.counter_series()] == [101, 102, 103]
    integrity = run.integrity()
    assert integrity is not None and (integrity.lines, integrity.corrupt_lines) == (3, 0)


TCPDUMP = """tcpdump: listening on ibr1, link-type EN10MB (Ethernet), snapshot length 262144 bytes
ibtick: tick t_unix=1000.5 uptime_s=1.0
tcpdump: 100 packets captured, 120 packets received by filter, 0 packets dropped by kernel
ibtick: tick t_unix=1001.5 uptime_s=2.0
"""


def test_tcpdump_reports_dated_by_ibtick(tmp_path: Path) -> None:
    run = _run(tmp_path, "libpcap")
    console = tmp_path / "stdout.txt"
    console.write_text(TCPDUMP)
    p = run.live_counters()
    assert p is not None and (p.t_unix, p.counters.captured_pkts, p.counters.decoded_pkts) == (1000.5, 120, 100)
    with console.open("a") as fh:  # the report of the second tick arrives in the next read
        fh.write("tcpdump: 120 packets captured, 120 packets received by filter, 0 packets dropped by kernel\n")
    p = run.live_counters()
    assert p is not None and (p.t_unix, p.uptime_s, p.counters.decoded_pkts) == (1001.5, 2.0, 120)
    with console.open("a") as fh:
        fh.write("120 packets captured\n120 packets received by filter\n0 packets dropped by kernel\n")
    final = run.final_counters()
    assert (final.captured_pkts, final.decoded_pkts, final.dropped_pkts) == (120, 120, 0)
    assert run.integrity() is None and run.errors() == []


def test_readiness_and_failure(tmp_path: Path) -> None:
    run = _run(tmp_path, "afpacket")
    console = tmp_path / "stdout.txt"
    console.write_text("ibcapture: capturing on ibr1 (threads 2, ring 64 x 1048576 bytes, fanout 7)\n")
    assert run.wait_ready(lambda: None, 5, sleep=lambda s: None) >= 0
    console.write_text("ibcapture: error: no interface ibr1 in this network namespace\n")
    with pytest.raises(SensorFailed, match="no interface ibr1"):
        run.wait_ready(lambda: 1, 5, sleep=lambda s: None)
    with pytest.raises(SensorFailed, match="left no counters"):
        run.final_counters()
