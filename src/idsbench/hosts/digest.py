"""What identifies an idsbench build: a digest of the package's own files (stdlib only, so a host
can report it before anything else is installed). Two hosts run the same idsbench iff equal."""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = ("__pycache__",)
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".so")


def package_files(root: Path = PACKAGE_DIR) -> list[Path]:
    """The files a wheel of the package ships (sources, templates, rules, playbooks), sorted."""
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if not path.is_file() or any(p in SKIPPED_DIRS for p in rel.parts) or path.suffix in SKIPPED_SUFFIXES:
            continue
        out.append(path)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def digest(root: Path = PACKAGE_DIR) -> str:
    """sha256 over (relative path, content) of every package file; 16 hex digits."""
    h = hashlib.sha256()
    for path in package_files(root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


if __name__ == "__main__":
    print(digest())
