"""A series file written row by row while a sample runs (monitor.csv, sender-monitor.csv).

Crash safety, as the project needs it: the file is read after the sample (analysis, the result store,
a duet's projection), possibly after the runner was killed, and a reader must never take a cut row for
a whole one (a cut `123456.5` read as `12`). Each row is formatted first and written with one write(2)
of the whole line, ending in its line end, to a file opened with O_APPEND and no userspace buffer: rows
never interleave (the sampler thread and `sample_now()` both write) and nothing waits in a buffer, so
after a crash — SIGKILL included — every row but perhaps the last is whole and on its line. A cut last
row lacks its line end, and the readers (`store.series_file`) leave such a line out.
`close()` fsyncs: the file is on disk before the summary that marks the sample complete.
An atomic rename per row (as `store.atomic` does for whole files) would rewrite the file every tick;
an fsync per row would add disk writes to the very disk counters the monitor measures.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from idsbench.store.atomic import csv_line


class RowAppender:
    """A CSV created (or emptied) with its header; `append(row)` adds one whole line; `close()` once."""

    def __init__(self, path: Path, header: Sequence[str]):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC,
                                       0o644)
        self.append(header)

    def append(self, row: Sequence[object]) -> None:
        """One row, one write (repeated only for what a short write left: a signal mid-row)."""
        if self._fd is None:
            raise ValueError(f"{self.path}: written after close()")
        data = csv_line(row).encode()
        while data:
            data = data[os.write(self._fd, data):]

    def close(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
