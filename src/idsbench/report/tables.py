"""The results of a campaign (`CaseResult`s, the results contract `CaseResult.to_row()`) in every
format: JSON and CSV records, and one results table for the terminal and the report."""

from __future__ import annotations

import dataclasses
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
                  "alerts", "sensor_cpu_pct", "sensor_us_per_pkt", "sensor_us_per_pkt_net", "sensor_rss_peak_bytes",
                  "host_cpu_pct")
# what a packet's cost includes (the tables' notes and the HTML headers' tips)
US_PER_PKT_NOTE = ("sensor µs/pkt: the sensor cgroup's CPU time (every thread: capture, workers, flow manager, stats, "
                   "alert output) from replay start to the end of its processing, over the packets it processed; "
                   "its idle housekeeping over that span is included, so a short or slow trace reads high")
NET_NOTE = ("net of idle: the same minus the sensor's idle CPU rate (read over timing.idle_window_s before the "
            "replay, nothing sent) × that span: what the packets cost beyond its fixed housekeeping (first-packet "
            "warm-up still included); – where no idle window was read")
TIPS = {"sensor_us_per_pkt": US_PER_PKT_NOTE, "sensor_us_per_pkt_net": NET_NOTE}


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
               Column("load", "load", "right"),
               Column("samples", "n (CI level)", "right", "ok samples, and the coverage of the medians' CIs they reach"),
               *(dataclasses.replace(metric_column(k), tip=TIPS.get(k, "")) for k in RESULT_METRICS),
               Column("status", "status (labels)", tip="the case's verdict counts; under it its labels")]
    sides = duet_sides(rows)
    body = []
    for r in rows:
        p = r.params
        workers = f"{r.sensor_threads} worker{'s' if r.sensor_threads != 1 else ''}" if r.sensor_threads else ""
        cells: list[Value] = [
            Text(p.setup, note=", ".join(v for v in (sides.get(r.case, ""), variant(p), workers) if v),
                 swatch=(colors or {}).get(p.setup, "")),
            Text(trace_label(p.trace), tip=p.trace), p.rate, load_label(r),
            Text(f"{r.samples:,}", note=f"{r.ci_level:.0%}" if r.samples else "", css="num"),
            *(measure(r, k) for k in RESULT_METRICS),
            Text(status_text(r), note=", ".join(r.labels), css="status-ok" if r.status == "ok" else "status-bad")]
        body.append(Row(tuple(cells), "" if r.status == "ok" else "failed"))
    notes = [US_PER_PKT_NOTE, NET_NOTE] if any(r.medians.get("sensor_us_per_pkt") is not None for r in rows) else []
    return table(columns, body, css="results", id="case-results", notes=notes)


def duet_sides(rows: Sequence[CaseResult]) -> dict[str, str]:
    """Per duet side's case: 'duet side a: rules=base' (the parameters its pair's sides differ in; 'A/A' when
    none), so the two rows of a pair read apart."""
    pairs: dict[str, list[CaseResult]] = {}
    for r in rows:
        if r.duet_pair is not None:
            pairs.setdefault(r.duet_pair, []).append(r)
    out = {}
    for members in pairs.values():
        params = [m.params.model_dump(exclude={"duet_side"}) for m in members]
        differ = [k for k in params[0] if len({repr(p[k]) for p in params}) > 1]
        for m, p in zip(members, params):
            what = ", ".join(f"{k}={p[k]}" for k in differ) or "A/A"
            out[m.case] = f"duet side {m.duet_side}: {what}"
    return out


def to_table(rows: Sequence[CaseResult]) -> str:
    out = export.to_text(results_table(rows))
    warnings = [w for r in rows for w in r.warnings]
    if warnings:
        out += "\nwarnings:\n" + "".join(f"  - {w}\n" for w in warnings)
    return out
