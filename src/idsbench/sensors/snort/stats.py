"""Snort 3's counters: the statistics it prints at exit, perf_monitor's JSON time series, and the
alerts per rule in alert_json (docs/snort.md says which counter means what).

Common schema (sensors.base.Counters) from Snort's pegs:
  captured_pkts = daq.received + daq.dropped   (libdaq's afpacket reports received = tp_packets -
                                                tp_drops: Snort's `received` EXCLUDES kernel drops)
  dropped_pkts  = daq.dropped                  (the kernel's tp_drops: the ring was full)
  decoded_pkts  = daq.analyzed                 (packets Snort took from the DAQ and processed)
  decoded_bytes = daq.rx_bytes                 (sum of their captured lengths)
  alerts        = detection.total_alerts
  flows         = stream.flows
Counters that are 0 are not printed by Snort: a missing counter is 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

U64 = 1 << 64


@dataclass(frozen=True)
class SnortCounters:
    """Snort's own counters (cumulative), each 0 when Snort did not report it."""

    received: int = 0  # daq.received: packets the DAQ got from the kernel ring (WITHOUT kernel drops)
    analyzed: int = 0  # daq.analyzed: packets Snort processed
    dropped: int = 0  # daq.dropped: the kernel's drops (ring full)
    filtered: int = 0  # daq.filtered: packets a BPF filter removed (idsbench sets none)
    outstanding: int = 0  # daq.outstanding: taken from the DAQ, not yet finished (a level, not a sum)
    rx_bytes: int = 0  # daq.rx_bytes
    alerts: int = 0  # detection.total_alerts
    logged: int = 0  # detection.logged: events written by the loggers (alert_json lines)
    flows: int = 0  # stream.flows

    @property
    def captured(self) -> int:
        """Packets the kernel offered the capture sockets, dropped ones included (Suricata's
        capture.kernel_packets), with the afpacket DAQ (received = tp_packets - tp_drops)."""
        return self.received + self.dropped

    def captured_by(self, module: str) -> int:
        """`captured` for a DAQ module: the pcap DAQ's received is libpcap's ps_recv, which on Linux
        counts the ring's drops already (tp_packets)."""
        return self.received if module == "pcap" else self.captured

    def schema_counters(self, module: str = "afpacket") -> dict[str, int]:
        """The common schema's counters, for `Counters.from_mapping`."""
        return {"captured_pkts": self.captured_by(module), "dropped_pkts": self.dropped, "decoded_pkts": self.analyzed,
                "decoded_bytes": self.rx_bytes, "alerts": self.alerts, "flows": self.flows}

    def plus(self, other: SnortCounters) -> SnortCounters:
        return SnortCounters(*(a + b for a, b in zip(_values(self), _values(other), strict=True)))


def _values(c: SnortCounters) -> tuple[int, ...]:
    return (c.received, c.analyzed, c.dropped, c.filtered, c.outstanding, c.rx_bytes, c.alerts, c.logged,
            c.flows)


# (module, peg) -> SnortCounters field
_PEGS = {("daq", "received"): "received", ("daq", "analyzed"): "analyzed", ("daq", "dropped"): "dropped",
         ("daq", "filtered"): "filtered", ("daq", "outstanding"): "outstanding", ("daq", "rx_bytes"): "rx_bytes",
         ("detection", "total_alerts"): "alerts", ("detection", "logged"): "logged",
         ("stream", "flows"): "flows"}


def counters_from_pegs(pegs: Mapping[str, Mapping[str, int]]) -> SnortCounters:
    """{module: {peg: value}} -> SnortCounters (missing = 0)."""
    values = {field: int(pegs.get(module, {}).get(peg, 0)) for (module, peg), field in _PEGS.items()}
    return SnortCounters(**values)


@dataclass(frozen=True)
class ExitStats:
    """The statistics Snort prints when it exits: every module's pegs, and the counters."""

    pegs: dict[str, dict[str, int]]
    counters: SnortCounters


_PEG_LINE = re.compile(r"^\s+([A-Za-z0-9_.\-]+): (\d+)(?:\s|$)")
_RULER = "-" * 50


def parse_exit_stats(log_text: str) -> ExitStats | None:
    """The "Packet Statistics" and "Module Statistics" Snort prints at exit; None when they are absent
    (Snort was killed, or failed before processing)."""
    start = log_text.find("\nPacket Statistics\n")
    if start < 0:
        return None
    end = log_text.find("\nSummary Statistics\n", start)
    lines = log_text[start:end if end > 0 else None].splitlines()
    pegs: dict[str, dict[str, int]] = {}
    module: str | None = None
    for i, line in enumerate(lines):
        if not line or line == _RULER or line.endswith(" Statistics"):
            module = None if line.endswith(" Statistics") else module
            continue
        if not line[0].isspace():
            # a module name follows a ruler; a table header (e.g. appid's) does not
            module = line.strip() if i > 0 and lines[i - 1] == _RULER else None
            continue
        found = _PEG_LINE.match(line)
        if module is not None and found:
            pegs.setdefault(module, {})[found.group(1)] = int(found.group(2))
    return ExitStats(pegs, counters_from_pegs(pegs))


@dataclass(frozen=True)
class SnortPoint:
    """Cumulative counters at `t_unix` (perf_monitor's timestamp: wall clock live, packet time with -r)."""

    t_unix: float
    counters: SnortCounters


def _signed(value: int) -> int:
    """perf_monitor prints a negative interval delta as its unsigned 64-bit wrap (seen: 2**64 - 1)."""
    return value - U64 if value >= U64 // 2 else value


def parse_perf_monitor(text: str) -> tuple[list[dict[str, object]], int]:
    """perf_monitor's JSON file (`[{...},{...}]`, unterminated while Snort runs or after a kill) ->
    (records, bad_records). A record that does not parse ends the scan (it can only be the cut tail)."""
    pos = text.find("[")
    if pos < 0:
        return [], 1 if text.strip() else 0
    records, cut = array_records(text, pos + 1)
    return records, 0 if cut is None else 1


def array_records(text: str, pos: int) -> tuple[list[dict[str, object]], int | None]:
    """The objects of a JSON array's body from `pos` on -> (records, where the first one that does not
    parse starts: a cut tail, or a record still being written; None when the text ends cleanly)."""
    decoder = json.JSONDecoder()
    records: list[dict[str, object]] = []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return records, None
        try:
            record, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return records, pos
        if isinstance(record, dict):
            records.append(record)


def perf_series(records: Iterable[Mapping[str, object]]) -> list[SnortPoint]:
    """One thread's perf_monitor base records -> cumulative points. Its pegs that are sums are
    written as the change over the interval (Snort resets them after each record); levels such as
    daq.outstanding are written as they are."""
    total = SnortCounters()
    out: list[SnortPoint] = []
    for record in records:
        stamp = record.get("timestamp")
        if not isinstance(stamp, (int, float)):
            continue
        pegs: dict[str, dict[str, int]] = {}
        for module, values in record.items():
            if isinstance(values, dict):
                pegs[module] = {k: _signed(v) for k, v in values.items() if isinstance(v, int)}
        delta = counters_from_pegs(pegs)
        total = SnortCounters(
            received=total.received + delta.received, analyzed=total.analyzed + delta.analyzed,
            dropped=total.dropped + delta.dropped, filtered=total.filtered + delta.filtered,
            outstanding=delta.outstanding, rx_bytes=total.rx_bytes + delta.rx_bytes,
            alerts=total.alerts + delta.alerts, logged=total.logged + delta.logged, flows=total.flows + delta.flows)
        out.append(SnortPoint(float(stamp), total))
    return out


def merge_threads(series: Iterable[list[SnortPoint]]) -> list[SnortPoint]:
    """Per-thread cumulative series -> one: at every time any thread reported, the sum of each
    thread's latest value (0 before its first record)."""
    threads = [s for s in series if s]
    times = sorted({p.t_unix for s in threads for p in s})
    out: list[SnortPoint] = []
    cursors = [0] * len(threads)
    for t in times:
        total = SnortCounters()
        for i, points in enumerate(threads):
            while cursors[i] + 1 < len(points) and points[cursors[i] + 1].t_unix <= t:
                cursors[i] += 1
            if points[cursors[i]].t_unix <= t:
                total = total.plus(points[cursors[i]].counters)
        out.append(SnortPoint(t, total))
    return out


def read_perf_series(paths: Iterable[Path]) -> tuple[list[SnortPoint], int]:
    """perf_monitor files of every packet thread -> (merged series, unreadable records)."""
    series: list[list[SnortPoint]] = []
    bad = 0
    for path in paths:
        try:
            text = path.read_text(errors="replace")
        except FileNotFoundError:
            continue
        records, cut = parse_perf_monitor(text)
        bad += cut
        series.append(perf_series(records))
    return merge_threads(series), bad


class RuleKey(NamedTuple):
    gid: int
    sid: int
    rev: int


@dataclass(frozen=True)
class AlertCounts:
    """Alerts per rule from alert_json. `repaired` lines were not valid JSON (Snort leaves quotes in
    msg unescaped) and were counted from their gid/sid/rev fields; `bad` lines had none."""

    per_rule: dict[RuleKey, int]
    repaired: int = 0
    bad: int = 0

    @property
    def total(self) -> int:
        return sum(self.per_rule.values())

    def by_sid(self, gid: int = 1) -> dict[int, int]:
        """Alerts per sid of generator `gid` (1 = text rules), revisions summed."""
        out: dict[int, int] = {}
        for key, n in self.per_rule.items():
            if key.gid == gid:
                out[key.sid] = out.get(key.sid, 0) + n
        return out


_FIELD = {name: re.compile(rf'"{name}" : (\d+)') for name in ("gid", "sid", "rev")}


def _rule_key(line: str) -> tuple[RuleKey | None, bool]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        record = None
    if isinstance(record, dict):
        gid, sid, rev = record.get("gid"), record.get("sid"), record.get("rev")
        if isinstance(gid, int) and isinstance(sid, int) and isinstance(rev, int):
            return RuleKey(gid, sid, rev), False
    found = [p.search(line) for p in _FIELD.values()]
    if all(found):
        gid, sid, rev = (int(m.group(1)) for m in found if m)
        return RuleKey(gid, sid, rev), True
    return None, False


def count_alerts(lines: Iterable[str]) -> AlertCounts:
    per_rule: dict[RuleKey, int] = {}
    repaired = bad = 0
    for line in lines:
        if not line.strip():
            continue
        key, was_repaired = _rule_key(line)
        if key is None:
            bad += 1
            continue
        repaired += was_repaired
        per_rule[key] = per_rule.get(key, 0) + 1
    return AlertCounts(per_rule, repaired, bad)


def read_alerts(paths: Iterable[Path]) -> AlertCounts:
    """alert_json files of every packet thread (absent files count nothing)."""
    per_rule: dict[RuleKey, int] = {}
    repaired = bad = 0
    for path in paths:
        try:
            with path.open(errors="replace") as fh:
                counts = count_alerts(fh)
        except FileNotFoundError:
            continue
        for key, n in counts.per_rule.items():
            per_rule[key] = per_rule.get(key, 0) + n
        repaired += counts.repaired
        bad += counts.bad
    return AlertCounts(per_rule, repaired, bad)
