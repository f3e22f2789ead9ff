"""Sender fidelity of one sample: the rate it was asked for against the rate it achieved, second
by second, and how late its packets left.

Achieved comes from the sender's own per-second counts (the native sender; tcpreplay reports only
totals). Requested comes from the sender's schedule where it reports one (packets due per second),
else from the case: a constant rate (pps, mbps) for the planned duration, or the trace's own
per-second profile, repeated per loop and compressed by the multiplier (recorded, multiplier).
Topspeed asks for no particular rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from idsbench.spec import Rate
from idsbench.store.schema import Lateness, ReplayRecord, SampleSummary, TraceRecord


@dataclass(frozen=True)
class Fidelity:
    """Per second since the replay start (summed over replayers): packets achieved and requested."""

    achieved_pps: tuple[float, ...]            # empty when the sender reports no per-second counts
    requested_pps: tuple[float, ...] | None    # None: topspeed, or nothing to derive it from
    lateness: Lateness | None                  # the worst replayer's (largest p99)


def sample_fidelity(s: SampleSummary) -> Fidelity | None:
    replay = s.replay
    if replay is None or not replay.replayers:
        return None
    achieved = _sum_by_second([[(int(p.t), float(p.packets)) for p in r.per_second] for r in replay.replayers])
    due = [[(int(p.t), float(p.due_packets)) for p in r.per_second if p.due_packets is not None]
           for r in replay.replayers]
    requested: tuple[float, ...] | None
    if any(due):
        requested = _sum_by_second(due)
    else:
        requested = _requested_from_case(Rate.from_label(s.case.rate), s.trace, s.case.replayers, s.case.loops,
                                         replay.requested_pps_per_replayer, replay.planned_s)
    return Fidelity(achieved, requested, worst_lateness(replay))


def worst_lateness(replay: ReplayRecord) -> Lateness | None:
    """The lateness of the replayer with the largest p99 (None: no replayer keeps a schedule)."""
    late = [r.lateness for r in replay.replayers if r.lateness is not None]
    return max(late, key=lambda x: x.p99_ms) if late else None


def _sum_by_second(series: list[list[tuple[int, float]]]) -> tuple[float, ...]:
    length = max((t + 1 for one in series for t, _ in one), default=0)
    total = [0.0] * length
    for one in series:
        for t, value in one:
            if t >= 0:
                total[t] += value
    return tuple(total)


def _requested_from_case(rate: Rate, trace: TraceRecord | None, replayers: int, loops: int,
                         pps_per_replayer: float | None, planned_s: float | None) -> tuple[float, ...] | None:
    if rate.kind == "topspeed":
        return None
    if rate.kind in ("pps", "mbps"):
        if not pps_per_replayer or not planned_s:
            return None
        return tuple(pps_per_replayer * replayers * min(1.0, planned_s - t) for t in range(math.ceil(planned_s)))
    if trace is None or not trace.per_second:
        return None
    multiplier = float(rate.value or 1.0) if rate.kind == "multiplier" else 1.0
    return tuple(x * replayers for x in trace_rate(trace, loops, multiplier))


def trace_rate(trace: TraceRecord, loops: int, multiplier: float) -> tuple[float, ...]:
    """Packets per second of one replayer replaying `trace` `loops` times at `multiplier`: the
    trace's cumulative packet count (linear within each of its seconds) sampled at whole seconds
    of the replay, each loop starting where the last one ended."""
    counts = np.zeros(max(int(p.t) for p in trace.per_second) + 1)
    for p in trace.per_second:
        counts[int(p.t)] += p.packets
    span = max(trace.duration_s, 1e-9)
    edges = np.append(np.arange(counts.size, dtype=float), max(float(counts.size), span))
    edges[-1] = max(span, edges[-2])
    cumulative = np.concatenate(([0.0], np.cumsum(counts)))
    total_s = span * loops / multiplier
    at = np.arange(0.0, math.ceil(total_s) + 1) * multiplier  # whole replay seconds, in trace time
    loop, within = np.divmod(np.minimum(at, span * loops), span)
    done = loop * cumulative[-1] + np.interp(within, edges, cumulative)
    done[at >= span * loops] = cumulative[-1] * loops
    return tuple(float(x) for x in np.diff(done))
