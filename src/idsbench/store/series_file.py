"""A sample's CSV series as text (monitor.csv, counters.csv): counters.csv's writer, and the rows of any
series file. Readers read complete lines only: a row the writer was cut off in (a crash while
store/appender.py appended it) has no line end and is left out. No pandas here (series_io has it)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from idsbench.counters import Counters
from idsbench.store.atomic import write_csv
from idsbench.store.layout import COUNTERS_FILE


class CounterPointLike(Protocol):
    """One stats snapshot (sensors.base.CounterPoint): wall clock, sensor uptime, counters."""

    @property
    def t_unix(self) -> float: ...
    @property
    def uptime_s(self) -> float: ...
    @property
    def counters(self) -> Counters: ...


def write_counters(sample_dir: Path, series: Iterable[CounterPointLike]) -> Path:
    """counters.csv: `t_unix, uptime_s` + the Counters fields, one row per stats record, at once."""
    names = Counters.field_names()
    path = sample_dir / COUNTERS_FILE
    write_csv(path, ["t_unix", "uptime_s", *names],
              ([f"{p.t_unix:.6f}", f"{p.uptime_s:.3f}", *(p.counters.as_dict()[n] for n in names)] for p in series))
    return path


def complete_bytes(path: Path) -> bytes:
    """The file up to its last line end (FileNotFoundError as open() raises it)."""
    data = path.read_bytes()
    return data[:data.rfind(b"\n") + 1]


def complete_text(path: Path) -> str:
    return complete_bytes(path).decode(errors="replace")


@dataclass(frozen=True)
class SeriesRows:
    header: tuple[str, ...]
    rows: tuple[dict[str, str | None], ...]  # as csv.DictReader gives them (a missing cell: None)


def series_rows(path: Path) -> SeriesRows:
    """A series file's complete rows as text (FileNotFoundError when absent)."""
    reader = csv.DictReader(io.StringIO(complete_text(path), newline=""))
    rows = tuple(reader)
    return SeriesRows(tuple(reader.fieldnames or ()), rows)
