"""How quiet the host is, measured before a campaign or a search: steal time (the hypervisor ran
someone else on our vCPUs), the coefficient of variation of a calibrated CPU-bound loop pinned to the
sensor's CPUs (how much a fixed piece of work's time moves), CPU frequency changes, and the CPU that other
processes used meanwhile (a steady hog slows the loop without making it vary: only this figure shows it).

The loop's CV is measured at the time scale of the campaign's trials (`piece_s`: a replay's or a search
trial's length, at least MIN_PIECE_S, at most MAX_PIECE_S): a 4-ms stall among 10-ms pieces is a large CV
that a 1-s trial never feels. The loop runs for PIECES pieces in all, timed in CHUNK_S chunks; the
trial-scale CV is that of every window of `piece_s` worth of chunks (sliding, WINDOW_STEPS starts per
piece), the 10-ms CV (`loop_cv_10ms`, kept for context) that of the chunks themselves.

A result cannot be more precise than the host is steady: when a figure exceeds the precision the spec
asks (`search.precision`), the campaign warns naming it, its rows carry the label `noisy-host`, and
`--require-quiet` refuses to start."""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from idsbench.probemodel import NoiseProbe

PROC_STAT = Path("/proc/stat")
CPUFREQ = Path("/sys/devices/system/cpu")
CHUNK_S = 0.01          # one timed chunk of work (the 10-ms figure)
MIN_PIECE_S = 1.0       # the trial scale is at least this long (the "at least 1 s")
# Longer trials are measured at this scale: the loop's CV falls as pieces grow (docs/noise.md), so the CV
# of 2-s pieces never calls a longer trial quieter than it is, and the probe stays ≤ PIECES × MAX_PIECE_S
# seconds.
MAX_PIECE_S = 2.0
PIECES = 6              # pieces of the trial's length timed in all (shared by the CPUs measured)
WINDOW_STEPS = 10       # sliding windows start every 1/WINDOW_STEPS of a piece
MAX_CPUS = 2            # the probe stays short on a big host: the first sensor CPUs only
NOISY_LABEL = "noisy-host"
# Other processes' CPU share below which the host counts as quiet whatever the precision: the
# system's own housekeeping (the probe's /proc reads, a container runtime idling) stays below it.
OTHER_LOAD_FLOOR = 0.05


def cpu_times(text: str) -> tuple[int, int]:
    """(steal, total) jiffies from /proc/stat's aggregate `cpu` line."""
    steal, _busy, total = cpu_split(text)
    return steal, total


def cpu_split(text: str) -> tuple[int, int, int]:
    """(steal, busy, total) jiffies from /proc/stat's aggregate `cpu` line; busy = user, nice, system,
    irq and softirq (not idle, iowait or steal)."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:]] + [0] * 8
            user, nice, system, _idle, _iowait, irq, softirq, steal = values[:8]
            return steal, user + nice + system + irq + softirq, sum(values[:8])
    return 0, 0, 0


def other_load_pct(before: str, after: str, own_cpu_s: float, clock_ticks: int) -> float | None:
    """The busy CPU time of every process but this one between two /proc/stat readings, as a % of all
    CPU time (100 = every CPU busy); None when no time passed."""
    _s0, busy0, total0 = cpu_split(before)
    _s1, busy1, total1 = cpu_split(after)
    if total1 <= total0:
        return None
    other = (busy1 - busy0) - own_cpu_s * clock_ticks
    return round(max(0.0, 100.0 * other / (total1 - total0)), 3)


def _spin(n: int) -> int:
    x = 0
    for i in range(n):
        x ^= i * 2654435761 & 0xFFFF
    return x


def calibrate(clock: Callable[[], float] = time.perf_counter) -> int:
    """Iterations of the loop that take about CHUNK_S here."""
    n = 10_000
    while True:
        t0 = clock()
        _spin(n)
        dt = clock() - t0
        if dt >= CHUNK_S / 4 or n > 1 << 26:
            return max(1000, int(n * CHUNK_S / max(dt, 1e-6)))
        n *= 4


def coefficient_of_variation(times: Sequence[float]) -> float | None:
    if len(times) < 2:
        return None
    mean = statistics.fmean(times)
    return statistics.stdev(times) / mean if mean > 0 else None


def piece_seconds(trial_s: float | None) -> float:
    """The time scale the loop's CV is measured at: the trial's length within [MIN_PIECE_S, MAX_PIECE_S]."""
    if trial_s is None or not math.isfinite(trial_s):
        return MIN_PIECE_S
    return min(MAX_PIECE_S, max(MIN_PIECE_S, trial_s))


def window_times(chunks: Sequence[float], width: int, step: int) -> list[float]:
    """The time of every run of `width` consecutive chunks that starts at a multiple of `step`."""
    if width < 1 or len(chunks) < width:
        return []
    sums = [0.0]
    for c in chunks:
        sums.append(sums[-1] + c)
    return [sums[i + width] - sums[i] for i in range(0, len(chunks) - width + 1, max(1, step))]


def pooled_cv(groups: Sequence[Sequence[float]]) -> float | None:
    """The CV of several CPUs' window times, each relative to its own CPU's mean (one CPU may be slower
    without being noisier); None with fewer than two windows in all."""
    relative = [t / statistics.fmean(g) for g in groups if len(g) >= 2 for t in g]
    return coefficient_of_variation(relative) if len(relative) >= 2 else None


def time_chunks(n: int, duration_s: float, clock: Callable[[], float] = time.perf_counter,
                every_10: Callable[[], None] = lambda: None) -> list[float]:
    """The durations of consecutive chunks of `n` loop iterations over `duration_s` (stamps taken back to
    back, so a preemption between two chunks is in one of them); `every_10` runs after every tenth chunk."""
    stamps = [clock()]
    end = stamps[0] + duration_s
    while stamps[-1] < end:
        _spin(n)
        if len(stamps) % 10 == 0:
            every_10()
        stamps.append(clock())
    return [b - a for a, b in zip(stamps, stamps[1:])]


def _frequencies(cpus: Sequence[int]) -> list[int | None]:
    out: list[int | None] = []
    for c in cpus:
        try:
            out.append(int((CPUFREQ / f"cpu{c}" / "cpufreq" / "scaling_cur_freq").read_text()))
        except (OSError, ValueError):
            out.append(None)
    return out


def measure_noise(cpus: Sequence[int] | None = None, piece_s: float = MIN_PIECE_S) -> NoiseProbe:
    """Steal %, the loop's CV on the sensor's CPUs over pieces of `piece_s` (pooled over the CPUs) and
    over 10-ms chunks (the largest of the CPUs'), frequency changes seen; PIECES × `piece_s` in all."""
    allowed = sorted(os.sched_getaffinity(0))
    cpus = [c for c in (cpus or allowed[1:] or allowed) if c in allowed][:MAX_CPUS] or allowed[:1]
    piece_s = piece_seconds(piece_s)
    before = PROC_STAT.read_text()
    own0 = time.process_time()
    freq0 = _frequencies(cpus)
    changes = 0

    def look() -> None:
        nonlocal freq0, changes
        now = _frequencies(cpus)
        changes += sum(1 for a, b in zip(freq0, now, strict=True) if a is not None and b != a)
        freq0 = now

    cvs_10ms: list[float] = []
    windows: list[list[float]] = []
    n = calibrate()
    width = max(1, round(piece_s / CHUNK_S))  # chunks of work in one piece (on a quiet CPU)
    per_cpu_s = piece_s * math.ceil(PIECES / len(cpus))
    try:
        for c in cpus:
            os.sched_setaffinity(0, {c})
            _spin(n)  # settle on the CPU
            chunks = time_chunks(n, per_cpu_s, every_10=look)
            cv = coefficient_of_variation(chunks)
            if cv is not None:
                cvs_10ms.append(cv)
            windows.append(window_times(chunks, width, max(1, width // WINDOW_STEPS)))
    finally:
        os.sched_setaffinity(0, set(allowed))
    after = PROC_STAT.read_text()
    own_s = time.process_time() - own0
    steal0, total0 = cpu_times(before)
    steal1, total1 = cpu_times(after)
    steal_pct = 100.0 * (steal1 - steal0) / (total1 - total0) if total1 > total0 else 0.0
    visible = any(f is not None for f in freq0)
    trial_cv = pooled_cv(windows)
    return NoiseProbe(steal_pct=round(steal_pct, 3), loop_cv=None if trial_cv is None else round(trial_cv, 5),
                      piece_s=piece_s, loop_cv_10ms=round(max(cvs_10ms), 5) if cvs_10ms else None,
                      freq_changes=changes if visible else None, cpus=tuple(cpus),
                      other_load_pct=other_load_pct(before, after, own_s, os.sysconf("SC_CLK_TCK")))


def noise_warning(noise: NoiseProbe | None, precision: float) -> str | None:
    """The warning a campaign on a host this noisy carries (None: quiet enough for `precision`)."""
    loud = noise_exceeds(noise, precision)
    if not loud:
        return None
    return (f"the host is noisier than the precision asked ({precision:.1%}): {'; '.join(loud)}. Results carry the "
            f"label '{NOISY_LABEL}'; a repeated measurement may differ by as much.")


def noise_exceeds(noise: NoiseProbe | None, precision: float) -> list[str]:
    """The figures of `noise` larger than the precision asked (a relative width), named."""
    if noise is None:
        return []
    out = []
    if noise.loop_cv is not None and noise.loop_cv > precision:  # the trial scale only (10 ms: context)
        out.append(f"a fixed CPU-bound loop's time varied by {noise.loop_cv:.1%} (CV) over pieces of "
                   f"{noise.piece_s or MIN_PIECE_S:g} s on CPUs {','.join(map(str, noise.cpus))}")
    if noise.steal_pct / 100 > precision:
        out.append(f"steal time {noise.steal_pct:.1f}%")
    if noise.freq_changes:
        out.append(f"{noise.freq_changes} CPU frequency changes")
    if noise.other_load_pct is not None and noise.other_load_pct / 100 > max(precision, OTHER_LOAD_FLOOR):
        out.append(f"other processes kept {noise.other_load_pct:.0f}% of the host's CPU time busy")
    return out
