"""Time series of a campaign as Parquet: `<campaign>/series/counters.parquet` and `monitor.parquet`.

One row per counters.csv / monitor.csv record of every sample that has one, with `campaign_id`,
`case`, `sample`, `t_unix` and `t_s` (seconds since that sample's replay start; null without a
summary), then the CSV's own columns (numeric; a column missing in some samples is null there).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from idsbench.store.layout import COUNTERS_FILE, MONITOR_FILE, SERIES_DIR
from idsbench.store.reader import Campaign
from idsbench.store.series_io import read_csv_fast

SOURCES = {"counters": COUNTERS_FILE, "monitor": MONITOR_FILE}
ID_COLUMNS = ("campaign_id", "case", "sample", "t_unix", "t_s")


def _samples(campaign: Campaign) -> list[tuple[str, int, Path, float | None]]:
    out = [(s.case_id, s.index, s.path, s.start_unix) for s in campaign.samples]
    out += [(s.case_id, s.index, s.path, None) for s in campaign.incomplete if s.path.is_dir()]
    return sorted(out, key=lambda x: (x[0], x[1]))


def write_series(campaign: Campaign, campaign_id: str) -> dict[str, Path | None]:
    """Write one Parquet file per source (atomically); {source: path or None when no sample has it}."""
    out: dict[str, Path | None] = {}
    for source, filename in SOURCES.items():
        frames = []
        for case_id, index, path, start in _samples(campaign):
            df = read_csv_fast(path / filename)
            if df is None:
                continue
            ids = pd.DataFrame({"campaign_id": campaign_id, "case": case_id, "sample": index,
                                "t_unix": df["t_unix"],
                                "t_s": df["t_unix"] - start if start is not None else float("nan")})
            frames.append(pd.concat([ids, df.drop(columns=["t_unix"])], axis=1))
        target = campaign.root / SERIES_DIR / f"{source}.parquet"
        if not frames:
            target.unlink(missing_ok=True)
            out[source] = None
            continue
        table = pa.Table.from_pandas(pd.concat(frames, ignore_index=True), preserve_index=False)
        _write_atomic(table, target)
        out[source] = target
    return out


def _write_atomic(table: pa.Table, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
