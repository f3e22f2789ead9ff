"""Snort 3's console log, from outputs recorded on this machine (tests/unit/data/snort/)."""

from __future__ import annotations

from pathlib import Path

from idsbench.sensors.snort.log import (
    RuleError,
    config_validated,
    errors,
    exited_cleanly,
    is_ready,
    rejected_lines,
    rule_errors,
    rules_loaded,
    sources_started,
    stop_signal,
)

DATA = Path(__file__).parent / "data" / "snort"


def _text(name: str) -> str:
    return (DATA / name).read_text()


def test_rule_errors_name_file_line_and_reason() -> None:
    text = _text("config_test_errors.txt")
    assert rule_errors(text) == [
        RuleError("/tmp/snortlab/bad.rules", 2, "unknown rule keyword: nocase"),
        RuleError("/tmp/snortlab/bad.rules", 3, "unknown rule keyword: http.uri"),
        RuleError("/tmp/snortlab/bad.rules", 3, "unknown rule keyword: endswith"),
        RuleError("/tmp/snortlab/bad.rules", 5, "incomplete rule"),
    ]
    assert rejected_lines(text) == {"/tmp/snortlab/bad.rules": {2, 3, 5}}
    assert errors(text)[-2:] == ["FATAL: see prior 4 errors (0 warnings)", "Fatal Error, Quitting.."]
    assert not config_validated(text)
    assert config_validated(_text("config_test_ok_tail.txt"))


def test_a_run_from_start_to_stop() -> None:
    text = _text("readback_console.txt")
    assert is_ready(text) and exited_cleanly(text) and errors(text) == []
    assert stop_signal(text) is None  # -r ends at the end of the capture
    assert rules_loaded(text) == 221  # 2 rules + the stock config's 219 file_magic rules
    assert sources_started(text) == ["/work/shared/data/pcaps/nf_evidence02.pcap"]
    live = _text("live2_console_tail.txt")
    assert stop_signal(live) == "term" and exited_cleanly(live)
    assert sources_started(live) == ["ibsm1", "ibsm1"]


def test_a_missing_interface_says_nothing() -> None:
    text = _text("no_such_interface_console.txt")
    assert is_ready(text) and exited_cleanly(text)
    assert errors(text) == [] and sources_started(text) == []  # only the capture sockets can tell
    assert not is_ready("Loading snort.lua:\n")
