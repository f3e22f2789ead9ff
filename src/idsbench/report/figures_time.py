"""Figures over time (seconds since replay start): per-checkpoint medians with their CI band (the level the sample count reaches)."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from idsbench.analysis.series import aligned
from idsbench.report.fmt import ci_label
from idsbench.report.style import (
    LINESTYLES,
    PanelKey,
    finish_axes,
    grid,
    hide_unused,
    legend_once,
    new_figure,
    panel_key,
    panel_title,
    variant,
)
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult

XLABEL = "time since replay start (s)"
CUMULATIVE = (("captured_pkts", "captured packets", 1.0),
              ("dropped_pkts", "dropped packets", 1.0),
              ("decoded_pkts", "decoded packets", 1.0),
              ("decoded_bytes", "decoded KiB", 1024.0))


def _panels(rows: Sequence[CaseResult]) -> dict[PanelKey, list[CaseResult]]:
    out: dict[PanelKey, list[CaseResult]] = {}
    for row in sorted(rows, key=panel_key):
        out.setdefault(panel_key(row), []).append(row)
    return out


def _label(row: CaseResult, rows: Sequence[CaseResult]) -> str:
    variants = {variant(r.params) for r in rows}
    return f"{row.params.setup} ({variant(row.params)})" if len(variants) > 1 else row.params.setup


def _style(row: CaseResult, rows: Sequence[CaseResult]) -> str:
    variants = sorted({variant(r.params) for r in rows})
    return LINESTYLES[variants.index(variant(row.params)) % len(LINESTYLES)]


def _plot_case(ax: Axes, campaign: Campaign, row: CaseResult, rows: Sequence[CaseResult],
               colors: dict[str, str], source: str, column: str, scale: float,
               per_second: bool = False) -> bool:
    frame = aligned(campaign, row.case, source, column, per_second=per_second)
    if frame.empty:
        return False
    color = colors[row.params.setup]
    ax.plot(frame["t_s"], frame["median"] / scale, color=color, linestyle=_style(row, rows),
            linewidth=1.6, label=_label(row, rows))
    ax.fill_between(frame["t_s"], frame["lo"] / scale, frame["hi"] / scale, color=color, alpha=0.18,
                    linewidth=0)
    return True


def time_figure(campaign: Campaign, rows: Sequence[CaseResult], colors: dict[str, str], *,
                source: str, column: str, title: str, ylabel: str, scale: float = 1.0,
                per_second: bool = False) -> Figure | None:
    """One panel per (trace, rate, load), one line per case coloured by setup. None if no data."""
    panels = _panels(rows)
    if not panels:
        return None
    multi_trace = len({k[0] for k in panels}) > 1
    multi_rate = len({k[1] for k in panels}) > 1
    nrows, ncols = grid(len(panels))
    fig, axes = new_figure(nrows, ncols, title)
    flat = [a for r in axes for a in r]
    plotted = False
    for ax, (key, members) in zip(flat, panels.items()):
        for row in members:
            plotted |= _plot_case(ax, campaign, row, rows, colors, source, column, scale, per_second)
        ax.axvline(0, color="#555", linewidth=0.8, linestyle="--")
        finish_axes(ax, XLABEL, ylabel, panel_title(key, multi_trace, multi_rate))
    hide_unused(axes, len(panels))
    legend_once(fig, flat)
    return fig if plotted else None


def cumulative_figure(campaign: Campaign, rows: Sequence[CaseResult],
                      colors: dict[str, str]) -> Figure | None:
    """Rows: captured, dropped, decoded packets and KiB decoded; columns: (trace, rate, load)."""
    panels = _panels(rows)
    if not panels:
        return None  # no case with an ok sample: nothing to draw
    multi_trace = len({k[0] for k in panels}) > 1
    multi_rate = len({k[1] for k in panels}) > 1
    fig, axes = new_figure(len(CUMULATIVE), len(panels),
                           f"Cumulative sensor counters (median over samples, {ci_label(r.ci_level for r in rows)} band)")
    plotted = False
    for c, (key, members) in enumerate(panels.items()):
        for r, (column, ylabel, scale) in enumerate(CUMULATIVE):
            ax = axes[r][c]
            for row in members:
                plotted |= _plot_case(ax, campaign, row, rows, colors, "counters", column, scale)
            ax.axvline(0, color="#555", linewidth=0.8, linestyle="--")
            finish_axes(ax, XLABEL, ylabel, panel_title(key, multi_trace, multi_rate) if r == 0 else None)
    legend_once(fig, [a for r in axes for a in r])
    return fig if plotted else None
