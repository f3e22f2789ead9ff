"""Figures across load levels and setups: metric vs load, overhead vs baseline, trace throughput."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from idsbench.analysis.overhead import Overhead
from idsbench.plan import trace_label
from idsbench.report.fmt import ci_label
from idsbench.report.style import LINESTYLES, finish_axes, grid, hide_unused, legend_once, new_figure, variant
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult

MIB = 1024.0 * 1024.0
# (overhead metric, panel y label, scale of diff, use percent instead of diff)
OVERHEAD_PANELS = (("host_cpu_pct", "extra host CPU (percentage points)", 1.0, False),
                   ("sensor_rss_peak_bytes", "extra sensor memory (MiB)", MIB, False),
                   ("drop_ratio", "extra drops (percentage points of captured)", 0.01, False),
                   ("decode_ratio", "decode rate change (% of baseline)", 1.0, True))


def _series_key(row: CaseResult) -> tuple[str, str]:
    return row.params.setup, variant(row.params)


def vs_load_figure(rows: Sequence[CaseResult], colors: dict[str, str], *, key: str, title: str,
                   ylabel: str, scale: float = 1.0) -> Figure | None:
    """x = load (replayers), y = median with CI error bars; one panel per (trace, rate)."""
    rows = [r for r in rows if r.medians.get(key) is not None]
    if not rows:
        return None
    panels: dict[tuple[str, str], list[CaseResult]] = {}
    for r in rows:
        panels.setdefault((r.params.trace, r.params.rate), []).append(r)
    nrows, ncols = grid(len(panels), 2)
    fig, axes = new_figure(nrows, ncols, title)
    flat = [a for r in axes for a in r]
    for ax, ((trace, rate), members) in zip(flat, panels.items()):
        variants = sorted({variant(r.params) for r in members})
        lines: dict[tuple[str, str], list[CaseResult]] = {}
        for r in sorted(members, key=lambda r: r.params.replayers):
            lines.setdefault(_series_key(r), []).append(r)
        for (setup, var), pts in sorted(lines.items()):
            x = np.array([p.params.replayers for p in pts])
            values = [float(p.medians[key] or 0.0) for p in pts]
            y = np.array([v / scale for v in values], dtype=float)
            ci = [p.cis.get(key) or (v, v) for p, v in zip(pts, values)]
            err = np.array([[yv - c[0] / scale for yv, c in zip(y, ci)], [c[1] / scale - yv for yv, c in zip(y, ci)]])
            label = f"{setup} ({var})" if len(variants) > 1 and var else setup
            ax.errorbar(x, y, yerr=np.clip(err, 0, None), color=colors[setup], marker="o", capsize=4,
                        linestyle=LINESTYLES[variants.index(var) % len(LINESTYLES)], label=label)
        loads = sorted({r.params.replayers for r in members})
        ax.set_xticks(loads, [f"{n}X" for n in loads])
        finish_axes(ax, "load (parallel tcpreplay processes)", ylabel, f"{trace_label(trace)}, rate {rate}")
    hide_unused(axes, len(panels))
    legend_once(fig, flat)
    return fig


def overhead_figure(over: Sequence[Overhead], colors: dict[str, str], baseline: str) -> Figure | None:
    """Grouped bars: per load, one bar per contender setup; whiskers = the bootstrap CI at the level the
    samples reach."""
    if not over:
        return None
    level = ci_label(m.level for o in over for m in o.metrics.values())
    fig, axes = new_figure(2, 2, f"Overhead of each setup vs {baseline} (difference of medians, bootstrap {level})")
    flat = [a for r in axes for a in r]
    keys = sorted({(o.setup, variant(o.contender)) for o in over})
    loads = sorted({o.contender.replayers for o in over})
    width = 0.8 / max(len(keys), 1)
    for ax, (metric, ylabel, scale, pct) in zip(flat, OVERHEAD_PANELS):
        for i, (setup, var) in enumerate(keys):
            xs: list[float] = []
            ys: list[float] = []
            errs: list[list[float]] = [[], []]
            for o in over:
                if (o.setup, variant(o.contender)) != (setup, var):
                    continue
                m = o.metrics[metric]
                value, ci = (m.pct, m.pct_ci) if pct else (m.diff, m.diff_ci)
                if value is None:
                    continue
                v = value if pct else value / scale
                lo, hi = (ci if ci else (value, value))
                lo, hi = (lo, hi) if pct else (lo / scale, hi / scale)
                xs.append(loads.index(o.contender.replayers) + (i - (len(keys) - 1) / 2) * width)
                ys.append(v)
                errs[0].append(max(v - lo, 0))
                errs[1].append(max(hi - v, 0))
            label = f"{setup} ({var})" if var and len({k[1] for k in keys}) > 1 else setup
            ax.bar(xs, ys, width=width * 0.95, color=colors.get(setup, "#888"), label=label,
                   yerr=errs, capsize=3, ecolor="#333")
        ax.axhline(0, color="#333", linewidth=0.8)
        ax.set_xticks(range(len(loads)), [f"{n}X" for n in loads])
        finish_axes(ax, "load (parallel tcpreplay processes)", ylabel)
    legend_once(fig, flat)
    return fig


def per_second_profile(campaign: Campaign, trace: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(seconds, packets per second) of a trace from any sample's summary `trace.per_second`."""
    for s in campaign.samples:
        if s.summary.case.trace != trace:
            continue
        points = s.summary.trace.per_second
        if points:
            return np.array([p.t for p in points]), np.array([float(p.packets) for p in points])
    return None


def throughput_figure(campaign: Campaign, rows: Sequence[CaseResult]) -> Figure | None:
    """Packets per second the sender sends at each load: trace profile × replayers (recorded rate)."""
    traces = sorted({r.params.trace for r in rows})
    found = {t: per_second_profile(campaign, t) for t in traces}
    profiles = {t: p for t, p in found.items() if p is not None}
    if not profiles:
        return None
    nrows, ncols = grid(len(profiles), 2)
    fig, axes = new_figure(nrows, ncols, "Trace throughput as sent (per second of the trace)")
    flat = [a for r in axes for a in r]
    shades = ("#444444", "#777777", "#999999", "#bbbbbb")
    for ax, (trace, (t, n)) in zip(flat, profiles.items()):
        loads = sorted({r.params.replayers for r in rows if r.params.trace == trace})
        for i, load in enumerate(loads):
            ax.step(t, n * load, where="post", color=shades[i % len(shades)],
                    linestyle=LINESTYLES[i % len(LINESTYLES)], label=f"{load}X load")
        rates = sorted({r.params.rate for r in rows if r.params.trace == trace})
        note = "" if rates == ["recorded"] else f"\n(profile at the recorded rate; replayed at {', '.join(rates)})"
        finish_axes(ax, "time in the trace (s)", "packets per second sent", trace_label(trace) + note)
    hide_unused(axes, len(profiles))
    legend_once(fig, flat)
    return fig
