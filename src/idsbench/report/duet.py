"""The report's Duet section: each pair's ratio b/a per sample with the CI over samples, the verdict,
the A/A calibration (the position effect the swaps cancel), and the per-second ratio series."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from idsbench.analysis.duet import DuetResult, duet_results
from idsbench.analysis.effect import describe
from idsbench.report.duet_out import cell_label, search_line
from idsbench.report.fmt import number
from idsbench.report.style import finish_axes, new_figure, save
from idsbench.store.reader import Campaign


def _ratio(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{ci[0]:.4f}–{ci[1]:.4f}]"


def side_label(r: DuetResult, side: str) -> str:
    value = r.a_value if side == "a" else r.b_value
    return f"{side}: {value}" if value is not None else f"{side} (A/A)"


def calibration_text(r: DuetResult) -> str:
    """What the swaps say about the method's own asymmetry (slot 1 / slot 0 cost)."""
    if r.position is None:
        return "position effect: not measured (it needs samples in both slot orders, i.e. 2 or more)"
    text = (f"position effect (slot 1 / slot 0 cost, from the swapped and unswapped samples): {r.position:.4f} "
            f"({(r.position - 1) * 100:+.2f}%), cancelled in the ratio by the swaps")
    if r.axis is None:
        width = (r.ratio_ci[1] - r.ratio_ci[0]) * 100 if r.ratio_ci else None
        text += (f"; this A/A duet's ratio CI spans {width:.2f} percentage points: the smallest difference "
                 f"this method resolves here" if width is not None else "")
    else:
        text += "; an A/A duet (mode = \"duet\" with every axis single-valued) measures the method's resolution"
    return text


def seconds_figure(r: DuetResult) -> Figure | None:
    """One line per sample: the per-second ratio b/a over the replay, with the pair's median ratio."""
    series = [s for s in r.samples if s.seconds]
    if not series:
        return None
    fig, axes = new_figure(1, 1, f"Duet {r.pair_id}: per-second cost ratio b/a")
    ax = axes[0][0]
    for s in series:
        ax.plot(range(1, len(s.seconds) + 1), s.seconds, marker="o", markersize=2, linewidth=0.8,
                label=f"s{s.index}{' (swapped)' if s.swapped else ''}")
    if r.ratio is not None:
        ax.axhline(r.ratio, color="black", linestyle="--", linewidth=1, label="median of samples")
    ax.axhline(1.0, color="#888", linewidth=0.6)
    finish_axes(ax, "second of the replay", "CPU per packet, b / a")
    ax.legend(fontsize=7, ncol=3)
    return fig


def _verdict_text(r: DuetResult) -> str:
    if r.verdict == "emulated":
        return "emulated (a side ran under TCG: its figures are shown, never judged)"
    if r.verdict != (r.effect.verdict if r.effect.verdict != "n/a" else "inconclusive"):
        return (f"inconclusive: the CI's half-width ±{(r.half_width or 0):.2%} is wider than the precision asked "
                f"(±{(r.precision or 0):.2%}); ~{r.samples_needed} samples would settle it")
    return describe(r.effect).replace(" per side", "")


def duet_section(campaign: Campaign, figures_dir: Path) -> list[dict[str, Any]]:  # Any: a Jinja template's view
    """The template's view of every pair (empty for a single-mode campaign)."""
    out = []
    for r in duet_results(campaign):
        fig = seconds_figure(r)
        image = save(fig, figures_dir, f"duet_seconds_{r.pair_id}", "per-second ratio", "") if fig else None
        rows = [{"sample": f"s{s.index}", "swapped": "yes" if s.swapped else "no", "status": s.status,
                 "exact": "yes" if s.exact else "no", "a": number(s.a_us_per_pkt, 3), "b": number(s.b_us_per_pkt, 3),
                 "ratio": _ratio(s.ratio), "seconds": f"{_ratio(s.second_median)} {_ci(s.second_ci)} ({len(s.seconds)} s)"}
                for s in r.samples]
        out.append({
            "pair": r.pair_id, "axis": r.axis or "none (A/A)", "a": side_label(r, "a"), "b": side_label(r, "b"),
            "a_case": r.a_case, "b_case": r.b_case, "ratio": _ratio(r.ratio), "ci": _ci(r.ratio_ci),
            "level": f"{r.ci_level:.1%}", "verdict": _verdict_text(r), "n": r.n, "exact": r.exact,
            "samples": rows, "calibration": calibration_text(r), "placement": r.placement, "mirror": r.mirror,
            "cell": cell_label(r.cell), "mem_ratio": _ratio(r.mem_ratio),
            "loss_diff": ("–" if r.loss_diff_pp is None else f"{r.loss_diff_pp:+.3f} pp")
                         + (f" [{r.loss_diff_ci[0]:+.3f}, {r.loss_diff_ci[1]:+.3f}]" if r.loss_diff_ci else ""),
            "unattributed": "–" if r.unattributed_us_per_pkt is None else f"{r.unattributed_us_per_pkt:.3f} µs",
            "figure": image.data_uri() if image else None, "search": search_line(r).split(" search: ", 1)[1] if r.search else None})
    return out
