"""suricata.log parsing, readiness with a fake clock, error quoting, rule resolution, build-info."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.errors import InputError, SensorFailed, SpecError
from idsbench.sensors.suricata import Suricata, SuricataRun, _config_test_error
from idsbench.sensors.suricata import log as slog

P = "[5377 - Suricata-Main] 2026-11-22 05:12:26 "
STARTUP = [
    P + "Notice: suricata: This is Suricata version 7.0.10 RELEASE running in SYSTEM mode",
    P + "Info: cpu: CPUs/cores online: 2",
    P + "Warning: af-packet: sen0: AF_PACKET block-size is not large enough for max fragmented IP packet size (65561)",
    P + "Warning: detect: No rule files match the pattern /x/missing.rules",
    P + "Error: detect-parse: unknown rule keyword 'nosuchkeyword'.",
    P + 'Error: detect: error parsing signature "alert tcp any any -> any any (msg:"bad"; nosuchkeyword:"a"; sid:2;)" from file /r/bad.rules at line 2',
    P + "Error: detect-parse: unknown rule keyword 'nosuchkeyword'.",
]
READY = P + "Notice: threads: Threads created -> W: 2 FM: 1 FR: 1   Engine started."


def test_strip_prefix_and_level() -> None:
    assert slog.strip_prefix(READY) == "Notice: threads: Threads created -> W: 2 FM: 1 FR: 1   Engine started."
    assert slog.level_of(STARTUP[1]) == "Info"
    assert slog.level_of("Error: suricata: Invalid argument for --set, must be key=val.") == "Error"
    assert slog.is_ready_line(READY) and not slog.is_ready_line(STARTUP[0])


def test_error_lines_dedupe_and_filter() -> None:
    errs = slog.error_lines(STARTUP)
    assert errs == [
        "Warning: detect: No rule files match the pattern /x/missing.rules",
        "Error: detect-parse: unknown rule keyword 'nosuchkeyword'.",
        STARTUP[5][len(P):],
    ]
    assert all(e.startswith("Error") for e in slog.error_lines(STARTUP, warnings=False))
    assert slog.rule_files_in(STARTUP) == ["/r/bad.rules"]


def test_parse_shutdown_sums_devices() -> None:
    s = slog.parse_shutdown([
        P + "Info: counters: Alerts: 7",
        P + "Notice: device: a0: packets: 100, drops: 4 (4.00%), invalid chksum: 0",
        P + "Notice: device: b0: packets: 50, drops: 0 (0.00%), invalid chksum: 0",
    ])
    assert (s.kernel_packets, s.kernel_drops, s.alerts) == (150, 4, 7)
    assert slog.parse_shutdown(STARTUP) == slog.ShutdownSummary()


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:
        self.t += dt


def _run(tmp_path: Path) -> SuricataRun:
    return SuricataRun(
        argv=["suricata"], log_dir=tmp_path, eve_path=tmp_path / "eve.json",
        log_path=tmp_path / "suricata.log", yaml_path=tmp_path / "suricata.yaml",
        pid_path=tmp_path / "suricata.pid", console_path=tmp_path / "stdout.txt",
    )


def test_wait_ready_returns_when_engine_started(tmp_path: Path) -> None:
    run, clock = _run(tmp_path), FakeClock()
    polls = 0

    def poll() -> int | None:
        nonlocal polls
        polls += 1
        if polls == 3:  # the log appears and grows while we wait; the ready line is split
            run.log_path.write_text("\n".join(STARTUP[:2]) + "\n" + READY[:40])
        if polls == 5:
            with run.log_path.open("a") as f:
                f.write(READY[40:] + "\n")
        return None

    waited = run.wait_ready(poll, 10, clock=clock, sleep=clock.sleep, interval_s=0.5)
    assert waited == pytest.approx(2.5) and polls == 5


def test_wait_ready_quotes_errors_when_process_exits(tmp_path: Path) -> None:
    run, clock = _run(tmp_path), FakeClock()
    run.log_path.write_text("\n".join(STARTUP) + "\n")
    with pytest.raises(SensorFailed) as ei:
        run.wait_ready(lambda: 1, 10, clock=clock, sleep=clock.sleep)
    msg = str(ei.value)
    assert "exited with code 1" in msg and "unknown rule keyword 'nosuchkeyword'" in msg
    assert "/r/bad.rules at line 2" in msg and str(run.log_path) in msg
    assert "block-size" not in msg


def test_wait_ready_times_out(tmp_path: Path) -> None:
    run, clock = _run(tmp_path), FakeClock()
    (tmp_path / "stdout.txt").write_text("Error: suricata: Invalid argument for --set, must be key=val.\n")
    with pytest.raises(SensorFailed, match=r"not ready after 3 s[\s\S]*Invalid argument for --set"):
        run.wait_ready(lambda: None, 3, clock=clock, sleep=clock.sleep)
    assert clock.t == pytest.approx(103.05)


def test_config_test_error_classification() -> None:
    rules = [Path("/r/bad.rules")]
    e = _config_test_error([s[len(P):] for s in STARTUP], rules, {}, 1)
    assert isinstance(e, InputError)
    assert "/r/bad.rules" in str(e) and "nosuchkeyword" in str(e)
    e = _config_test_error(
        ["Error: detect: invalid value for detect.profile: 'bogus'. Valid options: low, medium, high and custom.",
         "Error: suricata: initializing detection engine failed."],
        rules, {"detect.profile": "bogus"}, 1)
    assert isinstance(e, SpecError) and "detect.profile=bogus" in str(e) and "Valid options" in str(e)
    e = _config_test_error(["Error: suricata: something else"], rules, {}, 1)
    assert isinstance(e, SensorFailed) and "something else" in str(e)


def test_resolve_rules_paths_and_missing(tmp_path: Path) -> None:
    sur = Suricata(binary="suricata-not-needed")
    a = tmp_path / "a.rules"
    a.write_text("")
    d = tmp_path / "dir"
    d.mkdir()
    (d / "x.rules").write_text("")
    (d / "notes.txt").write_text("")
    assert sur.resolve_rules([str(a), str(d), str(a)]) == [a.resolve(), (d / "x.rules").resolve()]
    with pytest.raises(InputError, match="nope.rules"):
        sur.resolve_rules([str(tmp_path / "nope.rules")])
    with pytest.raises(SpecError, match="builtin:bogus"):
        sur.resolve_rules(["builtin:bogus"])


BUILD_INFO = """This is Suricata version 7.0.10 RELEASE
Features: NFQ AF_PACKET HAVE_PACKET_FANOUT
  AF_PACKET support:                       yes
  Hyperscan support:                       no
  Configuration directory:                 {sysconf}/
  --datarootdir                            /nonexistent
"""


def test_build_info_and_bundled_rules_skip_disabled_protocols(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    for name in ("decoder-events.rules", "dnp3-events.rules", "http-events.rules"):
        (tmp_path / "rules" / name).write_text("")
    (tmp_path / "suricata.yaml").write_text(
        "app-layer:\n  protocols:\n    dnp3:\n      enabled: no\n    http:\n      enabled: yes\n")
    sur = Suricata(binary="suricata-not-needed", default_config=tmp_path / "suricata.yaml")
    sur.__dict__["_build_info_text"] = BUILD_INFO.format(sysconf=tmp_path)  # no binary needed
    info = sur.build_info()
    assert info["version"] == "7.0.10" == sur.version()
    assert info["af_packet"] is True and info["hyperscan"] is False
    assert info["features"] == ["NFQ", "AF_PACKET", "HAVE_PACKET_FANOUT"]
    names = [p.name for p in sur.resolve_rules(["builtin:events"])]
    assert names == ["decoder-events.rules", "http-events.rules"]


def test_markers_path_comes_from_package() -> None:
    sur = Suricata(binary="suricata-not-needed")
    try:
        (path,) = sur.resolve_rules(["builtin:markers"])
    except InputError as e:  # the file belongs to another package owner; the error must name it
        assert "markers.rules" in str(e)
    else:
        assert path.name == "markers.rules" and path.parent.name == "rules"
        assert path.parent.parent.name == "sensors"
