"""sensors.tail.FileTail: what a growing file gained, cut at complete lines."""

from __future__ import annotations

from pathlib import Path

from idsbench.sensors.tail import FileTail


def test_lines_arrive_once_and_whole(tmp_path: Path) -> None:
    path = tmp_path / "grows.log"
    tail = FileTail(path)
    assert tail.new_lines() is None and tail.new_bytes() is None  # not there yet
    path.write_bytes(b"one\ntw")
    assert tail.new_lines() == b"one\n"
    assert tail.new_lines() == b""
    with path.open("ab") as fh:
        fh.write(b"o\nthree\n")
    assert tail.new_lines() == b"two\nthree\n"
    tail.unread(b"three\n")
    with path.open("ab") as fh:
        fh.write(b"four\nfi")
    assert tail.new_lines() == b"three\nfour\n" and tail.pending == b"fi"
    assert tail.offset == path.stat().st_size
