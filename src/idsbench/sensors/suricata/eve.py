"""Streaming reader for Suricata's eve.json that stays fast on multi-GB files.

The file is read in binary chunks (sized to stay in the CPU cache). Per chunk, numpy locates
the line breaks and checks the `{...}` shape of every line, and event types are counted with one
C-level regex scan (Suricata writes `"event_type":"<type>"` with no spaces, and a `"` inside a
JSON string is always escaped, so the pattern only matches the key itself). Only the
records a caller asks for (by default `stats`) are handed to `json.loads`. When a chunk's
structure does not add up (lines without an event type, lines not shaped `{...}`), that chunk is
re-checked line by line and every bad line is counted and reported — never silently dropped.
Memory is bounded by the chunk size (plus the longest line), not by the file size.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

# Small enough that the passes over a chunk run from the CPU cache (measured best: 0.5-1 MiB).
CHUNK_SIZE = 1024 * 1024
_EVENT_TYPE = re.compile(rb'"event_type":"([^"\\]{1,64})"')
MAX_REPORTED_BAD_LINES = 5
# A longer "line" is not an eve record (Suricata's largest are a few MB): skipped as one corrupt
# line, so memory stays bounded on any file.
MAX_LINE_BYTES = 64 * 1024 * 1024


@dataclass
class EveScan:
    """What a scan found. `warnings` are human-readable and name the file."""

    path: Path
    lines: int = 0
    bytes_read: int = 0
    events: Counter[str] = field(default_factory=Counter)
    corrupt_lines: int = 0
    corrupt_examples: list[int] = field(default_factory=list)  # 1-based line numbers
    truncated_tail: bool = False
    warnings: list[str] = field(default_factory=list)

    def count(self, event_type: str) -> int:
        return self.events.get(event_type, 0)


RecordSink = Callable[[dict[str, Any]], None]  # Any: an eve record is Suricata's JSON, read by key where used


class _Scanner:
    def __init__(self, path: Path, wanted: frozenset[bytes], sink: RecordSink | None):
        self.scan = EveScan(path=path)
        self.wanted = wanted
        self.sink = sink

    def _bad(self, line_no: int) -> None:
        self.scan.corrupt_lines += 1
        if len(self.scan.corrupt_examples) < MAX_REPORTED_BAD_LINES:
            self.scan.corrupt_examples.append(line_no)

    def _emit(self, line: bytes | bytearray, line_no: int) -> None:
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):  # looked fine to the byte checks; not an event after all
            self._bad(line_no)
            m = _EVENT_TYPE.search(line)
            if m:
                self.scan.events[m.group(1).decode("ascii", "replace")] -= 1
            return
        if self.sink is not None and isinstance(rec, dict):
            self.sink(rec)

    def feed(self, buf: bytes | bytearray, start: int, end: int) -> None:
        """Scan buf[start:end], which holds whole lines only (it ends with b'\\n').

        Fast path, two vectorised passes: numpy finds every newline and checks each line ends
        with `}` and the next starts with `{`; one regex pass collects the event types. Any bad
        line (blank, no type, cut, two records glued together) makes the number of types differ
        from the number of lines or breaks the shape, and only then is the block re-checked
        line by line.
        """
        if end <= start:
            return
        first_line = self.scan.lines + 1
        arr = np.frombuffer(buf, dtype=np.uint8, count=end - start, offset=start)
        nl = np.flatnonzero(arr == 0x0A)
        n_lines = len(nl)
        matches = _EVENT_TYPE.findall(buf, start, end)
        if (
            len(matches) == n_lines
            and arr[0] == 0x7B  # "{"
            and bool((arr[nl - 1] == 0x7D).all())  # every line ends with "}"
            and bool((arr[nl[:-1] + 1] == 0x7B).all())  # every next line starts with "{"
        ):
            for etype, n in Counter(matches).items():
                self.scan.events[etype.decode("ascii", "replace")] += n
            self.scan.lines += n_lines
            if self.wanted:
                self._emit_wanted(buf, start, end, first_line)
        else:
            self._slow(bytes(buf[start:end]), first_line)
            self.scan.lines += n_lines

    def _emit_wanted(self, buf: bytes | bytearray, lo: int, hi: int, first_line: int) -> None:
        starts: list[int] = []
        for w in self.wanted:
            pos = buf.find(w, lo, hi)
            while pos != -1:
                starts.append(buf.rfind(b"\n", lo, pos) + 1 or lo)
                pos = buf.find(w, buf.find(b"\n", pos, hi), hi)
        prev, line_no = lo, first_line
        for start in sorted(starts):  # file order; line numbers counted incrementally
            line_no += buf.count(b"\n", prev, start)
            prev = start
            self._emit(buf[start : buf.find(b"\n", start, hi)], line_no)

    def _slow(self, block: bytes, first_line: int) -> None:
        # Line by line: cheap checks first; json.loads only to confirm a suspicious line.
        for i, line in enumerate(block.split(b"\n")[:-1]):
            line_no = first_line + i
            stripped = line.strip()
            if not stripped:
                self._bad(line_no)
                continue
            found = _EVENT_TYPE.findall(stripped)
            ok_shape = stripped.startswith(b"{") and stripped.endswith(b"}")
            if len(found) == 1 and ok_shape:
                etype = found[0]
            else:
                try:
                    rec = json.loads(stripped)
                except (ValueError, RecursionError):
                    self._bad(line_no)
                    continue
                et = rec.get("event_type") if isinstance(rec, dict) else None
                if not isinstance(et, str):
                    self._bad(line_no)
                    continue
                etype = et.encode()
            self.scan.events[etype.decode("ascii", "replace")] += 1
            if self.wanted and any(w in stripped for w in self.wanted):
                self._emit(stripped, line_no)


def _wanted_patterns(types: Collection[str]) -> frozenset[bytes]:
    return frozenset(b'"event_type":"' + t.encode() + b'"' for t in types)


def scan_eve(
    path: Path | str,
    record_types: Collection[str] = ("stats",),
    on_record: RecordSink | None = None,
    chunk_size: int = CHUNK_SIZE,
    warn_truncated: bool = True,
) -> EveScan:
    """Count events per type in `path`; pass each record of `record_types` (parsed) to `on_record`.

    A missing file raises FileNotFoundError. A last line without a newline (Suricata killed or
    still writing) is not counted; it is reported in `warnings` when `warn_truncated`.
    """
    path = Path(path)
    sc = _Scanner(path, _wanted_patterns(record_types) if on_record else frozenset(), on_record)
    carry = b""
    overlong = False  # inside a line longer than MAX_LINE_BYTES: skip to its end
    buf = bytearray(chunk_size)  # reused: no per-chunk allocation or page faults
    with path.open("rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            sc.scan.bytes_read += n
            first_nl = buf.find(b"\n", 0, n)
            if first_nl == -1:
                if not overlong:
                    carry += buf[:n]
                    if len(carry) > max(MAX_LINE_BYTES, chunk_size):
                        overlong, carry = True, b""
                continue
            if overlong:  # the overlong line ends here: one corrupt line
                sc.scan.lines += 1
                sc._bad(sc.scan.lines)
                overlong = False
            else:
                # The line spanning the previous chunk boundary is small: join just that one.
                head = carry + buf[: first_nl + 1]
                sc.feed(head, 0, len(head))
            last_nl = buf.rfind(b"\n", 0, n)
            sc.feed(buf, first_nl + 1, last_nl + 1)
            carry = bytes(buf[last_nl + 1 : n])
    scan = sc.scan
    if overlong:
        scan.truncated_tail = True
        carry = b"x"
    if carry.strip():
        scan.truncated_tail = True
        if warn_truncated:
            scan.warnings.append(
                f"{path}: last line is incomplete ({len(carry)} bytes without a newline); "
                "it was ignored (the sensor was probably killed or is still writing)."
            )
    if scan.corrupt_lines:
        scan.warnings.append(
            f"{path}: {scan.corrupt_lines} corrupt line(s) skipped "
            f"(first at line(s) {', '.join(map(str, scan.corrupt_examples))})."
        )
    for w in scan.warnings:
        log.warning("%s", w)
    return scan


def read_records(path: Path | str, record_type: str = "stats") -> tuple[list[dict[str, Any]], EveScan]:  # Any: eve JSON
    """All records of one type (meant for the few `stats` records), plus the scan summary."""
    out: list[dict[str, Any]] = []  # Any: eve records, Suricata's JSON
    scan = scan_eve(path, (record_type,), out.append)
    return out, scan
