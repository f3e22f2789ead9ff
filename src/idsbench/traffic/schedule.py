"""Schedule maths shared by the native replayer's checks: when each packet is due, and how late
packets seen on the wire were against that schedule.

`deadlines_ns` mirrors ibreplay's absolute schedule (native/src/ibreplay.c): packet k of loop L is
due (trace offset of k + L x span) / multiplier after the start, or (L x n + k) / pps, or after the
bytes before it at mbps; topspeed has no schedule. `wire_lateness` measures a sender from outside:
arrival timestamps captured at the far end of the wire against the deadlines, anchored on the
packet that arrived earliest relative to its deadline (the capture's clock and the sender's start
are unknown), so a sender that drifts shows the drift as lateness, whatever the sender.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from idsbench.spec import Rate
from idsbench.store.schema import Lateness
from idsbench.traffic.replay import SecondCount

IntArray = npt.NDArray[np.int64]


def deadlines_ns(offsets_ns: IntArray, sizes: IntArray, rate: Rate, loops: int = 1) -> IntArray | None:
    """Deadlines (ns after the start) of every packet of `loops` loops; None for topspeed.

    `offsets_ns` are the trace's timestamps minus the first one, `sizes` the captured lengths."""
    n = int(offsets_ns.size)
    if rate.kind == "topspeed" or n == 0:
        return None
    loop = np.repeat(np.arange(loops, dtype=np.int64), n)
    if rate.kind in ("recorded", "multiplier"):
        span = int(offsets_ns.max(initial=0)) - int(offsets_ns[0])
        span = max(span, 0)
        base = np.tile(offsets_ns.astype(np.int64), loops) + loop * span
        mult = 1.0 if rate.kind == "recorded" else float(rate.value or 1.0)
        return (base.astype(np.float64) / mult).astype(np.int64)
    value = float(rate.value or 0.0)
    if rate.kind == "pps":
        return (np.arange(n * loops, dtype=np.float64) * 1e9 / value).astype(np.int64)
    before = np.concatenate(([0], np.cumsum(np.tile(sizes.astype(np.int64), loops))[:-1]))
    return (before.astype(np.float64) * 8000.0 / value).astype(np.int64)  # mbps


def wire_lateness(arrivals_ns: IntArray, deadlines: IntArray) -> Lateness:
    """Lateness (ms, to 0.1 µs) of captured arrivals against deadlines: both sorted and paired in order (several
    replayers with the same schedule interleave), anchored so the earliest packet is 0 late."""
    if arrivals_ns.size != deadlines.size:
        raise ValueError(f"{arrivals_ns.size} arrivals for {deadlines.size} deadlines: the capture lost or "
                         "gained packets")
    if arrivals_ns.size == 0:
        return Lateness(p50_ms=0.0, p99_ms=0.0, max_ms=0.0)
    diff = np.sort(arrivals_ns) - np.sort(deadlines)
    late = (diff - diff.min()) / 1e6
    p50, p99 = np.percentile(late, [50, 99])
    return Lateness(p50_ms=round(float(p50), 4), p99_ms=round(float(p99), 4), max_ms=round(float(late.max()), 4))


def planned_per_second(deadlines: IntArray, sizes: IntArray, loops: int = 1) -> tuple[SecondCount, ...]:
    """Packets and bytes the schedule asks for in each second after the start (to set beside a
    sender's achieved `per_second`); `sizes` are one loop's captured lengths."""
    if deadlines.size == 0:
        return ()
    sec = deadlines // 1_000_000_000
    nbytes = np.tile(sizes.astype(np.int64), loops)
    pkts = np.bincount(sec)
    byts = np.bincount(sec, weights=nbytes).astype(np.int64)
    return tuple(SecondCount(t, int(p), int(b)) for t, (p, b) in enumerate(zip(pkts.tolist(), byts.tolist())))
