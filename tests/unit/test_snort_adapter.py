"""The Snort adapter's pure parts: Lua overrides, rule variables, runtime packages, the live perf tail,
readiness (fake /proc, fake clock) and the counters of recorded runs (tests/unit/data/snort)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from idsbench.errors import SensorFailed, SpecError
from idsbench.sensors.base import Counters
from idsbench.sensors.snort.config import THREADS_KEY, lua_overrides, lua_value, threads_from
from idsbench.sensors.snort.perf import PerfTail
from idsbench.sensors.snort.run import SnortRun, pids_with_argument
from idsbench.sensors.snort.runtime import DOCUMENTED, parse_dpkg_search, parse_ldd, runtime_packages
from idsbench.sensors.snort.variables import SURICATA_7_VARIABLES, from_suricata_config
from tests.fakeclock import Clock

DATA = Path(__file__).parent / "data" / "snort"


# --- overrides --------------------------------------------------------------------------------------------
def test_lua_values_keep_numbers_and_booleans() -> None:
    assert [lua_value(v) for v in ("3", "-1.5", "1e6", "yes", "False", "hyperscan", "it's")] == \
        ["3", "-1.5", "1e6", "true", "false", "'hyperscan'", "'it\\'s'"]


def test_overrides_become_assignments_after_the_overlay(tmp_path: Path) -> None:
    overlay = tmp_path / "tuning.lua"
    text = lua_overrides((("search_engine.search_method", "hyperscan"), (THREADS_KEY, "2"),
                          ("stream_tcp.session_timeout", "60")), overlay)
    assert text == (f"include '{overlay}'\nsearch_engine.search_method = 'hyperscan'\n"
                    "stream_tcp.session_timeout = 60\n")
    with pytest.raises(SpecError, match="dotted Lua name"):
        lua_overrides((("detect.profile; os.exit()", "1"),))


def test_threads_override() -> None:
    assert threads_from((), 4) == 4
    assert threads_from(((THREADS_KEY, "1"),), 4) == 1
    with pytest.raises(SpecError, match="threads"):
        threads_from(((THREADS_KEY, "auto"),), 4)


# --- rule variables ---------------------------------------------------------------------------------------
def test_variables_from_suricatas_config() -> None:
    config = {"vars": {"address-groups": {"HOME_NET": "[10.0.0.0/8]", "EXTERNAL_NET": "!$HOME_NET",
                                          "lower": "x"},
                       "port-groups": {"HTTP_PORTS": "80", "SSH_PORTS": 22}}}
    assert from_suricata_config(config) == (("HOME_NET", "[10.0.0.0/8]"), ("EXTERNAL_NET", "!$HOME_NET"),
                                            ("HTTP_PORTS", "80"), ("SSH_PORTS", "22"))
    assert from_suricata_config({}) == ()
    assert dict(SURICATA_7_VARIABLES)["EXTERNAL_NET"] == "!$HOME_NET"


# --- runtime packages --------------------------------------------------------------------------------------
LDD = """\tlinux-vdso.so.1 (0x00007ffd)
\tlibdaq.so.3 => /cache/snort/x/lib/libdaq.so.3 (0x00007f1)
\tlibluajit-5.1.so.2 => /lib/x86_64-linux-gnu/libluajit-5.1.so.2 (0x00007f2)
\tlibpcap.so.0.8 => /lib/x86_64-linux-gnu/libpcap.so.0.8 (0x00007f3)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f4)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f5)
"""


def test_ldd_and_dpkg_parsing() -> None:
    assert [p.name for p in parse_ldd(LDD)] == ["libdaq.so.3", "libluajit-5.1.so.2", "libpcap.so.0.8", "libc.so.6"]
    assert parse_dpkg_search("libpcap0.8:amd64: /usr/lib/x86_64-linux-gnu/libpcap.so.0.8\n") == "libpcap0.8"
    assert parse_dpkg_search("diversion by x from: /a\n") is None


def test_runtime_packages_from_the_binary_once(tmp_path: Path) -> None:
    prefix = Path("/cache/snort/x")
    owners = {"/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2": "libluajit-5.1-2:amd64",
              "/usr/lib/x86_64-linux-gnu/libpcap.so.0.8": "libpcap0.8:amd64",
              "/lib/x86_64-linux-gnu/libc.so.6": "libc6:amd64"}
    calls: list[list[str]] = []

    def run(argv: list[str]) -> str:
        from idsbench.errors import EnvironmentMissing

        calls.append(argv)
        if argv[0] == "ldd":
            return LDD
        owner = owners.get(argv[-1])
        if owner is None:
            raise EnvironmentMissing("not owned")
        return f"{owner}: {argv[-1]}\n"

    cache = tmp_path / "prefix"
    cache.mkdir()
    found = runtime_packages(cache, prefix / "bin" / "snort", run)
    assert found == ("coreutils", "libc6", "libluajit-5.1-2", "libpcap0.8")  # libdaq is in the tree
    calls.clear()
    assert runtime_packages(cache, prefix / "bin" / "snort", run) == found and calls == []  # cached


def test_runtime_packages_fall_back_to_the_documented_list(tmp_path: Path) -> None:
    from idsbench.errors import EnvironmentMissing

    def run(argv: list[str]) -> str:
        raise EnvironmentMissing("no ldd")

    assert runtime_packages(tmp_path, tmp_path / "snort", run) == DOCUMENTED


# --- perf_monitor while Snort runs ------------------------------------------------------------------------
def _record(t: int, received: int, analyzed: int, dropped: int = 0, alerts: int = 0) -> str:
    return json.dumps({"timestamp": t, "daq": {"received": received, "analyzed": analyzed, "dropped": dropped,
                                               "rx_bytes": 100 * analyzed, "outstanding": 0},
                       "detection": {"total_alerts": alerts}})


def test_perf_tail_reads_what_the_files_gained(tmp_path: Path) -> None:
    f0 = tmp_path / "0_perf_monitor_base.json"
    f1 = tmp_path / "1_perf_monitor_base.json"
    tail = PerfTail(tmp_path)
    assert tail.latest() is None  # no thread saw a packet yet
    first = "[" + _record(100, 10, 10)
    f0.write_text(first + ",\n" + _record(101, 5, 4)[:20])  # second record cut mid-write
    p = tail.latest()
    assert p is not None and (p.t_unix, p.counters.received, p.counters.analyzed) == (100, 10, 10)
    with f0.open("a") as fh:
        fh.write(_record(101, 5, 4)[20:] + ",\n")
    p = tail.latest()
    assert p is not None and (p.t_unix, p.counters.received, p.counters.analyzed) == (101, 15, 14)
    f1.write_text("[" + _record(100, 3, 3, dropped=2))  # a second thread: its newest is older
    p = tail.latest()
    assert p is not None and p.t_unix == 100  # the snapshot every thread has reached
    assert (p.counters.received, p.counters.dropped) == (13, 2)
    with f1.open("a") as fh:
        fh.write(",\n" + _record(101, 0, 0) + "]")
    p = tail.latest()
    assert p is not None and (p.t_unix, p.counters.received, p.counters.captured) == (101, 18, 20)


def test_perf_tail_of_the_recorded_two_thread_run(tmp_path: Path) -> None:
    for i in (0, 1):
        shutil.copy(DATA / f"live2_{i}_perf_monitor_base.json", tmp_path / f"{i}_perf_monitor_base.json")
    p = PerfTail(tmp_path).latest()
    assert p is not None and p.counters.analyzed == p.counters.received == 572


# --- readiness --------------------------------------------------------------------------------------------
HEADER = "sk               RefCnt Type Proto  Iface R Rmem   User   Inode\n"


def _fake_snort(root: Path, pid: int, config: Path, sockets: list[tuple[int, str]]) -> None:
    d = root / str(pid)
    (d / "net").mkdir(parents=True, exist_ok=True)
    (d / "cmdline").write_bytes(b"\0".join([b"/x/bin/snort", b"-c", str(config).encode(), b"-z", b"2"]) + b"\0")
    (d / "net" / "dev_mcast").write_text("7    ibr1           1     0     01005e000001\n")
    (d / "net" / "packet").write_text(HEADER + "".join(
        f"00000000ff0dce{i:02x} 3      3    {proto}   7     1 0      0      {inode}\n"
        for i, (inode, proto) in enumerate(sockets)))
    fd = d / "fd"
    fd.mkdir(exist_ok=True)
    for i, (inode, _) in enumerate(sockets, start=3):
        if not (fd / str(i)).is_symlink():
            os.symlink(f"socket:[{inode}]", fd / str(i))



def _run(tmp_path: Path, threads: int = 2) -> SnortRun:
    return SnortRun(argv=["snort"], log_dir=tmp_path, config_path=tmp_path / "snort.lua",
                    console_path=tmp_path / "stdout.txt", interface="ibr1", threads=threads,
                    proc_root=tmp_path / "proc")


def test_ready_when_every_thread_captures(tmp_path: Path) -> None:
    run = _run(tmp_path)
    proc_root = tmp_path / "proc"
    _fake_snort(proc_root, 4242, run.config_path, [(11, "0000"), (12, "0000")])  # DAQ instantiated only
    (tmp_path / "stdout.txt").write_text("Commencing packet processing\n++ [0] ibr1\n++ [1] ibr1\n")
    clock = Clock()
    steps = iter(range(100))

    def sleep(s: float) -> None:
        clock.sleep(s)
        if next(steps) == 3:  # the threads start their DAQ: bound with ETH_P_ALL
            _fake_snort(proc_root, 4242, run.config_path, [(11, "0003"), (12, "0003")])

    waited = run.wait_ready(lambda: None, 10, clock=clock, sleep=sleep)
    assert waited == pytest.approx(0.2)
    assert pids_with_argument(str(run.config_path), proc_root) == [4242]


def test_ready_in_a_guest_after_the_threads_started_and_a_grace(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (tmp_path / "proc").mkdir()
    (tmp_path / "stdout.txt").write_text("Commencing packet processing\n++ [0] ibr1\n++ [1] ibr1\n")
    clock = Clock()
    assert run.wait_ready(lambda: None, 10, clock=clock, sleep=clock.sleep) == pytest.approx(2.0, abs=0.06)


@pytest.mark.parametrize(("console", "sensor_exit", "reason"), [
    ("no_such_interface_console.txt", 0, "no packet thread bound a socket to ibr1"),
    ("config_test_errors.txt", 1, "ERROR: .*unknown rule keyword"),
])
def test_a_failed_start_is_explained(tmp_path: Path, console: str, sensor_exit: int, reason: str) -> None:
    run = _run(tmp_path)
    (tmp_path / "proc").mkdir()
    shutil.copy(DATA / console, tmp_path / "stdout.txt")
    clock = Clock()
    with pytest.raises(SensorFailed, match=reason):
        run.wait_ready(lambda: sensor_exit, 10, clock=clock, sleep=clock.sleep)


# --- counters of a recorded run ---------------------------------------------------------------------------
def test_counters_alerts_and_integrity_of_the_recorded_two_thread_run(tmp_path: Path) -> None:
    run = _run(tmp_path)
    shutil.copy(DATA / "live2_console_tail.txt", tmp_path / "stdout.txt")
    for i in (0, 1):
        shutil.copy(DATA / f"live2_{i}_perf_monitor_base.json", tmp_path / f"{i}_perf_monitor_base.json")
        shutil.copy(DATA / f"live2_{i}_alert_json.txt", tmp_path / f"{i}_alert_json.txt")
    final = run.final_counters()
    assert (final.captured_pkts, final.dropped_pkts, final.decoded_pkts, final.decoded_bytes) == (572, 0, 572, 325968)
    assert final.unprocessed_pkts == 0
    assert run.alerts_by_signature() == {1000002: 26, 1000001: 2} and final.alerts == 28
    series = run.counter_series()
    assert series and series[-1].counters.decoded_pkts == 572
    integrity = run.integrity()
    assert integrity is not None and integrity.lines == 28 and integrity.corrupt_lines == 0
    assert run.degraded() == {}


def test_live_counters_before_any_packet_is_one_fixed_zero_point(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.live_counters() is None  # not started
    run.started_unix = 1.0
    zero = run.live_counters()
    assert zero is not None and zero.counters == Counters() and run.live_counters() is zero
    (tmp_path / "0_perf_monitor_base.json").write_text("[" + _record(int(zero.t_unix) + 5, 7, 7))
    p = run.live_counters()
    assert p is not None and p.counters.decoded_pkts == 7


def test_no_exit_statistics_is_a_failure(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (tmp_path / "stdout.txt").write_text("Commencing packet processing\n")
    with pytest.raises(SensorFailed, match="no exit statistics"):
        run.final_counters()
