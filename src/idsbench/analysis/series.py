"""Time series aligned across samples.

Each record keeps its own timestamp (t_unix). A sample's series is placed on seconds since that
sample's replay start, then resampled onto a fixed grid of the stats interval by linear interpolation
between the sample's own records. A checkpoint gets a value from a sample if it lies within the
sample's records, or within half an interval of its first/last record (edge value). Checkpoints then
get the median, the order-statistic CI of the median and the sample count across samples.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from idsbench.analysis.stats import median_ci
from idsbench.store.layout import COUNTERS_FILE, MONITOR_FILE
from idsbench.store.reader import Campaign, SampleRecord
from idsbench.store.series_io import read_series

SOURCES = {"counters": COUNTERS_FILE, "monitor": MONITOR_FILE}


def resample(t_rel: np.ndarray, values: np.ndarray, interval: float) -> pd.Series:
    """Values on checkpoints k·interval covered by the records (± half an interval at the edges)."""
    ok = ~np.isnan(values)
    t, v = t_rel[ok], values[ok]
    if not len(t):
        return pd.Series(dtype=float)
    first = math.ceil((t[0] - interval / 2) / interval - 1e-9)
    last = math.floor((t[-1] + interval / 2) / interval + 1e-9)
    if last < first:
        return pd.Series(dtype=float)
    grid = np.arange(first, last + 1) * interval
    out: pd.Series = pd.Series(np.interp(grid, t, v), index=np.round(grid, 6))
    return out


def sample_series(sample: SampleRecord, source: str, column: str, interval: float) -> pd.Series | None:
    """One sample's column on the checkpoint grid (seconds since its replay start), or None.

    A counter missing from counters.csv counts as 0 (Suricata omits zero counters)."""
    start = sample.start_unix
    df = read_series(sample.path / SOURCES[source])
    if start is None or df is None:
        return None
    if column not in df.columns:
        if source != "counters":
            return None
        df = df.assign(**{column: 0.0})
    t_rel = df["t_unix"].to_numpy(dtype=float) - start
    return resample(t_rel, df[column].to_numpy(dtype=float), interval)


def combine(series: list[pd.Series], level: float = 0.95) -> pd.DataFrame:
    """Per checkpoint across samples: columns t_s, median, lo, hi, n."""
    cols = ["t_s", "median", "lo", "hi", "n"]
    series = [s for s in series if s is not None and len(s)]
    if not series:
        empty: pd.DataFrame = pd.DataFrame(columns=cols)
        return empty
    wide = pd.concat(series, axis=1).sort_index()
    rows = []
    for t, values in wide.iterrows():
        vals = values.dropna().to_numpy()
        ci = median_ci(list(vals), level)
        if ci is None:
            continue
        rows.append((float(str(t)), float(np.median(vals)), ci[0], ci[1], len(vals)))
    table: pd.DataFrame = pd.DataFrame(rows, columns=cols)
    return table


def aligned(campaign: Campaign, case_id: str, source: str, column: str, *,
            interval: float | None = None, level: float = 0.95, per_second: bool = False) -> pd.DataFrame:
    """`column` of `source` ("counters" or "monitor") for every complete ok sample of the case,
    aligned on seconds since replay start: DataFrame t_s, median, lo, hi, n. With `per_second`, a
    cumulative column becomes each sample's rate per second between checkpoints before combining."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {sorted(SOURCES)}, not {source!r}")
    step = interval or campaign.stats_interval_s
    ok = [s for s in campaign.samples_of(case_id) if s.status == "ok"]
    series = [x for x in (sample_series(s, source, column, step) for s in ok) if x is not None]
    if per_second:
        series = [_rate(x) for x in series]
    return combine(series, level)


def _rate(series: pd.Series) -> pd.Series:
    """Per-second rate over each checkpoint interval, stamped at the interval's end."""
    t = pd.Series(series.index, index=series.index, dtype=float)
    rate: pd.Series = (series.diff() / t.diff()).iloc[1:]
    return rate
