"""Per-sample figures, derived at analysis time from the summary and the sample's raw series.

Nothing here is stored by the runner: resources over the replay window come from monitor.csv,
the time to stable from counters.csv, ratios from the counters. So re-running `idsbench report`
on an old campaign picks up any fix made here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from idsbench import cpucost
from idsbench.accounting import waterfall_of
from idsbench.analysis.detection import recall
from idsbench.analysis.fidelity import worst_lateness
from idsbench.store.layout import COUNTERS_FILE, MONITOR_FILE
from idsbench.store.reader import SampleRecord
from idsbench.store.schema import CASE_METRICS, GroundTruth, SampleSummary
from idsbench.store.series_file import SeriesRows, series_rows

CSV_TIME_RESOLUTION_S = 0.0005  # monitor.csv stamps are rounded to the millisecond


@dataclass(frozen=True)
class Resources:
    """Time-weighted means over the window, and the peak sensor memory of the whole sample."""

    sensor_cpu_pct: float = 0.0     # % of one core
    host_cpu_pct: float = 0.0       # % of all the host's CPUs
    sender_cpu_pct: float = 0.0     # the replayers' cgroup, % of one core
    host_cpus: int = 1
    sensor_rss_peak_bytes: int = 0
    rows_in_window: int = 0
    host_mem_bytes: int | None = None         # a VM: qemu's peak resident memory (vm_qemu_rss_bytes)
    host_mem_locked_bytes: int | None = None  # a VM: qemu's peak locked + pinned memory (vm_qemu_locked_bytes)

    @property
    def sensor_host_cpu_pct(self) -> float:
        """Host CPU minus the sender's (% of all CPUs): what a separate sensor host would have used."""
        return round(max(0.0, self.host_cpu_pct - self.sender_cpu_pct / max(1, self.host_cpus)), 3)


def resources_in_window(monitor_csv: Path, t0: float, t1: float) -> Resources:
    """Time-weighted mean CPU over the rows that cover (t0, t1], peak sensor memory of the sample.

    A row's CPU percentages cover the interval since the previous row, so a row stamped at t0
    (the runner writes one at replay start) describes what came before and is left out.
    """
    sums = {"sensor_cpu_pct": 0.0, "host_cpu_pct": 0.0, "sender_cpu_pct": 0.0}
    weight = 0.0
    rows = peak = 0
    vm_rss: int | None = None
    vm_locked: int | None = None
    host_cpus = 1
    previous: float | None = None
    try:
        series = series_rows(monitor_csv)
    except FileNotFoundError:
        series = SeriesRows((), ())
    host_cpus = max(1, sum(1 for c in series.header if c.startswith("cpu") and c.endswith("_pct")))
    for row in series.rows:
        t = _float(row.get("t_unix"))
        peak = max(peak, _int(row.get("sensor_mem_peak_bytes")), _int(row.get("sensor_mem_bytes")))
        if row.get("vm_qemu_rss_bytes"):
            vm_rss = max(vm_rss or 0, _int(row.get("vm_qemu_rss_bytes")))
        if row.get("vm_qemu_locked_bytes"):
            vm_locked = max(vm_locked or 0, _int(row.get("vm_qemu_locked_bytes")))
        if previous is not None and t0 + CSV_TIME_RESOLUTION_S < t <= t1 + CSV_TIME_RESOLUTION_S:
            span = t - max(previous, t0)
            for key in sums:
                sums[key] += _float(row.get(key)) * span
            weight += span
            rows += 1
        previous = t

    def mean(key: str) -> float:
        return round(sums[key] / weight, 3) if weight > 0 else 0.0

    return Resources(sensor_cpu_pct=mean("sensor_cpu_pct"), host_cpu_pct=mean("host_cpu_pct"),
                     sender_cpu_pct=mean("sender_cpu_pct"), host_cpus=host_cpus, sensor_rss_peak_bytes=peak,
                     rows_in_window=rows, host_mem_bytes=vm_rss, host_mem_locked_bytes=vm_locked)


def stable_after(counters_csv: Path, replay_start_unix: float) -> float | None:
    """Seconds from replay start to the first stats record showing the final decoded count."""
    times: list[float] = []
    decoded: list[float] = []
    try:
        for row in series_rows(counters_csv).rows:
            times.append(_float(row.get("t_unix")))
            decoded.append(_float(row.get("decoded_pkts")))
    except FileNotFoundError:
        return None
    if not times:
        return None
    final = decoded[-1]
    for t, d in zip(times, decoded):
        if d >= final:
            return round(max(0.0, t - replay_start_unix), 3)
    return None


def window(sample: SampleRecord, settle_s: float) -> tuple[float, float] | None:
    """(replay start, sensor stop) — the span resources are averaged over; None without a replay."""
    replay = sample.summary.replay
    if replay is None:
        return None
    end = sample.summary.sensor_stop_unix or replay.end_unix + settle_s
    return replay.start_unix, max(end, replay.end_unix)


METRICS = CASE_METRICS  # the figures a case takes medians of (named in the results schema)


@dataclass(frozen=True)
class SampleFigures:
    """Every per-sample number behind a case median (DESIGN.md's result keys)."""

    trace_pkts: float
    sent_pkts: float
    captured_pkts: float
    dropped_pkts: float
    decoded_pkts: float
    decoded_bytes: float
    alerts: float
    drop_ratio: float
    sensor_cpu_pct: float
    sensor_rss_peak_bytes: float
    host_cpu_pct: float
    flows: float
    stable_after_s: float | None
    decode_ratio: float | None
    sender_cpu_pct: float = 0.0
    sensor_host_cpu_pct: float = 0.0
    sender_pps: float | None = None            # achieved, summed over replayers
    sender_rate_ratio: float | None = None     # achieved / requested (None for topspeed)
    sender_lateness_p99_ms: float | None = None  # worst replayer's p99 lateness (native sender)
    loss_sender_pkts: float | None = None
    loss_wire_pkts: float | None = None
    loss_nic_pkts: float | None = None
    loss_softnet_pkts: float | None = None
    loss_capture_pkts: float | None = None
    unprocessed_pkts: float | None = None
    unaccounted_pkts: float | None = None
    bypassed_pkts: float | None = None          # dropped by design: packets of bypassed flows (idsbench.bypass)
    alert_recall: float | None = None
    alerts_extra: float | None = None
    overhead_s: float | None = None            # wall time beyond the replay (the sample's fixed cost)
    sensor_us_per_pkt: float | None = None      # the sensor's CPU µs per processed packet (its cgroup)
    sensor_us_per_pkt_net: float | None = None  # … with its idle housekeeping over the span taken out (cpucost.NET)
    sensor_instr_per_pkt: float | None = None   # instructions per packet (None without a PMU)
    sensor_cycles_per_pkt: float | None = None  # cycles per packet (None without a PMU)
    host_mem_bytes: float | None = None         # a VM: qemu's peak resident memory on the host
    host_mem_locked_bytes: float | None = None  # a VM: qemu's peak locked + pinned memory (VFIO pins it all)
    host_speed: float | None = None             # the witness's work rate / the campaign's median (1.0 = median)
    sensor_us_per_pkt_norm: float | None = None  # sensor_us_per_pkt x host_speed: at the campaign's median speed

    def get(self, name: str) -> float | None:
        value: float | None = getattr(self, name)
        return value


def host_speed(summary: SampleSummary, median_rate: float | None) -> float | None:
    """How fast the host ran the sensor's CPUs in this sample: the witness's work rate over the sensor's
    processing span relative to the campaign's median (1.0 = median; 1.05 = 5% faster). None without a
    witness figure."""
    w = summary.witness
    if w is None or w.rate is None or not median_rate:
        return None
    return round(w.rate / median_rate, 5)


def median_witness_rate(summaries: Iterable[SampleSummary]) -> float | None:
    """The campaign's median witness work rate over `summaries` (those that have one)."""
    rates = sorted(s.witness.rate for s in summaries if s.witness is not None and s.witness.rate)
    if not rates:
        return None
    mid = len(rates) // 2
    return rates[mid] if len(rates) % 2 else (rates[mid - 1] + rates[mid]) / 2


def sample_figures(sample: SampleRecord, settle_s: float, truth: GroundTruth | None = None,
                   median_rate: float | None = None) -> SampleFigures:
    """`median_rate`: the campaign's median witness rate (`median_witness_rate`), for `host_speed`."""
    s = sample.summary
    c = s.sensor.counters
    sent = float(s.replay.sent_pkts) if s.replay else 0.0
    span = window(sample, settle_s)
    res = resources_in_window(sample.path / MONITOR_FILE, *span) if span else \
        resources_in_window(sample.path / MONITOR_FILE, 0.0, math.inf)
    stable = stable_after(sample.path / COUNTERS_FILE, span[0]) if span else None
    us_per_pkt = s.cost.us_per_pkt if s.cost else None
    speed = host_speed(s, median_rate)
    return SampleFigures(
        trace_pkts=float(s.trace.packets), sent_pkts=sent, captured_pkts=float(c.captured_pkts),
        dropped_pkts=float(c.dropped_pkts), decoded_pkts=float(c.decoded_pkts),
        decoded_bytes=float(c.decoded_bytes), alerts=float(c.alerts),
        drop_ratio=c.dropped_pkts / c.captured_pkts if c.captured_pkts > 0 else 0.0,
        sensor_cpu_pct=res.sensor_cpu_pct, sensor_rss_peak_bytes=float(res.sensor_rss_peak_bytes),
        host_cpu_pct=res.host_cpu_pct, flows=float(c.flows), stable_after_s=stable,
        decode_ratio=c.decoded_pkts / sent if sent > 0 else None,
        sender_cpu_pct=res.sender_cpu_pct, sensor_host_cpu_pct=res.sensor_host_cpu_pct,
        overhead_s=s.overhead_s, **_sender_figures(s), **_waterfall_figures(s), **_recall_figures(s, truth),
        sensor_us_per_pkt=us_per_pkt, sensor_us_per_pkt_net=_net_us_per_pkt(s), host_speed=speed,
        sensor_us_per_pkt_norm=None if us_per_pkt is None or speed is None else round(us_per_pkt * speed, 4),
        sensor_instr_per_pkt=s.cost.instr_per_pkt if s.cost else None,
        sensor_cycles_per_pkt=s.cost.cycles_per_pkt if s.cost else None,
        host_mem_bytes=None if res.host_mem_bytes is None else float(res.host_mem_bytes),
        host_mem_locked_bytes=None if res.host_mem_locked_bytes is None else float(res.host_mem_locked_bytes),
    )


def _net_us_per_pkt(s: SampleSummary) -> float | None:
    """The CPU per packet without the sensor's fixed housekeeping: its idle rate before the replay × the span
    taken out (idsbench.cpucost "pre-idle"); None where the idle window was not read."""
    if s.cost is None or s.cost.definition != cpucost.USED or s.cost.pre_idle_cores is None:
        return None
    net = cpucost.us_per_pkt(s.cost, cpucost.NET)
    return None if net is None else round(net, 4)


def _waterfall_figures(s: SampleSummary) -> dict[str, float | None]:
    if s.replay is None:
        return {}
    wf = waterfall_of(s.replay.sent_pkts, s.wire, s.sensor.counters, s.invisible)
    return {"loss_sender_pkts": wf.loss_sender_pkts, "loss_wire_pkts": wf.loss_wire_pkts,
            "loss_nic_pkts": wf.loss_nic_pkts, "loss_softnet_pkts": wf.loss_softnet_pkts,
            "loss_capture_pkts": wf.loss_capture_pkts, "unprocessed_pkts": wf.unprocessed_pkts,
            "unaccounted_pkts": wf.unaccounted_pkts, "bypassed_pkts": wf.bypassed_pkts}


def _recall_figures(s: SampleSummary, truth: GroundTruth | None) -> dict[str, float | None]:
    if truth is None:
        return {}
    r = recall(s.sensor.alerts_by_sid, truth.alerts_by_sid, exclude=truth.excluded_sids)
    return {"alert_recall": r.recall, "alerts_extra": float(r.extra)}


def _sender_figures(s: SampleSummary) -> dict[str, float | None]:
    replay = s.replay
    if replay is None or not replay.replayers:
        return {}
    pps = sum(r.pps for r in replay.replayers)
    requested = sum(r.requested_pps for r in replay.replayers if r.requested_pps)
    worst = worst_lateness(replay)
    return {"sender_pps": round(pps, 3),
            "sender_rate_ratio": round(pps / requested, 5) if requested else None,
            "sender_lateness_p99_ms": worst.p99_ms if worst else None}


def _float(text: str | None) -> float:
    try:
        value = float(text) if text else 0.0
    except ValueError:
        return 0.0
    return 0.0 if math.isnan(value) else value


def _int(text: str | None) -> int:
    return int(_float(text))
