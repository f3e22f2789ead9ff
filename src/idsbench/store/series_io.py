"""Reading a sample's CSV series (monitor.csv, counters.csv) into numeric, time-sorted frames (complete
lines only: store/series_file.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from idsbench.store.series_file import complete_bytes


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
