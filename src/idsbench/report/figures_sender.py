"""Sender fidelity figures: requested against achieved packets per second over time, and how late
the sender's packets left against their schedule."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from idsbench.analysis.fidelity import Fidelity, sample_fidelity, worst_lateness
from idsbench.analysis.series import aligned
from idsbench.report.style import finish_axes, grid, hide_unused, legend_once, new_figure, panel_key, panel_title
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult

XLABEL = "time since replay start (s)"


def _fidelities(campaign: Campaign, row: CaseResult) -> list[Fidelity]:
    return [f for s in campaign.samples_of(row.case) if s.status == "ok"
            for f in [sample_fidelity(s.summary)] if f is not None]


def _median_series(series: Sequence[Sequence[float]]) -> np.ndarray | None:
    """Per second, the median over the samples that reach that second."""
    series = [s for s in series if s]
    if not series:
        return None
    grid_ = np.full((len(series), max(len(s) for s in series)), np.nan)
    for i, s in enumerate(series):
        grid_[i, :len(s)] = s
    return np.asarray(np.nanmedian(grid_, axis=0))


def _label(row: CaseResult, sender_only: bool) -> str:
    who = row.params.sender
    return who if sender_only else f"{row.params.setup}, {who}"


def _plot_rates(ax: Axes, campaign: Campaign, row: CaseResult, color: str, label: str) -> bool:
    fids = _fidelities(campaign, row)
    achieved = _median_series([f.achieved_pps for f in fids])
    plotted = False
    if achieved is not None:  # seconds [t, t+1): drawn at their midpoints
        ax.plot(np.arange(achieved.size) + 0.5, achieved, color=color, linewidth=1.6, marker=".",
                label=f"{label}: achieved")
        plotted = True
    else:  # tcpreplay reports totals only: the wire's own count stands in
        frame = aligned(campaign, row.case, "monitor", "sender_tx_pkts", per_second=True)
        if not frame.empty:
            ax.plot(frame["t_s"], frame["median"], color=color, linewidth=1.6,
                    label=f"{label}: achieved (sender interface)")
            plotted = True
    requested = _median_series([f.requested_pps for f in fids if f.requested_pps])
    if requested is not None:
        ax.step(np.arange(requested.size + 1), np.append(requested, requested[-1]), where="post", color=color,
                linestyle="--", linewidth=1.0, alpha=0.8, label=f"{label}: requested")
        plotted = True
    return plotted


def fidelity_figure(campaign: Campaign, rows: Sequence[CaseResult], colors: dict[str, str]) -> Figure | None:
    """One panel per (trace, rate, load): each case's achieved rate (solid) over its requested one
    (dashed), summed over replayers, median over ok samples."""
    panels: dict[tuple[str, str, int], list[CaseResult]] = {}
    for row in sorted(rows, key=panel_key):
        panels.setdefault(panel_key(row), []).append(row)
    if not panels:
        return None
    multi_trace = len({k[0] for k in panels}) > 1
    multi_rate = len({k[1] for k in panels}) > 1
    sender_only = len({r.params.setup for r in rows}) == 1
    nrows, ncols = grid(len(panels))
    fig, axes = new_figure(nrows, ncols, "Sender fidelity: requested vs achieved packets per second")
    flat = [a for r in axes for a in r]
    plotted = False
    for ax, (key, members) in zip(flat, panels.items()):
        for row in members:
            color = colors[row.params.setup] if not sender_only else ("#1f77b4", "#ff7f0e")[
                members.index(row) % 2]
            plotted |= _plot_rates(ax, campaign, row, color, _label(row, sender_only))
        finish_axes(ax, XLABEL, "packets per second (all replayers)", panel_title(key, multi_trace, multi_rate))
    hide_unused(axes, len(panels))
    legend_once(fig, flat)
    return fig if plotted else None


LATENESS = (("p50_ms", "median", "#9ecae1"), ("p99_ms", "99th percentile", "#3182bd"), ("max_ms", "worst", "#08519c"))


def lateness_figure(campaign: Campaign, rows: Sequence[CaseResult]) -> Figure | None:
    """Per case whose sender keeps a schedule: median, p99 and worst lateness of its packets (the
    worst replayer per sample, median over ok samples), log scale."""
    cases: list[tuple[str, dict[str, float]]] = []
    for row in rows:
        lates = [late for s in campaign.samples_of(row.case) if s.status == "ok" and s.summary.replay
                 for late in [worst_lateness(s.summary.replay)] if late is not None]
        if lates:
            cases.append((row.case, {k: float(np.median([getattr(x, k) for x in lates])) for k, _, _ in LATENESS}))
    if not cases:
        return None
    fig, axes = new_figure(1, 1, "Sender lateness against its schedule (median over samples)")
    ax = axes[0][0]
    fig.set_figheight(max(3.3, 0.45 * len(cases) * len(LATENESS) / 2 + 1.2))
    y = np.arange(len(cases))
    height = 0.8 / len(LATENESS)
    for i, (key, label, colour) in enumerate(LATENESS):
        values = [max(c[1][key], 1e-3) for c in cases]  # log axis: 1 µs floor
        ax.barh(y + (i - 1) * height, values, height=height, color=colour, label=label)
    ax.set_yticks(y, [c[0] for c in cases], fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1.0, color="#d62728", linewidth=0.8, linestyle=":")
    finish_axes(ax, "lateness (ms, log scale; dotted: 1 ms)", "")
    legend_once(fig, [ax])
    return fig
