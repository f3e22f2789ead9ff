"""How the host's speed drifted over the campaign: each sample's `host_speed` (the witness's work rate on
the sensor's CPUs relative to the campaign's median, analysis/sample.py) at the time it ran."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from idsbench.analysis.sample import host_speed, median_witness_rate
from idsbench.report.figures_search import _short
from idsbench.report.style import finish_axes, legend_once, new_figure
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult

MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")


def host_speed_figure(campaign: Campaign, rows: Sequence[CaseResult], colors: dict[str, str]) -> Figure | None:
    """One dot per sample (its replay's start, minutes into the campaign) at its host speed, per case;
    None when no sample has a witness figure."""
    median = median_witness_rate(s.summary for s in campaign.samples)
    points = [(s.case_id, s.summary.replay.start_unix, speed) for s in campaign.samples
              if s.summary.replay is not None and (speed := host_speed(s.summary, median)) is not None]
    if not points:
        return None
    t0 = min(t for _, t, _ in points)
    fig, axes = new_figure(1, 1, "Host speed on the sensor's CPUs over the campaign (1.0 = its median)")
    ax = axes[0][0]
    by_case = {r.case: r for r in rows}
    for i, case in enumerate(sorted({c for c, _, _ in points})):
        mine = sorted((t, v) for c, t, v in points if c == case)
        row = by_case.get(case)
        ax.plot([(t - t0) / 60 for t, _ in mine], [v for _, v in mine], linestyle="none",
                marker=MARKERS[i % len(MARKERS)], markersize=4,
                color=colors.get(row.params.setup, "#555555") if row else "#555555",
                label=_short(row) if row else case)
    ax.axhline(1.0, color="#888888", linestyle="--", linewidth=0.8)
    finish_axes(ax, "minutes since the first sample", "host speed (witness work rate / median)")
    legend_once(fig, [ax])
    fig.set_size_inches(6.4, 3.2)
    return fig
