"""Reading the result store: case rows across campaigns (`--where`), one campaign's table by id,
and the stored time series."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

from idsbench.errors import SpecError
from idsbench.store.index import connect
from idsbench.store.schema import CaseResult

HIDDEN = ("row", "ordinal")  # storage columns, not for filters
EXAMPLE = "--where \"setup='container' and replayers=4\""


def case_columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("DESCRIBE cases").fetchall() if r[0] not in HIDDEN]


def check_where(con: duckdb.DuckDBPyConnection, where: str) -> None:
    """SpecError naming the clause, DuckDB's complaint and the columns, unless `where` is one valid
    boolean expression over the cases table."""
    columns = case_columns(con)
    plain = [c for c in columns if not c.endswith(("_ci_lo", "_ci_hi"))]
    fix = (f"write an SQL condition over the columns {', '.join(plain)}, and <median>_ci_lo, "
           f"<median>_ci_hi for each median; quote strings with '…' and the column \"case\" with "
           f"double quotes ({EXAMPLE}).")
    if not where.strip():
        raise SpecError("--where is empty.", fix=fix)
    try:
        sql = f"SELECT count(*) FROM cases WHERE ({where})"
        if len(con.extract_statements(sql)) != 1:
            raise SpecError(f"--where {where!r} is more than one SQL statement.", fix=fix)
        con.execute(f"SELECT * FROM cases WHERE ({where}) LIMIT 0").fetchall()
    except duckdb.Error as exc:
        reason = str(exc).splitlines()[0]
        raise SpecError(f"--where {where!r} is not a valid filter over the cases table ({reason}).",
                        fix=fix) from exc


def query_cases(root: Path | str, where: str | None = None) -> list[tuple[str, CaseResult]]:
    """(campaign id, case result) of every indexed case matching `where`, in campaign then plan order."""
    with connect(root, read_only=True) as con:
        sql = "SELECT c.campaign_id, c.row FROM cases c JOIN campaigns k USING (campaign_id)"
        if where is not None:
            check_where(con, where)
            sql = ("SELECT c.campaign_id, c.row FROM (SELECT * FROM cases WHERE (" + where + ")) c "
                   "JOIN campaigns k USING (campaign_id)")
        sql += " ORDER BY k.created_unix NULLS LAST, c.campaign_id, c.ordinal"
        try:
            rows = con.execute(sql).fetchall()
        except duckdb.Error as exc:  # e.g. a cast that only fails on some rows
            raise SpecError(f"--where {where!r} failed on the stored cases ({str(exc).splitlines()[0]}).",
                            fix=f"compare columns with values of their type ({EXAMPLE}).") from exc
    return [(cid, CaseResult.model_validate_json(row)) for cid, row in rows]


def resolve_campaign(con: duckdb.DuckDBPyConnection, ref: str) -> tuple[str, str]:
    """(campaign_id, name) of `ref`: a campaign id (its path under the root) or a unique name."""
    row = con.execute("SELECT campaign_id, name FROM campaigns WHERE campaign_id = ?", [ref]).fetchone()
    if row:
        return row[0], row[1]
    named = con.execute("SELECT campaign_id, name FROM campaigns WHERE name = ? ORDER BY campaign_id",
                        [ref]).fetchall()
    if len(named) == 1:
        return named[0][0], named[0][1]
    known = [r[0] for r in con.execute("SELECT campaign_id FROM campaigns ORDER BY campaign_id").fetchall()]
    if named:
        raise SpecError(f"campaign name {ref!r} is ambiguous in the index: {', '.join(r[0] for r in named)}.",
                        fix="give one of those campaign ids instead.")
    raise SpecError(f"{ref!r} is neither a campaign directory nor a campaign in the index "
                    f"(known: {', '.join(known) or 'none'}).",
                    fix="give a campaign directory, an id listed by `idsbench index`, or --root DIR.")


def campaign_cases(root: Path | str, ref: str) -> tuple[str, list[CaseResult]]:
    """(campaign id, its case results as stored) for a campaign id or unique name."""
    with connect(root, read_only=True) as con:
        cid, _ = resolve_campaign(con, ref)
        rows = con.execute("SELECT row FROM cases WHERE campaign_id = ? ORDER BY ordinal", [cid]).fetchall()
    return cid, [CaseResult.model_validate_json(r[0]) for r in rows]


def series(root: Path | str, source: str, campaign_id: str, case: str | None = None) -> pd.DataFrame:
    """Stored `counters` or `monitor` rows of one campaign (optionally one case), by sample and time."""
    if source not in ("counters", "monitor"):
        raise ValueError(f"source must be counters or monitor, not {source!r}")
    with connect(root, read_only=True) as con:
        row = con.execute(f"SELECT {source}_parquet FROM campaigns WHERE campaign_id = ?",
                          [campaign_id]).fetchone()
        if not row or not row[0]:
            none: pd.DataFrame = pd.DataFrame()
            return none
        sql = "SELECT * FROM read_parquet(?)" + (" WHERE \"case\" = ?" if case else "") + \
            " ORDER BY \"case\", sample, t_unix"
        params = [str(Path(root) / row[0])] + ([case] if case else [])
        return con.execute(sql, params).df()
