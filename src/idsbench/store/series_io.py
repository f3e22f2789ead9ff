"""A sample's CSV series (monitor.csv, counters.csv): the counters' writer, and the readers — rows as
text, or numeric, time-sorted frames. Every reader reads complete lines only: a row the writer was
cut off in (a crash; store/appender.py) has no line end and is left out."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

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


def read_series(path: Path) -> pd.DataFrame | None:
    """A sample's CSV (needs a t_unix column) with numeric columns, sorted by time; None if absent."""
    try:
        df = pd.read_csv(io.BytesIO(complete_bytes(path)))
    except (FileNotFoundError, pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
        return None
    if "t_unix" not in df.columns or df.empty:
        return None
    return _tidy(df.apply(pd.to_numeric, errors="coerce"))


def _tidy(df: pd.DataFrame) -> pd.DataFrame:
    """One row per t_unix, sorted by time, rows without a time dropped."""
    df = df.dropna(subset=["t_unix"]).sort_values("t_unix")
    out: pd.DataFrame = df.drop_duplicates(subset="t_unix", keep="last").reset_index(drop=True)
    return out


def read_csv_fast(path: Path) -> pd.DataFrame | None:
    """read_series (numeric, sorted, one row per t_unix), via Arrow's CSV reader
    (~20x faster); falls back to pandas for a file Arrow rejects (e.g. a cut last line)."""
    try:
        df = pacsv.read_csv(pa.BufferReader(complete_bytes(path))).to_pandas()
    except FileNotFoundError:
        return None
    except (pa.ArrowInvalid, OSError):
        return read_series(path)
    if "t_unix" not in df.columns or df.empty:
        return None
    for col in df.columns:
        if not pd.api.types.is_numeric_dtype(df[col]):
            df[col] = pd.to_numeric(df[col], errors="coerce")
    return _tidy(df)
