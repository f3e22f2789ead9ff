"""The host-speed witness's own process (monitor/witness.py starts it): a fixed piece of work every period.

    python -I -S witnessloop.py PERIOD_S PIECE_S

Every PERIOD_S it runs a CPU-bound loop of PIECE_S of CPU time (the iterations calibrated once, at start)
and writes one line to stdout — when the piece ended (unix s), its iterations and the CPU time they took
(ns, its thread's clock: like a sensor's cgroup CPU time, it counts neither waiting for the CPU nor, with
steal accounting, the hypervisor's preemption) — with one write(2) per whole line, so a reader never sees
a cut line but the last (store/witness.py leaves that out). stdout is the result file the supervisor
opened (store.layout.WITNESS_FILE). Standard library only: it starts fast with `-I -S`, like the exec shim.
Ends on SIGTERM (the supervisor's stop or the teardown stack).
"""

from __future__ import annotations

import os
import signal
import sys
import time

HEADER = "end_unix,iterations,cpu_ns\n"


def spin(n: int) -> int:
    """The piece of work (probe/noise.py's loop: integer arithmetic in the interpreter, cache-resident)."""
    x = 0
    for i in range(n):
        x ^= i * 2654435761 & 0xFFFF
    return x


def calibrate(piece_s: float) -> int:
    """Iterations that take about `piece_s` of this thread's CPU time."""
    n = 1000
    while True:
        t0 = time.thread_time_ns()
        spin(n)
        dt = (time.thread_time_ns() - t0) / 1e9
        if dt >= piece_s / 2 or n > 1 << 26:
            return max(100, int(n * piece_s / max(dt, 1e-9)))
        n *= 2


def _write(line: str) -> None:
    data = line.encode()
    while data:
        data = data[os.write(1, data):]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: witnessloop.py PERIOD_S PIECE_S", file=sys.stderr)
        return 2
    period_s, piece_s = float(argv[0]), float(argv[1])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    n = calibrate(piece_s)
    _write(HEADER)
    next_at = time.monotonic()
    while True:
        t0 = time.thread_time_ns()
        spin(n)
        cpu_ns = time.thread_time_ns() - t0
        _write(f"{time.time():.4f},{n},{cpu_ns}\n")
        next_at = max(next_at + period_s, time.monotonic())  # a late piece does not make later ones bunch up
        time.sleep(max(0.0, next_at - time.monotonic()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
