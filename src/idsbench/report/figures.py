"""The report's figure set: builds each figure, saves SVG + PNG, and says why a figure was skipped."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.figure import Figure

from idsbench.analysis.overhead import Overhead, overhead_note
from idsbench.analysis.stats import median
from idsbench.report.figures_host import host_speed_figure
from idsbench.report.figures_load import overhead_figure, throughput_figure, vs_load_figure
from idsbench.report.figures_phases import phases_figure
from idsbench.report.figures_search import recall_figure, repeats_figure, search_figure, waterfall_figure
from idsbench.report.figures_sender import fidelity_figure, lateness_figure
from idsbench.report.figures_time import cumulative_figure, time_figure
from idsbench.report.fmt import ci_label
from idsbench.report.style import FigureFile, save
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult

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


def build_figures(campaign: Campaign, rows: Sequence[CaseResult], colors: dict[str, str],
                  out_dir: Path, *, baseline: str = "baremetal",
                  overhead_rows: Sequence[Overhead] = ()) -> FigureSet:
    figs = FigureSet()
    ok_rows = [r for r in rows if r.samples]
    ci = ci_label(r.ci_level for r in ok_rows)
    no_monitor = "no sample has a usable monitor.csv"
    figs.add(out_dir, "sensor_cpu_time", "Sensor CPU over time",
             "CPU used by the sensor's cgroup; 100% = one fully used core.",
             lambda: time_figure(campaign, ok_rows, colors, source="monitor", column="sensor_cpu_pct",
                                 title=f"Sensor CPU over time (median, {ci})", ylabel="sensor CPU (% of one core)"),
             no_monitor)
    figs.add(out_dir, "sensor_mem_time", "Sensor memory over time",
             "Memory charged to the sensor's cgroup.",
             lambda: time_figure(campaign, ok_rows, colors, source="monitor", column="sensor_mem_bytes",
                                 title=f"Sensor memory over time (median, {ci})", ylabel="sensor memory (MiB)",
                                 scale=MIB),
             no_monitor)
    figs.add(out_dir, "host_cpu_time", "Host CPU over time per setup at each load",
             "CPU busy on the whole host, 0-100% over all CPUs (sender, sensor, kernel, isolation layer).",
             lambda: time_figure(campaign, ok_rows, colors, source="monitor", column="host_cpu_pct",
                                 title=f"Host CPU over time (median, {ci})", ylabel="host CPU (% of all CPUs)"),
             no_monitor)
    figs.add(out_dir, "packets_cumulative", "Cumulative captured, dropped and decoded packets and KiB decoded",
             "The sensor's own cumulative counters from its stats records.",
             lambda: cumulative_figure(campaign, ok_rows, colors), "no sample has a usable counters.csv")
    figs.add(out_dir, "host_speed_time", "Host speed over the campaign",
             "How fast the sensor's CPUs ran anything while each sample's sensor worked: the host-speed "
             "witness's work rate (a fixed piece of work every 0.2 s) over the sample's processing span, "
             "relative to the campaign's median. The rows' sensor_us_per_pkt_norm is CPU per packet times "
             "this: what it would have been at the median speed.",
             lambda: host_speed_figure(campaign, rows, colors),
             "no sample recorded the host-speed witness (summaries before it, or samples without a replay)")
    _more_figures(figs, campaign, ok_rows, colors, out_dir, baseline, overhead_rows)
    return figs


def slowest_setup(rows: Sequence[CaseResult]) -> str | None:
    """The setup with the highest median host CPU over its cases (None with fewer than 2 setups)."""
    by_setup: dict[str, list[float]] = {}
    for r in rows:
        value = r.medians.get("host_cpu_pct")
        if value is not None:
            by_setup.setdefault(r.params.setup, []).append(float(value))
    if len(by_setup) < 2:
        return None
    return max(by_setup, key=lambda s: median(by_setup[s]) or 0.0)


def _more_figures(figs: FigureSet, campaign: Campaign, rows: Sequence[CaseResult],
                  colors: dict[str, str], out_dir: Path, baseline: str,
                  overhead_rows: Sequence[Overhead]) -> None:
    slow = slowest_setup(rows)
    ci = ci_label(r.ci_level for r in rows)
    figs.add(out_dir, "host_cpu_time_without_slowest",
             "Host CPU over time without the slowest setup" + (f" ({slow})" if slow else ""),
             f"As above without {slow}, the setup with the highest host CPU, so the others can be told apart."
             if slow else "",
             lambda: time_figure(campaign, [r for r in rows if r.params.setup != slow], colors, source="monitor",
                                 column="host_cpu_pct", title=f"Host CPU over time without {slow} (median, {ci})",
                                 ylabel="host CPU (% of all CPUs)") if slow else None,
             "the campaign has a single setup, so there is no slowest one to leave out")
    figs.add(out_dir, "drop_ratio_load", "Drop ratio vs load",
             "Kernel drops in percent of captured packets (capture.kernel_drops / capture.kernel_packets); "
             f"error bars = {ci} of the median.",
             lambda: vs_load_figure(rows, colors, key="drop_ratio", title=f"Drop ratio vs load (median, {ci})",
                                    ylabel="dropped (% of captured)", scale=0.01),
             "no case has counters")
    figs.add(out_dir, "sensor_cpu_load", "Sensor CPU vs load",
             f"Mean sensor CPU over the replay window; 100% = one core; error bars = {ci} of the median.",
             lambda: vs_load_figure(rows, colors, key="sensor_cpu_pct", title=f"Sensor CPU vs load (median, {ci})",
                                    ylabel="sensor CPU (% of one core)"),
             "no case has resource figures")
    figs.add(out_dir, "overhead_vs_baseline", f"Overhead of each setup vs {baseline}",
             f"Contender minus {baseline} at the same trace, rate, load and limits; whiskers = bootstrap "
             f"{ci_label(m.level for o in overhead_rows for m in o.metrics.values())} (the level the samples reach).",
             lambda: overhead_figure(overhead_rows, colors, baseline),
             overhead_note([r.params.setup for r in rows], baseline))
    figs.add(out_dir, "sent_rate_time", "Packets sent per second over time (measured)",
             "Transmitted packets per second on the sender's end of the wire (monitor sender_tx_pkts), "
             "per sample between checkpoints, then the median across samples.",
             lambda: time_figure(campaign, rows, colors, source="monitor", column="sender_tx_pkts",
                                 title=f"Packets sent per second, measured at the sender (median, {ci})",
                                 ylabel="packets per second", per_second=True),
             "no monitor.csv has a sender_tx_pkts column")
    figs.add(out_dir, "sender_fidelity", "Sender fidelity: requested vs achieved rate",
             "Packets per second the replayers were asked for (dashed: the sender's schedule, or the case's "
             "rate and trace) and what they sent (solid: the sender's own count; for tcpreplay the sender "
             "interface's), summed over replayers, median over ok samples. A gap is load the sensor never got.",
             lambda: fidelity_figure(campaign, rows, colors), "no sample recorded its replay")
    figs.add(out_dir, "sender_lateness", "Sender lateness",
             "How late packets left against their absolute deadlines (median, 99th percentile, worst; the "
             "worst replayer of each sample, median over samples). Only senders that keep a schedule report it.",
             lambda: lateness_figure(campaign, rows),
             "no sample's sender reported lateness (tcpreplay does not keep an absolute schedule)")
    figs.add(out_dir, "search_loss_load", "Search: loss vs offered load",
             "Every trial of each searched case: its loss over every drop point of the waterfall at the load it "
             "offered (warm trials on one sensor, cold on a fresh one, sender-limited marked), each tolerance's "
             "final bracket and result, the verification and the sender's ceiling.",
             lambda: search_figure(campaign), "the campaign holds no search (`idsbench search`)")
    figs.add(out_dir, "sample_phases", "Where a sample's time goes",
             "Per case, the median seconds of each phase of a sample (setup, sensor start, ready: the engine's "
             "start and rule load, replay, drain, stop, teardown, analysis); the label is the median wall time "
             "beyond the replay (overhead_s), the fixed cost every sample pays.",
             lambda: phases_figure(rows), "no sample recorded its timeline (summaries before schema 3)")
    figs.add(out_dir, "search_repeats", "Search repeats side by side",
             "Each whole search of a case (search.repeats, a fresh sensor each): its NDR's relevant lower bound "
             "(dot) and relevant upper bound (bar top), the median NDR (dashed) and the CI of the median (band).",
             lambda: repeats_figure(campaign), "no searched case has repeats")
    figs.add(out_dir, "loss_waterfall", "Loss waterfall per case",
             "Where the packets sent went, in percent of sent: decoded, still unprocessed at stop, dropped at "
             "the capture ring, in the softnet backlog, by the NIC, lost on the wire, by the sender, or "
             "unaccounted (a drop point the host cannot see, e.g. inside a VM).",
             lambda: waterfall_figure(rows), "no case has counters")
    figs.add(out_dir, "alert_recall_load", "Alert recall vs load",
             "Per signature, the live alerts over what the same engine, rules and config raise reading every "
             "packet offline (the ground truth); a sensor that drops misses detections.",
             lambda: recall_figure(rows, colors),
             "no case has an offline ground truth (one loop, distinct flows or one replayer, "
             "sensor.ground_truth = true)")
    figs.add(out_dir, "trace_throughput", "Trace throughput as sent",
             "Packets per second of each trace (summary trace.per_second) times the number of replayers: "
             "what the sender puts on the wire at the recorded rate.",
             lambda: throughput_figure(campaign, rows),
             "the sample summaries carry no per-second trace profile (trace.per_second)")
