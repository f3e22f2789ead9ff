"""Figures of searches, the loss waterfall and detection: loss vs offered load with the brackets,
where packets were lost per case (stacked), alert recall vs load."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from idsbench.plan import trace_label
from idsbench.report.style import finish_axes, grid, hide_unused, legend_once, new_figure, variant
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult, SearchResult

# (metric, label, colour): bottom to top of the stacked waterfall
WATERFALL = (("decoded_pkts", "decoded", "#2ca02c"), ("unprocessed_pkts", "unprocessed at stop", "#98df8a"),
             ("loss_capture_pkts", "capture (ring) drops", "#d62728"), ("loss_softnet_pkts", "softnet drops", "#ff7f0e"),
             ("loss_nic_pkts", "NIC rx drops", "#bcbd22"), ("loss_wire_pkts", "wire loss", "#1f77b4"),
             ("loss_sender_pkts", "sender loss", "#9467bd"), ("unaccounted_pkts", "unaccounted", "#7f7f7f"))
TOLERANCE_COLOURS = ("#2ca02c", "#1f77b4", "#9467bd", "#8c564b")


def search_figure(campaign: Campaign) -> Figure | None:
    """Per searched case: every trial's loss ratio at its offered load, the brackets, the sender's ceiling."""
    searches = [s for s in campaign.searches.values() if s.trials]
    if not searches:
        return None
    nrows, ncols = grid(len(searches), 2)
    fig, axes = new_figure(nrows, ncols, "Search: loss vs offered load (trials, brackets, verification)")
    flat = [a for r in axes for a in r]
    for ax, result in zip(flat, searches):
        _plot_search(ax, result)
        finish_axes(ax, _xlabel(result), "loss (% of sent, every drop point)", _title(campaign, result))
    hide_unused(axes, len(searches))
    legend_once(fig, flat)
    return fig


def repeats_figure(campaign: Campaign) -> Figure | None:
    """Per searched case with repeats: each repeat's NDR bounds side by side, the median and its CI."""
    from idsbench.analysis.search import repeat_fields

    searches = [s for s in campaign.searches.values() if s.repeats and s.axis != "cpus"]
    if not searches:
        return None
    nrows, ncols = grid(len(searches), 2)
    fig, axes = new_figure(nrows, ncols, "Search repeats: each repeat's NDR bounds, the median and its CI")
    flat = [a for r in axes for a in r]
    for ax, result in zip(flat, searches):
        xs, lowers, uppers = [], [], []
        for rep in result.repeats:
            r0 = next((r for r in rep.results if r.tolerance == 0), None)
            if r0 is None or r0.value_pps is None:
                continue
            xs.append(rep.index + 1)
            lowers.append(r0.value_pps)
            upper = r0.relevant_upper if r0.relevant_upper is not None and result.axis == "rate" else r0.value_pps
            uppers.append(upper)
        ax.bar(xs, [u - lo for u, lo in zip(uppers, lowers, strict=True)], bottom=lowers, width=0.4,
               color="#1f77b4", alpha=0.35, label="relevant bounds")
        ax.scatter(xs, lowers, color="#1f77b4", zorder=3, label="NDR (relevant lower bound)")
        fields = repeat_fields(result)
        ci = fields.ndr_ci
        ndr = next((r.value_pps for r in result.results if r.tolerance == 0), None)
        if ci is not None:
            level = fields.ndr_ci_level
            ax.axhspan(ci[0], ci[1], color="#ff7f0e", alpha=0.15,
                       label=f"CI of the median ({level:.0%})" if level is not None else "CI")
        if ndr is not None:
            ax.axhline(ndr, color="#ff7f0e", linestyle="--", label="median NDR")
        ax.set_xticks(xs)
        finish_axes(ax, "repeat", "packets per second", _title(campaign, result))
    hide_unused(axes, len(searches))
    legend_once(fig, flat)
    return fig


def _plot_search(ax: object, result: SearchResult) -> None:
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    for mode, marker in (("warm", "o"), ("cold", "s")):
        pts = [t for t in result.trials if t.mode == mode and t.waterfall is not None]
        if pts:
            ax.scatter([t.value for t in pts], [t.waterfall.loss_ratio * 100 for t in pts if t.waterfall],
                       marker=marker, color="#333", label=f"{mode} trial", zorder=3)
    limited = [t for t in result.trials if t.sender_limited and t.waterfall is not None]
    if limited:
        ax.scatter([t.value for t in limited], [t.waterfall.loss_ratio * 100 for t in limited if t.waterfall],
                   marker="x", color="#d62728", label="sender-limited", zorder=4)
    behind = [t for t in result.trials if t.fell_behind and t.waterfall is not None]
    if behind:
        ax.scatter([t.value for t in behind], [t.waterfall.loss_ratio * 100 for t in behind if t.waterfall],
                   marker="D", facecolors="none", edgecolors="#d62728", s=70,
                   label="fell behind (a backlog when the replay ended)", zorder=4)
    ver = [t for t in result.verification if t.waterfall is not None]
    if ver:
        ax.scatter([t.value for t in ver], [t.waterfall.loss_ratio * 100 for t in ver if t.waterfall], marker="*",
                   s=120, color="#ff7f0e", label=f"verification ({result.verification[0].duration_s:g} s)", zorder=5)
    for i, r in enumerate(result.results):
        colour = TOLERANCE_COLOURS[i % len(TOLERANCE_COLOURS)]
        name = "NDR" if r.tolerance == 0 else f"PDR {r.tolerance:g}"
        if r.bracket is not None:
            ax.axvspan(r.bracket[0], r.bracket[1], color=colour, alpha=0.25, label=f"{name} bracket")
        if r.value is not None:
            ax.axvline(r.value, color=colour, linewidth=1.2, linestyle="--", label=f"{name} = {r.value:,.4g} {result.unit}")
    if result.sender_ceiling_pps and result.axis == "rate":
        ax.axvline(result.sender_ceiling_pps, color="#d62728", linewidth=1, linestyle=":", label="sender ceiling")


def _xlabel(result: SearchResult) -> str:
    return {"rate": "offered load (packets per second, all replayers)", "replayers": "replayers",
            "cpus": "sensor CPU allocation (cores)"}[result.axis]


def _title(campaign: Campaign, result: SearchResult) -> str:
    try:
        p = campaign.case(result.case_id).params
    except KeyError:
        return result.case_id
    bits = [p.setup, trace_label(p.trace), f"{p.replayers}X"] + ([variant(p)] if variant(p) else [])
    return ", ".join(bits)


def waterfall_figure(rows: Sequence[CaseResult]) -> Figure | None:
    """Stacked bars per case: where the sent packets went, in percent of sent."""
    rows = [r for r in rows if r.medians.get("sent_pkts")]
    if not rows:
        return None
    fig, axes = new_figure(1, 1, "Loss waterfall: where the sent packets went (median per case)")
    ax = axes[0][0]
    xs = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for key, label, colour in WATERFALL:
        values = np.array([max(0.0, float(r.medians.get(key) or 0.0)) / float(r.medians["sent_pkts"] or 1) * 100
                           for r in rows])
        if not values.any():
            continue
        ax.bar(xs, values, bottom=bottom, color=colour, label=label, width=0.7)
        bottom += values
    ax.set_xticks(xs, [_short(r) for r in rows], rotation=30, ha="right", fontsize=8)
    finish_axes(ax, "case", "% of the packets sent")
    legend_once(fig, [ax])
    return fig


def _short(r: CaseResult) -> str:
    p = r.params
    return f"{p.setup} {p.replayers}X {p.rate}" + (f" {variant(p)}" if variant(p) else "")


def recall_figure(rows: Sequence[CaseResult], colors: dict[str, str]) -> Figure | None:
    """Alert recall against the offline ground truth vs the load actually sent, per setup."""
    rows = [r for r in rows if r.medians.get("alert_recall") is not None and r.medians.get("sender_pps")]
    if not rows:
        return None
    fig, axes = new_figure(1, 1, "Detection under load: alert recall vs offered load (median, CI)")
    ax = axes[0][0]
    for setup in sorted({r.params.setup for r in rows}):
        pts = sorted((r for r in rows if r.params.setup == setup), key=lambda r: float(r.medians["sender_pps"] or 0))
        x = [float(r.medians["sender_pps"] or 0) for r in pts]
        y = [float(r.medians["alert_recall"] or 0) for r in pts]
        lo = [y_ - (r.cis.get("alert_recall") or (y_, y_))[0] for r, y_ in zip(pts, y)]
        hi = [(r.cis.get("alert_recall") or (y_, y_))[1] - y_ for r, y_ in zip(pts, y)]
        ax.errorbar(x, y, yerr=[np.clip(lo, 0, None), np.clip(hi, 0, None)], marker="o", capsize=4,
                    color=colors.get(setup, "#888"), label=setup)
    ax.set_ylim(0, 1.05)
    finish_axes(ax, "packets per second sent (all replayers)", "alert recall (live / offline, per signature)")
    ax.set_ylim(0, 1.05)
    legend_once(fig, [ax])
    return fig
