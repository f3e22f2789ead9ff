"""The host-speed witness's log (store.layout.WITNESS_FILE) and what a sample or a trial keeps of it.

The witness process (monitor/witnessloop.py) writes the log itself — its stdout, opened by the supervisor —
one whole line per write; a line without its line end (the process was killed mid-write) or that does not
parse is left out. `witness_record` turns the pieces that ended inside a span into the summary's
`WitnessRecord`; `span_rate` is the bare work rate a search trial keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench.store.schema import WitnessRecord


@dataclass(frozen=True)
class Piece:
    """One piece of the witness's work: when it ended, its iterations, the CPU time they took."""

    end_unix: float
    iterations: int
    cpu_ns: int


def read_witness(path: Path) -> list[Piece]:
    """The pieces of a witness log, in order ([] when there is none)."""
    try:
        text = path.read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return []
    out = []
    for line in text.splitlines(keepends=True)[1:]:  # the first line is the header
        if not line.endswith("\n"):
            break  # cut by a kill: the last line, never a whole one
        parts = line.strip().split(",")
        try:
            piece = Piece(float(parts[0]), int(parts[1]), int(parts[2]))
        except (ValueError, IndexError):
            continue
        if piece.iterations > 0 and piece.cpu_ns > 0:
            out.append(piece)
    return out


def span_rate(pieces: Sequence[Piece], start_unix: float, end_unix: float) -> tuple[float | None, int]:
    """The work rate (iterations per CPU µs) of the pieces that ended within [start, end], and their count."""
    inside = [p for p in pieces if start_unix <= p.end_unix <= end_unix]
    cpu_ns = sum(p.cpu_ns for p in inside)
    if not inside or cpu_ns <= 0:
        return None, len(inside)
    return round(sum(p.iterations for p in inside) / (cpu_ns / 1e3), 6), len(inside)


def cpu_share(pieces: Sequence[Piece], period_s: float) -> float | None:
    """The pieces' CPU time per second of the log's wall time (a period before the first piece counted)."""
    if not pieces:
        return None
    wall = pieces[-1].end_unix - pieces[0].end_unix + period_s
    return round(sum(p.cpu_ns for p in pieces) / 1e9 / wall, 6) if wall > 0 else None


def witness_record(path: Path, cpus: Sequence[int], period_s: float, piece_s: float, start_unix: float,
                   end_unix: float) -> WitnessRecord:
    """What a sample keeps of its witness: the work rate over [start, end] (its processing span)."""
    pieces = read_witness(path)
    rate, inside = span_rate(pieces, start_unix, end_unix)
    return WitnessRecord(cpus=tuple(cpus), period_s=period_s, piece_s=piece_s,
                         span_s=round(max(0.0, end_unix - start_unix), 6), pieces=inside, rate=rate,
                         cpu_share=cpu_share(pieces, period_s))
