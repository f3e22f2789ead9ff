"""The report's figure set: builds each figure, saves SVG + PNG, and says why a figure was skipped."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from matplotlib.figure import Figure

from idsbench.analysis import Campaign
from idsbench.report.figures_time import cumulative_figure, time_figure
from idsbench.report.style import FigureFile, save

MIB = 1024.0 * 1024.0


@dataclass
class FigureSet:
    files: list[FigureFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, out_dir: Path, name: str, title: str, caption: str,
            build: Callable[[], Figure | None], skipped: str) -> None:
        fig = build()
        if fig is None:
            self.notes.append(f"{title}: not drawn — {skipped}")
            return
        self.files.append(save(fig, out_dir, name, title, caption))


def build_figures(campaign: Campaign, rows: Sequence[dict[str, Any]], colors: dict[str, str],
                  out_dir: Path, *, baseline: str = "baremetal",
                  overhead_rows: Sequence[dict[str, Any]] = ()) -> FigureSet:
    figs = FigureSet()
    ok_rows = [r for r in rows if r["samples"]]
    no_monitor = "no sample has a usable monitor.csv"
    figs.add(out_dir, "sensor_cpu_time", "Sensor CPU over time",
             "CPU used by the sensor's cgroup; 100% = one fully used core.",
             lambda: time_figure(campaign, ok_rows, colors, source="monitor", column="sensor_cpu_pct",
                                 title="Sensor CPU over time (median, 95% CI)", ylabel="sensor CPU (% of one core)"),
             no_monitor)
    figs.add(out_dir, "sensor_mem_time", "Sensor memory over time",
             "Memory charged to the sensor's cgroup.",
             lambda: time_figure(campaign, ok_rows, colors, source="monitor", column="sensor_mem_bytes",
                                 title="Sensor memory over time (median, 95% CI)", ylabel="sensor memory (MiB)",
                                 scale=MIB),
             no_monitor)
    figs.add(out_dir, "host_cpu_time", "Host CPU over time per setup at each load",
             "CPU busy on the whole host, 0-100% over all CPUs (sender, sensor, kernel, isolation layer).",
             lambda: time_figure(campaign, ok_rows, colors, source="monitor", column="host_cpu_pct",
                                 title="Host CPU over time (median, 95% CI)", ylabel="host CPU (% of all CPUs)"),
             no_monitor)
    figs.add(out_dir, "packets_cumulative", "Cumulative captured, dropped and decoded packets and KiB decoded",
             "The sensor's own cumulative counters from its stats records.",
             lambda: cumulative_figure(campaign, ok_rows, colors), "no sample has a usable counters.csv")
    return figs
