"""What else changed between base and head (pure): alerts per signature and eve event types (from each
side's offline read of every trace: exact, so any difference is listed), stats counters (from the duet
samples' last eve stats record: only a change beyond what the A/A arm shows between identical sides),
and resources (rule-load time, peak memory).

A counter's A/A spread is the largest relative difference |b − a| / max(|a|, |b|, 1) between the two sides
of any A/A sample (pooled over the traces the arm ran); a counter is listed when the relative change of
its median from base to head on a trace exceeds that spread (a counter the A/A arm never moved is listed
at any change). `uptime` and per-thread keys are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from idsbench.analysis.stats import median

SKIPPED_COUNTERS = frozenset({"uptime"})


@dataclass(frozen=True)
class AlertDiff:
    sid: int
    base: int
    head: int
    trace: str


@dataclass(frozen=True)
class EventDiff:
    event_type: str
    base: int
    head: int
    trace: str


@dataclass(frozen=True)
class CounterDiff:
    counter: str
    base: float
    head: float
    ratio: float | None          # head / base (None when base is 0)
    trace: str
    aa_spread: float             # the largest relative A/A difference of this counter (0..1)


@dataclass(frozen=True)
class ResourceDiff:
    metric: str                  # "rule_load_s" | "peak_rss_bytes"
    base: float | None
    head: float | None
    ratio: float | None
    trace: str


def alerts_diff(trace: str, base: Mapping[int, int], head: Mapping[int, int]) -> list[AlertDiff]:
    """Every signature whose alert count differs, in sid order."""
    return [AlertDiff(sid, int(base.get(sid, 0)), int(head.get(sid, 0)), trace)
            for sid in sorted(set(base) | set(head)) if base.get(sid, 0) != head.get(sid, 0)]


def events_diff(trace: str, base: Mapping[str, int], head: Mapping[str, int]) -> list[EventDiff]:
    """Every eve event type whose count differs, by name."""
    return [EventDiff(t, int(base.get(t, 0)), int(head.get(t, 0)), trace)
            for t in sorted(set(base) | set(head)) if base.get(t, 0) != head.get(t, 0)]


def flatten(stats: Mapping[str, object], prefix: str = "") -> dict[str, float]:
    """An eve stats record's nested counters as dotted keys ("decoder.pkts"); non-numbers left out."""
    out: dict[str, float] = {}
    for key, value in stats.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if key == "threads":
                continue
            out.update(flatten(value, name + "."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and name not in SKIPPED_COUNTERS:
            out[name] = float(value)
    return out


def _relative(a: float, b: float) -> float:
    return abs(b - a) / max(abs(a), abs(b), 1.0)


def aa_spreads(pairs: Iterable[tuple[Mapping[str, float], Mapping[str, float]]]) -> dict[str, float]:
    """Per counter the largest relative difference between the sides of any A/A sample."""
    out: dict[str, float] = {}
    for a, b in pairs:
        for key in set(a) | set(b):
            out[key] = max(out.get(key, 0.0), _relative(a.get(key, 0.0), b.get(key, 0.0)))
    return out


def counters_diff(trace: str, base: Sequence[Mapping[str, float]], head: Sequence[Mapping[str, float]],
                  spreads: Mapping[str, float]) -> list[CounterDiff]:
    """Counters whose median moved from base to head by more than the A/A arm's spread (module doc)."""
    keys = sorted({k for c in (*base, *head) for k in c})
    out = []
    for key in keys:
        b = median([c.get(key, 0.0) for c in base])
        h = median([c.get(key, 0.0) for c in head])
        if b is None or h is None or b == h:
            continue
        spread = spreads.get(key, 0.0)
        if _relative(b, h) > spread:
            out.append(CounterDiff(key, b, h, h / b if b else None, trace, spread))
    return out


def resource_diff(trace: str, metric: str, base: Sequence[float | None], head: Sequence[float | None]) -> ResourceDiff:
    b, h = median(list(base)), median(list(head))
    return ResourceDiff(metric, b, h, h / b if b and h is not None else None, trace)
