"""Atomic file writes: write to a temporary file beside the target, fsync, rename. A reader sees the
old file or the whole new one, never a part; a crash leaves no half-written file under the name."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO


@contextmanager
def receiving(path: Path) -> Iterator[BinaryIO]:
    """A file written in pieces (a copy from a host): the pieces go to a temporary file beside `path`,
    which becomes `path` when the block ends without an exception (and is removed when it raises)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes(path: Path, data: bytes) -> None:
    with receiving(path) as fh:
        fh.write(data)


def copy_file(src: str | Path, dst: str | Path) -> None:
    """`src` copied to `dst` atomically, its mode and times kept (a copy_function for shutil.copytree)."""
    with receiving(Path(dst)) as fh, open(src, "rb") as source:
        shutil.copyfileobj(source, fh)
    shutil.copystat(src, dst)


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
