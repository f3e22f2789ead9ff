"""The host's side of a VM or container per case (profile/hostside.py records it per sample): median
CPU seconds and share per category, and how closely the categories add up to the monitor's measure of
the same processes over the same window (monitor.csv: qemu's cgroup, or the runtime's processes)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench.analysis.stats import median
from idsbench.profile.categories import CATEGORIES, TITLES, Category
from idsbench.store.casefigures import HostSideFigures
from idsbench.store.layout import MONITOR_FILE
from idsbench.store.reader import Campaign, SampleRecord
from idsbench.store.schema import HostSideRecord
from idsbench.store.series_file import series_rows


@dataclass(frozen=True)
class SampleHostSide:
    index: int
    record: HostSideRecord
    window_s: float
    monitor_cpu_s: float | None    # the monitor's column over the profiled window

    @property
    def gap(self) -> float | None:
        """(categories' sum − monitor) / monitor: how far the categories are from the monitor's figure."""
        m = self.monitor_cpu_s
        return (self.record.cpu_s - m) / m if m else None


@dataclass(frozen=True)
class CategoryFigure:
    name: Category
    title: str
    cpu_s: float                   # median over the samples the case's figures come from
    share: float                   # median share, 0..1


@dataclass(frozen=True)
class CaseHostSide:
    case_id: str
    subject: str                   # qemu | runtime
    accel: str | None
    emulated: bool
    split: str                     # perf | threads (the samples the medians come from)
    samples: int                   # ok samples with a host-side profile
    used: int                      # of which the medians use (those split by perf, when any)
    cpu_s: float                   # median host-side CPU seconds over the window
    window_s: float                # median window
    categories: tuple[CategoryFigure, ...]
    monitor_cpu_s: float | None    # median monitor figure for the same processes and window
    monitor_column: str | None
    worst_gap: float | None        # the largest |gap| over the samples (signed)
    measured_by: str | None
    measured_cpu_s: float | None   # median of the profiler's own reading of that counter
    threads: tuple[tuple[str, str, float], ...]  # (name, role, median CPU s), busiest first
    notes: tuple[str, ...]


def monitor_cpu_s(rows: Sequence[tuple[float, float | None]], t0: float, t1: float) -> float | None:
    """CPU seconds a monitor column (% of one core per row, over the interval since the previous row)
    shows over (t0, t1]; a row straddling an edge counts for its part inside. None without a row."""
    total = covered = 0.0
    previous: float | None = None
    for t, pct in rows:
        if previous is not None and pct is not None:
            lo, hi = max(previous, t0), min(t, t1)
            if hi > lo:
                total += pct / 100.0 * (hi - lo)
                covered += hi - lo
        previous = t
    return total if covered > 0 else None


def _column(path: Path, column: str) -> list[tuple[float, float | None]]:
    out: list[tuple[float, float | None]] = []
    try:
        rows = series_rows(path).rows
    except FileNotFoundError:
        rows = ()
    for row in rows:
        try:
            t = float(row["t_unix"] or "")
        except (KeyError, ValueError):
            continue
        cell = row.get(column) or ""
        try:
            value: float | None = float(cell) if cell else None
        except ValueError:
            value = None
        out.append((t, None if value is None or math.isnan(value) else value))
    return out


def sample_host_side(sample: SampleRecord) -> SampleHostSide | None:
    p = sample.summary.profile
    if p is None or p.host is None:
        return None
    monitor = None
    if p.host.monitor_column and p.start_unix is not None and p.end_unix is not None:
        monitor = monitor_cpu_s(_column(sample.path / MONITOR_FILE, p.host.monitor_column), p.start_unix, p.end_unix)
    return SampleHostSide(sample.index, p.host, p.window_s, None if monitor is None else round(monitor, 3))


def samples_host_side(samples: Sequence[SampleRecord]) -> list[SampleHostSide]:
    return [h for s in samples if s.status == "ok" and (h := sample_host_side(s)) is not None]


def case_host_side(campaign: Campaign, case_id: str) -> CaseHostSide | None:
    return summarize(case_id, samples_host_side(campaign.samples_of(case_id)))


def summarize(case_id: str, found: list[SampleHostSide]) -> CaseHostSide | None:
    """Medians over the samples split by perf (all samples when none was)."""
    if not found:
        return None
    by_perf = [h for h in found if h.record.split == "perf"]
    used = by_perf or found
    first = used[0].record

    def cat(h: SampleHostSide, name: str) -> tuple[float, float]:
        c = next((c for c in h.record.categories if c.name == name), None)
        return (c.cpu_s, c.share) if c else (0.0, 0.0)

    categories = tuple(CategoryFigure(name, TITLES[name], round(median([cat(h, name)[0] for h in used]) or 0.0, 3),
                                      round(median([cat(h, name)[1] for h in used]) or 0.0, 4))
                       for name in CATEGORIES)
    gaps: list[float] = [g for h in found if (g := h.gap) is not None]
    worst = max(gaps, key=abs) if gaps else None
    threads: dict[tuple[str, str], list[float]] = {}
    for h in used:
        for t in h.record.threads:
            threads.setdefault((t.name, t.role), []).append(t.cpu_s)
    monitor = [h.monitor_cpu_s for h in used if h.monitor_cpu_s is not None]
    measured = [h.record.measured_cpu_s for h in used if h.record.measured_cpu_s is not None]
    return CaseHostSide(
        case_id=case_id, subject=first.subject, accel=first.accel, emulated=any(h.record.emulated for h in found),
        split=first.split, samples=len(found), used=len(used),
        cpu_s=round(median([h.record.cpu_s for h in used]) or 0.0, 3),
        window_s=round(median([h.window_s for h in used]) or 0.0, 3), categories=categories,
        monitor_cpu_s=round(m, 3) if (m := median(monitor)) is not None else None,
        monitor_column=first.monitor_column,
        worst_gap=round(worst, 4) if worst is not None else None, measured_by=first.measured_by,
        measured_cpu_s=round(m2, 3) if (m2 := median(measured)) is not None else None,
        threads=tuple(sorted(((n, r, round(median(v) or 0.0, 3)) for (n, r), v in threads.items()),
                             key=lambda x: (-x[2], x[0]))),
        notes=tuple(dict.fromkeys(n for h in found for n in h.record.notes)))


def host_side_fields(samples: Sequence[SampleRecord]) -> HostSideFigures | None:
    """The row's host-side keys (None when no sample has a host-side profile): `host_side_of` (qemu |
    runtime), `host_side_cpu_s` (median CPU seconds over the profiled window), `host_side_<category>_share`
    (median share, 0..1), `host_side_gap` (the largest relative gap to the monitor's figure)."""
    case = summarize("", samples_host_side(samples))
    if case is None:
        return None
    return HostSideFigures(host_side_of=case.subject, host_side_cpu_s=case.cpu_s,
                           shares={c.name: c.share for c in case.categories}, host_side_gap=case.worst_gap)
