"""Atomic file writes: write to a temporary file beside the target, fsync, rename. A reader sees the
old file or the whole new one, never a part; a crash leaves no half-written file under the name."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode())


def write_json(path: Path, doc: Any, indent: int = 2) -> None:  # Any: whatever json.dumps takes
    write_text(path, json.dumps(doc, indent=indent, sort_keys=False, default=str) + "\n")


def csv_line(row: Sequence[object]) -> str:
    """One CSV row as the csv module writes it (quoted where needed, ending in CRLF)."""
    buf = io.StringIO()
    csv.writer(buf).writerow(row)
    return buf.getvalue()


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """A whole CSV file at once (the csv module's dialect: CRLF line ends, as every series file has)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    write_text(path, buf.getvalue())
