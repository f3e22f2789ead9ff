"""build_once: a cached file built once, whole, and nothing left behind when the build fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.buildonce import build_once


def test_builds_once_then_reuses(tmp_path: Path):
    calls: list[Path] = []

    def build(tmp: Path) -> None:
        calls.append(tmp)
        tmp.write_text("built")

    target = tmp_path / "cache" / "prog-abc"
    assert build_once(target, build) == target and target.read_text() == "built"
    assert build_once(target, build) == target and len(calls) == 1
    assert calls[0] != target and not calls[0].exists()  # built under another name, then renamed


def test_a_failed_build_leaves_no_file(tmp_path: Path):
    def build(tmp: Path) -> None:
        tmp.write_text("half")
        raise RuntimeError("compiler said no")

    target = tmp_path / "prog-abc"
    with pytest.raises(RuntimeError, match="compiler said no"):
        build_once(target, build)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock"]
