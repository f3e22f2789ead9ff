"""How quiet the host is, measured in ≤ ~2 s before a campaign or a search: steal time (the hypervisor
ran someone else on our vCPUs), the coefficient of variation of a calibrated CPU-bound loop pinned to
the sensor's CPUs (how much a fixed piece of work's time moves), CPU frequency changes, and the CPU
that other processes used meanwhile (a steady hog slows the loop without making it vary: only this
figure shows it).

A result cannot be more precise than the host is steady: when a figure exceeds the precision the spec
asks (`search.precision`), the campaign warns naming it, its rows carry the label `noisy-host`, and
`--require-quiet` refuses to start."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from idsbench.probemodel import NoiseProbe

PROC_STAT = Path("/proc/stat")
CPUFREQ = Path("/sys/devices/system/cpu")
CHUNK_S = 0.01          # one timed piece of work
RUNS_PER_CPU = 40       # pieces timed on each sensor CPU (~0.4 s each)
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


def _frequencies(cpus: Sequence[int]) -> list[int | None]:
    out: list[int | None] = []
    for c in cpus:
        try:
            out.append(int((CPUFREQ / f"cpu{c}" / "cpufreq" / "scaling_cur_freq").read_text()))
        except (OSError, ValueError):
            out.append(None)
    return out


def measure_noise(cpus: Sequence[int] | None = None) -> NoiseProbe:
    """Steal %, the loop's CV on the sensor's CPUs (the largest of them), frequency changes seen."""
    allowed = sorted(os.sched_getaffinity(0))
    cpus = [c for c in (cpus or allowed[1:] or allowed) if c in allowed][:MAX_CPUS] or allowed[:1]
    before = PROC_STAT.read_text()
    own0 = time.process_time()
    freq0 = _frequencies(cpus)
    changes = 0
    cvs: list[float] = []
    n = calibrate()
    try:
        for c in cpus:
            os.sched_setaffinity(0, {c})
            _spin(n)  # settle on the CPU
            times = []
            for k in range(RUNS_PER_CPU):
                t0 = time.perf_counter()
                _spin(n)
                times.append(time.perf_counter() - t0)
                if k % 10 == 9:
                    now = _frequencies(cpus)
                    changes += sum(1 for a, b in zip(freq0, now, strict=True) if a is not None and b != a)
                    freq0 = now
            cv = coefficient_of_variation(times)
            if cv is not None:
                cvs.append(cv)
    finally:
        os.sched_setaffinity(0, set(allowed))
    after = PROC_STAT.read_text()
    own_s = time.process_time() - own0
    steal0, total0 = cpu_times(before)
    steal1, total1 = cpu_times(after)
    steal_pct = 100.0 * (steal1 - steal0) / (total1 - total0) if total1 > total0 else 0.0
    visible = any(f is not None for f in freq0)
    return NoiseProbe(steal_pct=round(steal_pct, 3), loop_cv=round(max(cvs), 5) if cvs else None,
                      freq_changes=changes if visible else None, cpus=tuple(cpus),
                      other_load_pct=other_load_pct(before, after, own_s, os.sysconf("SC_CLK_TCK")))


def noise_exceeds(noise: NoiseProbe | None, precision: float) -> list[str]:
    """The figures of `noise` larger than the precision asked (a relative width), named."""
    if noise is None:
        return []
    out = []
    if noise.loop_cv is not None and noise.loop_cv > precision:
        out.append(f"a fixed CPU-bound loop's time varied by {noise.loop_cv:.1%} (CV) on CPUs "
                   f"{','.join(map(str, noise.cpus))}")
    if noise.steal_pct / 100 > precision:
        out.append(f"steal time {noise.steal_pct:.1f}%")
    if noise.freq_changes:
        out.append(f"{noise.freq_changes} CPU frequency changes")
    if noise.other_load_pct is not None and noise.other_load_pct / 100 > max(precision, OTHER_LOAD_FLOOR):
        out.append(f"other processes kept {noise.other_load_pct:.0f}% of the host's CPU time busy")
    return out
