"""`perf` command lines and the parsing of what they print (pure: unit-tested with recorded output)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Counted per sample with `perf stat`; "<not supported>" where the host (e.g. a VM) has no PMU.
STAT_EVENTS = ("task-clock", "cycles", "instructions", "cache-references", "cache-misses", "LLC-loads",
               "LLC-load-misses")
RECORD_EVENT = "cpu-clock"  # a software clock: works where hardware counters are absent


def record_argv(pids: Sequence[int], out: Path, frequency_hz: int) -> list[str]:
    """Sample the processes' threads at `frequency_hz` into `out` until SIGINT."""
    return ["perf", "record", "-e", RECORD_EVENT, "-F", str(frequency_hz), "-p", ",".join(map(str, pids)),
            "-o", str(out), "--quiet"]


def stat_argv(pids: Sequence[int], out: Path) -> list[str]:
    """Count STAT_EVENTS for the processes until SIGINT, as CSV into `out`."""
    return ["perf", "stat", "-e", ",".join(STAT_EVENTS), "-x", ",", "-p", ",".join(map(str, pids)),
            "-o", str(out)]


def report_argv(data: Path, percent_limit: float) -> list[str]:
    """Self time per thread name, shared object and symbol, flat, '|'-separated (thread names such as
    qemu's "CPU 0/TCG" have spaces)."""
    return ["perf", "report", "-i", str(data), "--stdio", "--no-children", "-q", "-g", "none",
            "--sort", "comm,dso,sym", "-t", "|", "--percent-limit", f"{percent_limit:g}"]


@dataclass(frozen=True)
class SymbolShare:
    """Share of all samples spent in `symbol` (self time), in one thread name."""

    self_pct: float
    thread: str
    dso: str
    symbol: str
    kernel: bool


# Addresses perf could not name (static functions of a stripped binary) are pooled per object.
UNRESOLVED = "(functions without a symbol)"
_SEPARATED = re.compile(r"^(?P<pct>\d+(?:\.\d+)?)%\|(?P<comm>[^|]+)\|(?P<dso>[^|]+)\|\[(?P<kind>[.kgu])\]\s+(?P<sym>.+?)$")
_REPORT_LINE = re.compile(r"^\s*(?P<pct>\d+(?:\.\d+)?)%\s+(?P<comm>\S+)\s+(?P<dso>\S+)\s+\[(?P<kind>[.kgu])\]\s+(?P<sym>.+?)\s*$")


def parse_report(text: str) -> list[SymbolShare]:
    """Rows of `perf report --sort comm,dso,sym`, '|'-separated or (older files) space-aligned; lines
    that are not rows are skipped."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|", 3)]
        m = _REPORT_LINE.match(line) if len(cells) < 4 else _SEPARATED.match("|".join(cells))
        if m:
            symbol = UNRESOLVED if m["sym"].startswith("0x") else m["sym"]
            out.append(SymbolShare(float(m["pct"]), m["comm"], m["dso"], symbol, m["kind"] == "k"))
    return out


@dataclass(frozen=True)
class FunctionShare:
    symbol: str
    dso: str
    self_pct: float


def top_functions(rows: Sequence[SymbolShare], n: int, threads: set[str] | None = None) -> list[FunctionShare]:
    """The `n` symbols with the most self time (summed over thread names, or only `threads`)."""
    return rank_functions(((r.symbol, r.dso, r.self_pct) for r in rows if threads is None or r.thread in threads), n)


def rank_functions(shares: Iterable[tuple[str, str, float]], n: int, divisor: int = 1) -> list[FunctionShare]:
    """(symbol, dso, self %) summed per function, divided by `divisor` (a mean over that many
    profiles), the `n` largest first."""
    total: dict[tuple[str, str], float] = {}
    for symbol, dso, pct in shares:
        total[(symbol, dso)] = total.get((symbol, dso), 0.0) + pct
    ranked = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return [FunctionShare(sym, dso, round(pct / divisor, 2)) for (sym, dso), pct in ranked]


def parse_stat(text: str) -> dict[str, float | None]:
    """`perf stat -x ,` output: event -> count (None: not supported or not counted), summed when
    an event appears on several lines (per-thread or per-CPU output)."""
    out: dict[str, float | None] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        # value,unit,event,... ; with --per-thread a leading "comm-tid" field
        if len(fields) >= 4 and not _is_value(fields[0]) and _is_value(fields[1]):
            fields = fields[1:]
        if len(fields) < 3:
            continue
        value, event = fields[0], fields[2]
        if not event:
            continue
        count = _number(value)
        if count is None:
            out.setdefault(event, None)
        else:
            out[event] = (out.get(event) or 0.0) + count
    return out


def _is_value(field: str) -> bool:
    return field.startswith("<") or _number(field) is not None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def ratios(counts: dict[str, float | None]) -> dict[str, float | None]:
    """Instructions per cycle and cache-miss ratios where both counts exist."""
    def div(a: str, b: str) -> float | None:
        x, y = counts.get(a), counts.get(b)
        return round(x / y, 4) if x is not None and y else None
    return {"ipc": div("instructions", "cycles"), "cache_miss_ratio": div("cache-misses", "cache-references"),
            "llc_load_miss_ratio": div("LLC-load-misses", "LLC-loads")}
