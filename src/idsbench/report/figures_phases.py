"""Where a sample's wall time goes: one stacked bar per case, the median seconds of each phase of the
sample timeline (store.schema.PHASES), so the fixed cost beside the replay is visible."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from idsbench.report.figures_search import _short
from idsbench.report.style import finish_axes, legend_once, new_figure
from idsbench.store.schema import PHASES, CaseResult

PHASE_COLOURS = {"setup": "#8c8c8c", "sensor_start": "#bcbd22", "ready": "#ff7f0e", "replay": "#1f77b4",
                 "drain": "#17becf", "stop": "#d62728", "teardown": "#9467bd", "analysis": "#2ca02c"}


def phases_figure(rows: Sequence[CaseResult]) -> Figure | None:
    """Stacked bars per case: the median seconds of each phase over its ok samples."""
    rows = [r for r in rows if r.phases]
    if not rows:
        return None
    fig, axes = new_figure(1, 1, "Where a sample's time goes (median seconds per phase)")
    ax = axes[0][0]
    xs = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for name in PHASES:
        values = np.array([r.phases.get(name, 0.0) for r in rows])
        if not values.any():
            continue
        ax.bar(xs, values, bottom=bottom, color=PHASE_COLOURS[name], label=name.replace("_", " "), width=0.7)
        bottom += values
    for x, r, top in zip(xs, rows, bottom):
        overhead = r.medians.get("overhead_s")
        if overhead is not None:
            ax.annotate(f"+{overhead:.1f} s", (x, top), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(xs, [_short(r) for r in rows], rotation=30, ha="right", fontsize=8)
    finish_axes(ax, "case", "seconds")
    legend_once(fig, [ax])
    return fig
