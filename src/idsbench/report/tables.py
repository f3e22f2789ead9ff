"""The results of a campaign (`CaseResult`s, the results contract `CaseResult.to_row()`) in every
format: JSON and CSV records, and one results table for the terminal and the report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from idsbench.plan import trace_label
from idsbench.report import export
from idsbench.report.casedata import measure
from idsbench.report.fmt import load_label
from idsbench.report.style import variant
from idsbench.report.table import Column, Row, Table, Text, Value, metric_column, table
from idsbench.store.schema import CaseResult

# The metrics of the results table (titles, scale and digits from the metric registry, idsbench.metrics).
RESULT_METRICS = ("stable_after_s", "sent_pkts", "dropped_pkts", "drop_ratio", "decoded_pkts", "decoded_bytes",
                  "alerts", "sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct")


def records(rows: Sequence[CaseResult], campaigns: Sequence[str] | None = None) -> list[dict[str, object]]:
    """The results contract: one object per case (with `campaign` first when given)."""
    if campaigns is None:
        return [r.to_row() for r in rows]
    return [{"campaign": c, **r.to_row()} for c, r in zip(campaigns, rows)]


def to_json(rows: Sequence[CaseResult], campaigns: Sequence[str] | None = None) -> str:
    return export.to_json(records(rows, campaigns))


def to_csv(rows: Sequence[CaseResult], campaigns: Sequence[str] | None = None) -> str:
    """One line per case: `<key>_ci` as `<key>_ci_lo`, `<key>_ci_hi`, lists joined with '; '."""
    return export.to_csv(records(rows, campaigns))


def status_text(r: CaseResult) -> str:
    """`ok` or the verdict, with counts when samples differ (e.g. `ok (2 ok, 1 failed)`)."""
    if len(r.status_counts) <= 1:
        return r.status
    return f"{r.status} (" + ", ".join(f"{n} {k}" for k, n in r.status_counts.items()) + ")"


def results_table(rows: Sequence[CaseResult], colors: Mapping[str, str] | None = None) -> Table:
    """One row per case: its parameters, the medians [CIs] of RESULT_METRICS, status and labels
    (`colors`: the report's setup colours, drawn as swatches in HTML)."""
    columns = [Column("setup", "setup"), Column("trace", "trace"), Column("rate", "rate"),
               Column("load", "load", "right"), Column("samples", "n", "right"),
               Column("ci_level", "CI level", "right"),
               *(metric_column(k) for k in RESULT_METRICS), Column("status", "status"), Column("labels", "labels")]
    body = []
    for r in rows:
        p = r.params
        workers = f"{r.sensor_threads} worker{'s' if r.sensor_threads != 1 else ''}" if r.sensor_threads else ""
        cells: list[Value] = [
            Text(p.setup, note=", ".join(v for v in (variant(p), workers) if v), swatch=(colors or {}).get(p.setup, "")),
            Text(trace_label(p.trace), tip=p.trace), p.rate, load_label(r), r.samples,
            f"{r.ci_level:.0%}" if r.samples else "–", *(measure(r, k) for k in RESULT_METRICS),
            Text(status_text(r), css="status-ok" if r.status == "ok" else "status-bad"), ", ".join(r.labels)]
        body.append(Row(tuple(cells), "" if r.status == "ok" else "failed"))
    return table(columns, body, css="results", id="case-results")


def to_table(rows: Sequence[CaseResult]) -> str:
    out = export.to_text(results_table(rows))
    warnings = [w for r in rows for w in r.warnings]
    if warnings:
        out += "\nwarnings:\n" + "".join(f"  - {w}\n" for w in warnings)
    return out
