"""Where the result index lives (no DuckDB import, so the CLI parser stays quick to build)."""

from __future__ import annotations

from pathlib import Path

INDEX_FILE = "index.duckdb"
DEFAULT_ROOT = Path("results")


def index_file(root: Path | str) -> Path:
    return Path(root) / INDEX_FILE
