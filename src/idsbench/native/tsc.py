"""The time-stamp counter's rate from the native `ibtsc` program (native/src/ibtsc.c): rdtsc ticks per
second of CLOCK_MONOTONIC_RAW, what turns Suricata's rule-profiling ticks into seconds. Never guessed:
off x86, or when the program cannot run, the rate is None and `error` says why."""

from __future__ import annotations

import platform

from idsbench import native, proc
from idsbench.errors import EnvironmentMissing
from idsbench.native.output import json_report
from idsbench.probemodel import TscRate

ROUNDS = 3
ROUND_MS = 50  # 3 x 50 ms: ~150 ms in all
TIMEOUT_S = 30.0
X86 = ("x86_64", "amd64", "i386", "i486", "i586", "i686")


def parse_output(text: str) -> TscRate:
    """TscRate from ibtsc's JSON line; a TscRate with `error` when it is not that."""
    doc, why = json_report(text, "ibtsc")
    if doc is None:
        return TscRate(error=why)
    hz, spread = doc.get("tsc_hz"), doc.get("spread_ppm")
    rate = float(hz) if isinstance(hz, (int, float)) and not isinstance(hz, bool) and hz > 0 else None
    rounds, round_ms, error = doc.get("rounds"), doc.get("round_ms"), doc.get("error")
    return TscRate(hz=rate, rounds=rounds if isinstance(rounds, int) else 0,
                   round_ms=round_ms if isinstance(round_ms, int) else 0,
                   spread_ppm=float(spread) if isinstance(spread, (int, float)) and rate is not None else None,
                   error=str(error) if error else (None if rate is not None else "ibtsc reported no rate"))


def measure_tsc(*, rounds: int = ROUNDS, round_ms: int = ROUND_MS, machine: str | None = None) -> TscRate:
    """Build (once) and run ibtsc here; off x86 (no rdtsc) not run. Errors become TscRate.error."""
    arch = (machine or platform.machine()).lower()
    if arch not in X86:
        return TscRate(error=f"no time-stamp counter to measure on {arch or 'this architecture'} (x86 only)")
    try:
        program = native.program("ibtsc")
        done = proc.run([str(program), "--rounds", str(rounds), "--round-ms", str(round_ms)], timeout=TIMEOUT_S)
    except EnvironmentMissing as exc:
        return TscRate(error=str(exc))
    return parse_output(done.stdout)
