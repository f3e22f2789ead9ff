"""Streaming eve.json reader: counts, stats extraction, chunk boundaries, truncation, corruption."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from idsbench.sensors.suricata.eve import read_records, scan_eve


def _line(event_type: str, **extra: object) -> str:
    rec = {"timestamp": "2026-01-01T00:00:00.000000+0000", "flow_id": 1, "event_type": event_type}
    rec.update(extra)
    return json.dumps(rec, separators=(",", ":"))


def _stats(uptime: int) -> str:
    return _line("stats", stats={"uptime": uptime, "decoder": {"pkts": uptime * 10}})


def _fixture(tmp_path: Path) -> Path:
    lines = [_stats(1)]
    lines += [_line("alert", alert={"signature": 'quote " and "event_type":"stats" inside'})] * 3
    lines += [_line("flow", flow={"pkts_toserver": 3})] * 5
    lines += [_line("http", http={"url": "/x"}), _stats(2)]
    p = tmp_path / "eve.json"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("chunk_size", [7, 100, 1 << 20])
def test_counts_and_stats_any_chunk_size(tmp_path: Path, chunk_size: int) -> None:
    path = _fixture(tmp_path)
    got: list[dict] = []
    scan = scan_eve(path, ("stats",), got.append, chunk_size=chunk_size)
    assert dict(scan.events) == {"stats": 2, "alert": 3, "flow": 5, "http": 1}
    assert scan.lines == 11 and scan.corrupt_lines == 0 and not scan.warnings
    assert [r["stats"]["uptime"] for r in got] == [1, 2]  # file order, parsed
    assert scan.bytes_read == path.stat().st_size


def test_other_record_types_on_request(tmp_path: Path) -> None:
    recs, scan = read_records(_fixture(tmp_path), "http")
    assert [r["http"]["url"] for r in recs] == ["/x"] and scan.count("alert") == 3


def test_truncated_last_line_warns_with_file_name(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _fixture(tmp_path)
    with path.open("a") as f:
        f.write(_stats(3)[:50])
    got: list[dict] = []
    with caplog.at_level(logging.WARNING):
        scan = scan_eve(path, ("stats",), got.append)
    assert scan.truncated_tail and scan.events["stats"] == 2 and len(got) == 2
    assert len(scan.warnings) == 1 and str(path) in scan.warnings[0] and "incomplete" in scan.warnings[0]
    assert str(path) in caplog.text
    quiet = scan_eve(path, warn_truncated=False)
    assert quiet.truncated_tail and not quiet.warnings


@pytest.mark.parametrize("chunk_size", [64, 1 << 20])
def test_corrupt_lines_are_counted_not_silent(tmp_path: Path, chunk_size: int) -> None:
    good = [_stats(1), _line("alert"), _line("flow")]
    bad = [
        "garbage that is not json",
        '{"timestamp":"x","event_type":"alert"',  # cut mid-record, then a newline (crash + restart)
        "",
        _stats(2)[:-10] + "}",  # a stats record with a hole: shape ok, json broken
        '{"no_event_type":1}',
    ]
    path = tmp_path / "eve.json"
    path.write_text("\n".join([good[0], bad[0], good[1], bad[1], bad[2], bad[3], good[2], bad[4]]) + "\n")
    got: list[dict] = []
    scan = scan_eve(path, ("stats",), got.append, chunk_size=chunk_size)
    assert scan.events["flow"] == 1 and scan.events["stats"] == 1
    assert len(got) == 1
    # the cut alert line is counted as corrupt only when it fails to parse; it does here
    assert scan.corrupt_lines == 5
    assert scan.corrupt_examples == [2, 4, 5, 6, 8]
    assert any("5 corrupt line(s)" in w and str(path) in w for w in scan.warnings)


def test_nested_object_with_valid_json_is_not_corrupt(tmp_path: Path) -> None:
    # A valid record whose payload repeats the key (escaped in a string it cannot match, but as a
    # nested key it can): the slow path parses it and keeps the top-level type.
    rec = {"timestamp": "t", "event_type": "alert", "extra": {"event_type": "inner"}}
    path = tmp_path / "eve.json"
    path.write_text(json.dumps(rec, separators=(",", ":")) + "\n" + _line("flow") + "\n")
    scan = scan_eve(path)
    assert dict(scan.events) == {"alert": 1, "flow": 1} and scan.corrupt_lines == 0


def test_empty_and_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "eve.json"
    empty.write_text("")
    scan = scan_eve(empty)
    assert scan.lines == 0 and not scan.events and not scan.warnings
    with pytest.raises(FileNotFoundError):
        scan_eve(tmp_path / "missing.json")
