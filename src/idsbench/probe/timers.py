"""Timer costs from the native `ibtimer` program (native/src/ibtimer.c), and the warning they feed.

On the host: `measure()`. In a VM guest (wired by the vm setup): copy `native.program("ibtimer")`
into the guest (it uses libc only and links with -static), run `timer_argv(path)` there and parse
its stdout with `parse_output()`.
"""

from __future__ import annotations

from pathlib import Path

from idsbench import native, proc
from idsbench.errors import EnvironmentMissing
from idsbench.native.output import json_report
from idsbench.probemodel import TimerCosts

DEFAULT_ROUNDS = 7
DEFAULT_ROUND_MS = 10
TIMEOUT_S = 60.0
KEYS = ("cpuid_rdtsc_ns", "lfence_rdtsc_ns", "rdtsc_ns", "rdtscp_ns", "clock_gettime_ns")


def timer_argv(program: Path, *, rounds: int = DEFAULT_ROUNDS, round_ms: int = DEFAULT_ROUND_MS,
               cpu: int | None = None) -> list[str]:
    argv = [str(program), "--rounds", str(rounds), "--round-ms", str(round_ms)]
    return argv + (["--cpu", str(cpu)] if cpu is not None else [])


def parse_output(text: str) -> TimerCosts:
    """TimerCosts from ibtimer's JSON line; a TimerCosts with `error` when it is not that."""
    doc, error = json_report(text, "ibtimer")
    if doc is None:
        return TimerCosts(error=error)
    values: dict[str, float | None] = {}
    for key in KEYS:
        value = doc.get(key)
        values[key] = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    vendor = doc.get("hypervisor_vendor")
    rounds = doc.get("rounds")
    return TimerCosts(
        cpuid_rdtsc_ns=values["cpuid_rdtsc_ns"],
        lfence_rdtsc_ns=values["lfence_rdtsc_ns"],
        rdtsc_ns=values["rdtsc_ns"],
        rdtscp_ns=values["rdtscp_ns"],
        clock_gettime_ns=values["clock_gettime_ns"],
        rounds=rounds if isinstance(rounds, int) else 0,
        cpuid_hypervisor_vendor=vendor if isinstance(vendor, str) else None,
    )


def measure(*, rounds: int = DEFAULT_ROUNDS, round_ms: int = DEFAULT_ROUND_MS, cpu: int | None = None,
            netns: str | None = None) -> TimerCosts:
    """Build (once) and run ibtimer here; errors become TimerCosts.error (a probe never fails on it)."""
    try:
        program = native.program("ibtimer")
        done = proc.run(timer_argv(program, rounds=rounds, round_ms=round_ms, cpu=cpu),
                        timeout=TIMEOUT_S, netns=netns)
    except EnvironmentMissing as exc:
        return TimerCosts(error=str(exc))
    return parse_output(done.stdout)
