"""Reading a file that a running engine keeps appending to: only what it gained since the last read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class FileTail:
    path: Path
    offset: int = 0
    pending: bytes = field(default=b"", repr=False)  # a line begun but not yet ended

    def new_bytes(self) -> bytes | None:
        """Everything written since the last call (None while the file does not exist)."""
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return None
        self.offset += len(data)
        return data

    def new_lines(self) -> bytes | None:
        """The lines completed since the last call (b"" if none; None while the file does not exist)."""
        data = self.new_bytes()
        if data is None:
            return None
        text = self.pending + data
        cut = text.rfind(b"\n") + 1
        self.pending = text[cut:]
        return text[:cut]

    def unread(self, lines: bytes) -> None:
        """Hand complete lines back: the next call returns them again, first."""
        self.pending = lines + self.pending
