"""The source plug-in protocol and a cheap re-readable file handle."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

Value = float | int


class Source(Protocol):
    """A monitor plug-in. `columns()` is fixed from construction on (it is the CSV header);
    `sample()` may omit a column it cannot read this time (written as an empty cell)."""

    def columns(self) -> list[str]: ...

    def start(self) -> None: ...

    def sample(self) -> dict[str, Value]: ...

    def stop(self) -> None: ...


class ProcFile:
    """An open procfs/sysfs/cgroupfs file re-read with one pread(2) at offset 0 per sample."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._fd: int | None = None

    def read(self) -> str:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        chunks = []
        offset = 0
        while True:  # most files fit in one read; /proc/stat on big hosts may not
            data = os.pread(self._fd, 65536, offset)
            chunks.append(data)
            if len(data) < 65536:
                break
            offset += len(data)
        return b"".join(chunks).decode()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
