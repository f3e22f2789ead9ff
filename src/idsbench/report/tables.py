"""Exporters of case results (the results contract, `CaseResult.to_row()`): JSON, CSV, text table."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from idsbench.plan import trace_label
from idsbench.report.fmt import COLUMNS, load_label, with_ci
from idsbench.store.schema import CaseResult


def to_json(rows: Sequence[CaseResult], campaigns: Sequence[str] | None = None) -> str:
    """The results contract: a JSON array, one object per case (with `campaign` when given)."""
    return json.dumps(_rows(rows, campaigns), indent=2) + "\n"


def _rows(rows: Sequence[CaseResult], campaigns: Sequence[str] | None) -> list[dict[str, Any]]:
    if campaigns is None:
        return [r.to_row() for r in rows]
    return [{"campaign": c, **r.to_row()} for c, r in zip(campaigns, rows)]


def flat(row: dict[str, Any]) -> dict[str, Any]:
    """One CSV-ready dict: `<key>_ci` -> `<key>_ci_lo`, `<key>_ci_hi`; lists joined with '; '."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key.endswith("_ci"):
            out[f"{key}_lo"], out[f"{key}_hi"] = (value or [None, None])
        elif isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        elif isinstance(value, (list, tuple)):
            out[key] = "; ".join(str(v) for v in value)
        else:
            out[key] = value
    return out


def to_csv(rows: Sequence[CaseResult], campaigns: Sequence[str] | None = None) -> str:
    flats = [flat(r) for r in _rows(rows, campaigns)]
    fields: list[str] = []
    for f in flats:
        fields.extend(k for k in f if k not in fields)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(flats)
    return buf.getvalue()


def text_table(headers: Sequence[str], body: Sequence[Sequence[str]], right_from: int = 4) -> str:
    """Columns before `right_from` left-aligned, the rest right-aligned; one line per row."""
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    for r in body:
        cells = (c.rjust(w) if i >= right_from else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
        lines.append("  ".join(cells))
    return "\n".join(lines) + "\n"


def to_table(rows: Sequence[CaseResult]) -> str:
    levels = sorted({r.ci_level for r in rows if r.samples})
    level = f"{levels[0]:.0%}" if len(levels) == 1 else "see ci_level"
    headers = ["setup", "engine", "trace", "rate", "load", "n", f"[{level} CI]",
               *(title for title, *_ in COLUMNS), "status"]
    body = [[r.params.setup, r.params.engine, trace_label(r.params.trace), r.params.rate, load_label(r),
             str(r.samples), f"{r.ci_level:.0%}" if r.samples else "–",
             *(with_ci(r, key, scale, digits) for _, key, scale, digits in COLUMNS), _status(r)]
            for r in rows]
    out = text_table(headers, body, right_from=5)
    warnings = [w for r in rows for w in r.warnings]
    if warnings:
        out += "\nwarnings:\n" + "".join(f"  - {w}\n" for w in warnings)
    return out


def _status(r: CaseResult) -> str:
    """`ok` or the verdict, with counts when samples differ (e.g. `ok (2 ok, 1 failed)`)."""
    if len(r.status_counts) <= 1:
        return r.status
    return f"{r.status} (" + ", ".join(f"{n} {k}" for k, n in r.status_counts.items()) + ")"
