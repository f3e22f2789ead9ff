"""Exporters of the per-case table (analysis.case_table rows): JSON, CSV, terminal text table."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Sequence

from idsbench.plan import trace_label
from idsbench.report.fmt import COLUMNS, load_label, with_ci


def to_json(rows: Sequence[dict[str, Any]]) -> str:
    return json.dumps(list(rows), indent=2) + "\n"


def flat(row: dict[str, Any]) -> dict[str, Any]:
    """One CSV-ready dict: `<key>_ci` -> `<key>_ci_lo`, `<key>_ci_hi`; lists joined with '; '."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key.endswith("_ci"):
            out[f"{key}_lo"], out[f"{key}_hi"] = (value or [None, None])
        elif isinstance(value, (list, tuple)):
            out[key] = "; ".join(str(v) for v in value)
        else:
            out[key] = value
    return out


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    flats = [flat(r) for r in rows]
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
        lines.append("  ".join(c.rjust(w) if i >= right_from else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines) + "\n"


def to_table(rows: Sequence[dict[str, Any]]) -> str:
    headers = ["setup", "trace", "rate", "load", "n", *(title for title, *_ in COLUMNS), "status"]
    body = [[str(r.get("setup")), trace_label(str(r.get("trace"))), str(r.get("rate")), load_label(r), str(r.get("samples")),
             *(with_ci(r, key, scale, digits) for _, key, scale, digits in COLUMNS), str(r.get("status"))]
            for r in rows]
    out = text_table(headers, body)
    warnings = [w for r in rows for w in r.get("warnings") or []]
    if warnings:
        out += "\nwarnings:\n" + "".join(f"  - {w}\n" for w in warnings)
    return out
