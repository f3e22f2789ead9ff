"""The result store: `ROOT/index.duckdb` over every campaign under a results root.

Tables `campaigns`, `cases` (CaseResult rows + case parameters), `samples` (one row per
sample, incomplete ones with their reason); views `counters` and `monitor` over the per-campaign
Parquet series (`<campaign>/series/*.parquet`). Indexing reads summary.json, counters.csv and
monitor.csv only, never eve.json (except for a sample whose summary has no counters). A campaign
is re-indexed only when its digest (names, sizes, mtimes of those files) changed. The analysis is
passed in (`analyse`, see analysis.publish): the store depends on the results schema only.
See docs/compare.md, "The result store".
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from idsbench.errors import InputError, SpecError
from idsbench.store.index_paths import DEFAULT_ROOT, INDEX_FILE, index_file
from idsbench.store.index_rows import (
    CAMPAIGN_COLUMNS,
    CASE_COLUMNS,
    SAMPLE_COLUMNS,
    SCHEMA_VERSION,
    AnalysedCampaign,
    Row,
    campaign_digest,
    campaign_row,
    case_rows,
    sample_rows,
)
from idsbench.store.layout import CAMPAIGN_FILE, SERIES_DIR
from idsbench.store.reader import Campaign, load_campaign

Analyse = Callable[[Campaign], AnalysedCampaign]

__all__ = ["DEFAULT_ROOT", "INDEX_FILE", "IndexResult", "connect", "find_campaigns", "index_campaign",
           "index_file", "index_root", "refresh_views"]

TABLES = {"campaigns": CAMPAIGN_COLUMNS, "cases": CASE_COLUMNS, "samples": SAMPLE_COLUMNS}
LOCK_WAIT_S = 10.0


@dataclass(frozen=True)
class IndexResult:
    """What indexing did to one campaign: `indexed`, `unchanged`, `removed` or `failed`."""

    campaign_id: str
    path: Path
    action: str
    cases: int = 0
    samples: int = 0
    incomplete: int = 0
    warnings: tuple[str, ...] = ()


@contextmanager
def connect(root: Path | str, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to ROOT/index.duckdb (created with its schema unless read_only)."""
    path = index_file(root)
    if read_only and not path.is_file():
        raise InputError(f"there is no result index at {path}.",
                         fix=f"build it with `idsbench index {root}` (or give --root DIR).")
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    con = _open(path, read_only)
    try:
        if read_only:
            _check_schema(con, path)
        else:
            _ensure_schema(con)
        yield con
    finally:
        con.close()


def _open(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                raise InputError(f"cannot open the result index {path} ({str(exc).splitlines()[0]}).",
                                 fix="wait for the other idsbench process using it to finish, or delete "
                                     "the file and rebuild it with `idsbench index`.") from exc
            time.sleep(0.2)
        except duckdb.Error as exc:
            raise InputError(f"{path} is not a readable DuckDB result index ({exc}).",
                             fix="delete it and rebuild it with `idsbench index ROOT`.") from exc


def _schema_version(con: duckdb.DuckDBPyConnection) -> str | None:
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except duckdb.CatalogException:
        return None
    return row[0] if row else None


def _check_schema(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    found = _schema_version(con)
    if found != SCHEMA_VERSION:
        raise InputError(f"the result index {path} has schema {found}, this idsbench expects "
                         f"{SCHEMA_VERSION}.", fix=f"rebuild it with `idsbench index {path.parent}`.")


def _ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    if _schema_version(con) == SCHEMA_VERSION:
        return
    for view in ("counters", "monitor"):
        con.execute(f"DROP VIEW IF EXISTS {view}")
    for name in (*TABLES, "meta"):
        con.execute(f"DROP TABLE IF EXISTS {name}")
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    for name, columns in TABLES.items():
        cols = ", ".join(f'"{c}" {t}' for c, t in columns.items())
        con.execute(f"CREATE TABLE {name} ({cols})")
    con.execute("INSERT INTO meta VALUES ('schema', ?)", [SCHEMA_VERSION])


def campaign_id_of(campaign_dir: Path, root: Path) -> str:
    """The campaign's path relative to the root (POSIX), its id in the index."""
    try:
        rel = campaign_dir.resolve().relative_to(root.resolve())
    except ValueError:
        raise SpecError(f"campaign {campaign_dir} is not under the results root {root}.",
                        fix="give --root a directory that holds the campaign (default: its parent).") from None
    if not rel.parts:
        raise SpecError(f"{campaign_dir} is a campaign, not a results root holding campaigns.",
                        fix=f"index its parent directory ({campaign_dir.resolve().parent}).")
    return rel.as_posix()


def find_campaigns(root: Path) -> list[Path]:
    """Directories under root holding campaign.json (not descending into a campaign)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        if CAMPAIGN_FILE in filenames and Path(dirpath) != root:
            found.append(Path(dirpath))
            dirnames.clear()
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return sorted(found)


def index_campaign(campaign_dir: Path | str, analyse: Analyse, root: Path | str | None = None, *,
                   force: bool = False) -> IndexResult:
    """(Re)index one campaign into ROOT/index.duckdb; ROOT defaults to the campaign's parent.

    Skipped (`unchanged`) when its digest matches the index, unless `force`. Raises InputError
    for a directory that is not a readable campaign. Called after `idsbench run` and by `report`."""
    campaign_dir = Path(campaign_dir)
    root_dir = Path(root) if root is not None else campaign_dir.resolve().parent
    cid = campaign_id_of(campaign_dir, root_dir)
    with connect(root_dir) as con:
        result = _index_one(con, campaign_dir, cid, force, analyse)
        refresh_views(con, root_dir)
    return result


def index_root(analyse: Analyse, root: Path | str = DEFAULT_ROOT, *, force: bool = False) -> list[IndexResult]:
    """Index every campaign under root incrementally; drop campaigns whose directory is gone.

    A campaign that cannot be read is reported as `failed` (with the reason) and the others go on."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"results root {root} does not exist or is not a directory.",
                         fix="give the directory holding your campaign directories (default results/).")
    results = []
    with connect(root) as con:
        seen = set()
        for campaign_dir in find_campaigns(root):
            cid = campaign_id_of(campaign_dir, root)
            seen.add(cid)
            try:
                results.append(_index_one(con, campaign_dir, cid, force, analyse))
            except InputError as exc:
                results.append(IndexResult(cid, campaign_dir, "failed", warnings=(str(exc),)))
        for (cid,) in con.execute("SELECT campaign_id FROM campaigns ORDER BY campaign_id").fetchall():
            if cid not in seen:
                _delete(con, cid)
                results.append(IndexResult(cid, root / cid, "removed"))
        refresh_views(con, root)
    return results


def _index_one(con: duckdb.DuckDBPyConnection, campaign_dir: Path, cid: str, force: bool,
               analyse: Analyse) -> IndexResult:
    digest = campaign_digest(campaign_dir)
    row = con.execute("SELECT digest, n_cases, n_samples, n_incomplete FROM campaigns WHERE campaign_id = ?",
                      [cid]).fetchone()
    if row and row[0] == digest and not force:
        return IndexResult(cid, campaign_dir, "unchanged", row[1], row[2], row[3])
    from idsbench.store.index_series import write_series  # pandas: only when a campaign is (re)indexed

    campaign = load_campaign(campaign_dir)
    analysed = analyse(campaign)
    series = write_series(campaign, cid)
    rel = {k: f"{cid}/{SERIES_DIR}/{p.name}" if p else None for k, p in series.items()}
    record = campaign_row(campaign, cid, cid, digest, rel, time.time())
    cases, samples = case_rows(analysed, cid), sample_rows(analysed, cid)
    con.begin()
    try:
        _delete(con, cid)
        _insert(con, "campaigns", [record])
        _insert(con, "cases", cases)
        _insert(con, "samples", samples)
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return IndexResult(cid, campaign_dir, "indexed", len(campaign.cases), len(campaign.samples),
                       len(campaign.incomplete), campaign.warnings)


def _delete(con: duckdb.DuckDBPyConnection, cid: str) -> None:
    for name in TABLES:
        con.execute(f"DELETE FROM {name} WHERE campaign_id = ?", [cid])


_ARROW = {"VARCHAR": pa.string(), "JSON": pa.string(), "INTEGER": pa.int64(), "DOUBLE": pa.float64(),
          "TIMESTAMP": pa.float64(), "VARCHAR[]": pa.list_(pa.string()),
          "MAP(VARCHAR, DOUBLE)": pa.map_(pa.string(), pa.float64())}


def _cell(value: object, column_type: str) -> object:
    """A row's value as Arrow takes it (a MAP column from a dict: its items)."""
    return list(value.items()) if column_type.startswith("MAP") and isinstance(value, dict) else value


def _insert(con: duckdb.DuckDBPyConnection, name: str, rows: list[Row]) -> None:
    """Insert rows through one Arrow table (fast, typed); TIMESTAMP columns arrive as unix seconds."""
    if not rows:
        return
    columns = TABLES[name]
    schema = pa.schema([(c, _ARROW[t.removesuffix(" PRIMARY KEY")]) for c, t in columns.items()])
    data = [{c: _cell(r[c], columns[c]) for c in columns} for r in rows]
    batch = pa.Table.from_pylist(data, schema=schema)  # noqa: F841 (read by DuckDB below)
    stamps = [c for c, t in columns.items() if t == "TIMESTAMP"]
    replace = f" REPLACE ({', '.join(f'make_timestamp(CAST({c} * 1e6 AS BIGINT)) AS {c}' for c in stamps)})" \
        if stamps else ""
    con.execute(f"INSERT INTO {name} BY NAME SELECT *{replace} FROM batch")


def refresh_views(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Views `counters` and `monitor` over every campaign's Parquet file (absolute paths, so they are
    rebuilt on every index run; after moving the root, run `idsbench index` again)."""
    for source in ("counters", "monitor"):
        files = [str((root / p).resolve()) for (p,) in con.execute(
            f"SELECT {source}_parquet FROM campaigns WHERE {source}_parquet IS NOT NULL "
            "ORDER BY campaign_id").fetchall() if (root / p).is_file()]
        if not files:
            con.execute(f"DROP VIEW IF EXISTS {source}")
            continue
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        con.execute(f"CREATE OR REPLACE VIEW {source} AS "
                    f"SELECT * FROM read_parquet([{listed}], union_by_name = true)")
