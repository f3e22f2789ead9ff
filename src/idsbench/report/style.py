"""Figure plumbing: consistent colours per setup, panel layout, labels, saving SVG + PNG.

Figures are built on matplotlib's object API (Figure + Agg canvas), never pyplot, so no global state.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from idsbench.plan import trace_label
from idsbench.store.schema import CaseParams, CaseResult
from idsbench.store.writers import write_figure

# Fixed colours for the known setups (same in every figure and every report); others get the rest.
SETUP_COLORS = {"baremetal": "#1f77b4", "container": "#ff7f0e", "container-vtap": "#2ca02c",
                "vm": "#d62728", "vm-vfio": "#9467bd"}
FALLBACK_COLORS = ("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
LINESTYLES = ("-", "--", ":", "-.")
PANEL_W, PANEL_H = 5.2, 3.3


def setup_colors(setups: Iterable[str]) -> dict[str, str]:
    out, spare = {}, iter(FALLBACK_COLORS * 4)
    for s in sorted(set(setups)):
        out[s] = SETUP_COLORS.get(s) or next(spare)
    return out


PanelKey = tuple[str, str, int]


def panel_key(row: CaseResult) -> PanelKey:
    """Cases that share a panel: same trace, rate and load; they differ by setup (and limits)."""
    return (row.params.trace, row.params.rate, row.params.replayers)


def panel_title(key: PanelKey, multi_trace: bool, multi_rate: bool) -> str:
    trace, rate, load = key
    parts = [f"{load}X load"]
    if multi_rate or rate != "recorded":
        parts.append(f"rate {rate}")
    if multi_trace:
        parts.append(trace_label(trace))
    return ", ".join(parts)


def variant(params: CaseParams) -> str:
    """The limits part of a case label (CPU and memory limits; the engine when not Suricata, the
    config overlay when not the default, the capture method when one was asked)."""
    bits = []
    if params.engine != "suricata":
        bits.append(params.engine)
    if params.config != "default":
        bits.append(Path(params.config).stem)
    if params.capture is not None:
        bits.append(params.capture)
    if params.cpus is not None:
        bits.append(f"{params.cpus:g} CPU")
    if params.memory is not None:
        bits.append(f"{params.memory} mem")
    return ", ".join(bits)


def grid(n: int, max_cols: int = 3) -> tuple[int, int]:
    cols = min(max(n, 1), max_cols)
    return math.ceil(max(n, 1) / cols), cols


def new_figure(rows: int, cols: int, title: str, *, sharex: bool = False) -> tuple[Figure, list[list[Axes]]]:
    fig = Figure(figsize=(max(PANEL_W * cols, 7.5), PANEL_H * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=sharex)
    fig.suptitle(title, fontsize=13, fontweight="bold")
    return fig, [list(r) for r in axes]


def finish_axes(ax: Axes, xlabel: str, ylabel: str, title: str | None = None) -> None:
    if title:
        ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))


def hide_unused(axes: list[list[Axes]], used: int) -> None:
    flat = [a for r in axes for a in r]
    for ax in flat[used:]:
        ax.set_visible(False)


def legend_once(fig: Figure, axes: Sequence[Axes]) -> None:
    """One legend for the whole figure, from the union of the panels' labelled artists."""
    seen: dict[str, Artist] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(list(seen.values()), list(seen.keys()), loc="outside lower center",
                   ncols=min(len(seen), 4), fontsize=9, frameon=False)


@dataclass(frozen=True)
class FigureFile:
    name: str
    title: str
    caption: str
    svg: Path
    png: Path

    def data_uri(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.read_bytes()).decode()


def save(fig: Figure, out_dir: Path, name: str, title: str, caption: str) -> FigureFile:
    with matplotlib.rc_context({"svg.hashsalt": name, "svg.fonttype": "path"}):
        svg, png = io.BytesIO(), io.BytesIO()
        fig.savefig(svg, format="svg", metadata={"Date": None})
        fig.savefig(png, format="png", dpi=110)
    svg_path, png_path = write_figure(out_dir, name, svg.getvalue(), png.getvalue())
    return FigureFile(name, title, caption, svg_path, png_path)
