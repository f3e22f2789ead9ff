"""`trend` in every format (analysis.trend): tables for the terminal, the JSON contract (docs/trend.schema.json) and a
self-contained HTML trend page (one figure per metric and series: points with CIs, segments with
theirs, changes marked; the report's figure style)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from idsbench.analysis.trend import TrendSeries, segment_text
from idsbench.metrics import metric
from idsbench.report import export
from idsbench.report.table import Column, Measure, Table, table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

KIND_COLORS = {"regression": "#b42318", "progression": "#1a7f37"}


def to_json(series: Sequence[TrendSeries]) -> str:
    """The contract of docs/trend.schema.json."""
    return export.to_json([s.to_json() for s in series])


def _title(s: TrendSeries) -> str:
    k = s.key
    return f"{k.get('case')} ({k.get('engine')}, {k.get('setup')}, cpus {k.get('cpus')}, {k.get('load')})"


def _changes(s: TrendSeries) -> str:
    return "; ".join(f"{c.kind} at {c.at} {c.size_pct:+.1f}%" if c.size_pct is not None
                     else f"{c.kind} at {c.at}" for c in s.changes) or "none"


def tables(series: Sequence[TrendSeries]) -> list[Table]:
    """Per case: one row per metric (its segments' medians [CIs] and its changes), what changed below."""
    out = []
    columns = (Column("metric", "metric"), Column("direction", "direction"), Column("points", "points", "right"),
               Column("segments", "segments (median [CI])"), Column("changes", "changes"))
    for title in dict.fromkeys(_title(s) for s in series):
        members = [s for s in series if _title(s) == title]
        rows = [(s.metric, metric(s.metric).direction_text, len(s.points),
                 " | ".join(segment_text(s.metric, seg) for seg in s.segments), _changes(s)) for s in members]
        notes = [f"  {s.metric} {c.kind} at {c.at}: " + "; ".join(c.what_changed) for s in members for c in s.changes]
        out.append(table(columns, rows, title=f"{title}: {len(members[0].points)} campaign(s)", notes=notes))
    return out


def to_table(series: Sequence[TrendSeries]) -> str:
    if not series:
        return "no series: the index (or the directories) hold no case with these metrics\n"
    return export.to_text(tables(series))


def segment_table(s: TrendSeries) -> Table:
    """A series' segments: the campaigns each spans and its median [CI] (the HTML page)."""
    columns = (Column("from", "from"), Column("to", "to"), Column("points", "points", "right"),
               Column(s.metric, f"median [CI] ({metric(s.metric).title})", "right"))
    rows = [(s.points[seg.start].campaign, s.points[seg.end - 1].campaign, seg.end - seg.start,
             Measure(s.metric, seg.median, seg.ci)) for seg in s.segments]
    return table(columns, rows, css="segments")


def trend_figure(s: TrendSeries) -> Figure:
    from idsbench.report.style import finish_axes, new_figure  # matplotlib: only for the page

    m = metric(s.metric)
    fig, axes = new_figure(1, 1, f"{m.title}: {s.key.get('case')}")
    ax = axes[0][0]
    xs = list(range(len(s.points)))
    ys = [p.value / m.scale for p in s.points]
    lo = [max(0.0, (p.value - p.ci[0]) / m.scale) if p.ci else 0.0 for p in s.points]
    hi = [max(0.0, (p.ci[1] - p.value) / m.scale) if p.ci else 0.0 for p in s.points]
    ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", color="#1f77b4", ecolor="#7aa6d6", capsize=3,
                label="campaign median, CI")
    for seg in s.segments:
        if seg.median is None:
            continue
        x0, x1 = seg.start - 0.4, seg.end - 1 + 0.4
        ax.hlines(seg.median / m.scale, x0, x1, colors="#333333", linewidth=2, label="segment median")
        if seg.ci:
            ax.fill_between([x0, x1], seg.ci[0] / m.scale, seg.ci[1] / m.scale, color="#999999", alpha=0.25,
                            label="segment CI")
    for c in s.changes:
        ax.axvline(c.index - 0.5, color=KIND_COLORS[c.kind], linestyle="--", label=c.kind)
        size = f"{c.size_pct:+.1f}%" if c.size_pct is not None else c.kind
        ax.annotate(size, (c.index - 0.5, ax.get_ylim()[1]), color=KIND_COLORS[c.kind], fontsize=8,
                    ha="left", va="top")
    ax.set_xticks(xs, [p.campaign[-18:] for p in s.points], rotation=45, ha="right", fontsize=7)
    finish_axes(ax, "campaign (time order)", f"{m.title} ({m.direction_text})")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(list(unique.values()), list(unique.keys()), fontsize=8)
    return fig


def to_html(series: Sequence[TrendSeries], failures: Sequence[str] = ()) -> str:
    from idsbench.report.style import save

    env = export.html_env()
    plots = []
    with tempfile.TemporaryDirectory(prefix="idsbench-trend-") as tmp:
        for i, s in enumerate(series):
            fig = save(trend_figure(s), Path(tmp), f"trend_{i}", s.metric, _title(s))
            plots.append({"title": _title(s), "metric": metric(s.metric).title, "uri": fig.data_uri(),
                          "segments": segment_table(s),
                          "changes": [{"kind": c.kind, "at": c.at,
                                       "size": f"{c.size_pct:+.1f}%" if c.size_pct is not None else "from 0",
                                       "ci": f"[{c.size_ci[0]:+.1f}%, {c.size_ci[1]:+.1f}%]" if c.size_ci else "",
                                       "what": list(c.what_changed)} for c in s.changes]})
    return env.get_template("trend.html.j2").render(plots=plots, failures=list(failures))
