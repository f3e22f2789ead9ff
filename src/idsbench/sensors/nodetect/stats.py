"""Counters of the nodetect engine's readers: ibcapture's stats lines and tcpdump's statistics reports.

Both are read into the common schema's terms (docs/snort.md, "The capture-only engine"):

| schema          | ibcapture (AF_PACKET TPACKET_V3)  | tcpdump / libpcap                  |
|-----------------|-----------------------------------|------------------------------------|
| captured_pkts   | kernel_packets (tp_packets; it    | "packets received by filter"       |
|                 | INCLUDES the kernel's drops)      | (libpcap's ps_recv = tp_packets)   |
| dropped_pkts    | kernel_drops (tp_drops)           | "packets dropped by kernel"        |
| decoded_pkts    | pkts read from the rings          | "packets captured" (handed to      |
|                 |                                   | tcpdump by libpcap)                |
| decoded_bytes   | bytes read from the rings         | not reported: 0                    |

After the engine drained its ring, captured_pkts == decoded_pkts + dropped_pkts. ibcapture drains
itself at SIGTERM; tcpdump does not (its last buffer-timeout's worth of packets stays unread when it
is stopped right after the traffic), so stop it at least its 1 s buffer timeout after the last packet.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from idsbench.errors import InputError


@dataclass(frozen=True)
class CaptureCounters:
    """Cumulative counters of a capture-only engine, every one an int (0 when not reported)."""

    captured_pkts: int = 0
    dropped_pkts: int = 0
    decoded_pkts: int = 0
    decoded_bytes: int = 0
    kernel_freezes: int = 0
    interface_drops: int = 0
    truncated_pkts: int = 0
    vlan_tagged_pkts: int = 0

    @property
    def unread_pkts(self) -> int:
        """Packets the kernel queued that the engine had not read yet (0 after a drain)."""
        return self.captured_pkts - self.dropped_pkts - self.decoded_pkts

    def schema_counters(self) -> dict[str, int]:
        """The common schema's counters (a capture-only engine raises no alerts, tracks no flows)."""
        return {"captured_pkts": self.captured_pkts, "dropped_pkts": self.dropped_pkts,
                "decoded_pkts": self.decoded_pkts, "decoded_bytes": self.decoded_bytes,
                "alerts": 0, "flows": 0}


@dataclass(frozen=True)
class CapturePoint:
    """One report. tcpdump's reports carry no time: t_unix/uptime_s are None for them."""

    t_unix: float | None
    uptime_s: float | None
    final: bool
    counters: CaptureCounters


@dataclass(frozen=True)
class CaptureLog:
    """Every report of one run, in order, and the 1-based numbers of lines that did not parse."""

    points: tuple[CapturePoint, ...]
    bad_lines: tuple[int, ...] = ()

    @property
    def final(self) -> CapturePoint | None:
        """The report written at exit (after the drain), or None when the engine did not exit cleanly."""
        finals = [p for p in self.points if p.final]
        return finals[-1] if finals else None

    @property
    def last(self) -> CapturePoint | None:
        return self.points[-1] if self.points else None


_IBCAPTURE_INTS = {"kernel_packets": "captured_pkts", "kernel_drops": "dropped_pkts", "pkts": "decoded_pkts",
                   "bytes": "decoded_bytes", "kernel_freezes": "kernel_freezes",
                   "truncated": "truncated_pkts", "vlan_tagged": "vlan_tagged_pkts"}


def parse_ibcapture_line(line: str) -> CapturePoint:
    """One ibcapture stats line -> CapturePoint; ValueError (bad JSON) or TypeError (wrong shape)."""
    record = json.loads(line)
    if not isinstance(record, dict):
        raise TypeError(f"not a JSON object: {line[:80]!r}")
    values: dict[str, int] = {}
    for key, field in _IBCAPTURE_INTS.items():
        value = record.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise TypeError(f"{key} is missing or not a count in {line[:120]!r}")
        values[field] = value
    t_unix, uptime, final = record.get("t_unix"), record.get("uptime_s"), record.get("final")
    if not isinstance(t_unix, (int, float)) or not isinstance(uptime, (int, float)) or not isinstance(final, bool):
        raise TypeError(f"t_unix/uptime_s/final missing in {line[:120]!r}")
    return CapturePoint(float(t_unix), float(uptime), final, CaptureCounters(**values))


def parse_ibcapture_stats(text: str) -> CaptureLog:
    """Every line of an ibcapture stats file; a line that does not parse (e.g. cut by a kill) is listed."""
    points: list[CapturePoint] = []
    bad: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            points.append(parse_ibcapture_line(line))
        except (ValueError, TypeError):  # json.JSONDecodeError is a ValueError
            bad.append(number)
    return CaptureLog(tuple(points), tuple(bad))


def read_ibcapture_stats(path: Path) -> CaptureLog:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise InputError(f"Cannot read ibcapture's stats file {path}: {exc}.",
                         fix="check that ibcapture was started with --stats pointing there and ran.") from exc
    return parse_ibcapture_stats(text)


# tcpdump prints its statistics on SIGUSR1 as one line ("tcpdump: N packets captured, M packets
# received by filter, K packets dropped by kernel[, I packets dropped by interface]") and at exit as
# one figure per line.
_CAPTURED = re.compile(r"(\d+) packets? captured")
_RECEIVED = re.compile(r"(\d+) packets? received by filter")
_KERNEL_DROPS = re.compile(r"(\d+) packets? dropped by kernel")
_IF_DROPS = re.compile(r"(\d+) packets? dropped by interface")


def _tcpdump_counters(text: str) -> CaptureCounters | None:
    captured, received, dropped = _CAPTURED.search(text), _RECEIVED.search(text), _KERNEL_DROPS.search(text)
    if not (captured and received and dropped):
        return None
    if_drops = _IF_DROPS.search(text)
    return CaptureCounters(captured_pkts=int(received.group(1)), dropped_pkts=int(dropped.group(1)),
                           decoded_pkts=int(captured.group(1)),
                           interface_drops=int(if_drops.group(1)) if if_drops else 0)


_TICK = re.compile(r"^ibtick: tick t_unix=(?P<t>[0-9.]+) uptime_s=(?P<up>[0-9.]+)$")


def parse_tcpdump_reports(stderr_text: str) -> CaptureLog:
    """tcpdump's SIGUSR1 reports (in order) and its exit report (final) from its stderr. A report
    after an `ibtick: tick` line (native/src/ibtick.c sends the signals) takes that tick's time: it
    was made after it (signals that arrive together are answered once)."""
    points: list[CapturePoint] = []
    lines = stderr_text.splitlines()
    tick: tuple[float, float] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        ticked = _TICK.match(line)
        if ticked:
            tick = (float(ticked.group("t")), float(ticked.group("up")))
        elif line.startswith("tcpdump: ") and _CAPTURED.search(line):
            counters = _tcpdump_counters(line)
            if counters is not None:
                points.append(CapturePoint(tick[0] if tick else None, tick[1] if tick else None, False, counters))
        elif re.fullmatch(r"\d+ packets? captured", line.strip()):
            block = "\n".join(lines[i:i + 4])
            counters = _tcpdump_counters(block)
            if counters is not None:
                points.append(CapturePoint(None, None, True, counters))
                i += 2
        i += 1
    return CaptureLog(tuple(points))


_ERROR_PREFIXES = ("ibcapture: error: ", "ibtick: error: ", "tcpdump: ")
_NOT_ERRORS = ("tcpdump: listening on", "tcpdump: verbose output suppressed")


def capture_errors(stderr_text: str) -> list[str]:
    """Error lines of either engine, as they wrote them (tcpdump's statistics lines are not errors)."""
    out: list[str] = []
    for line in stderr_text.splitlines():
        if not line.startswith(_ERROR_PREFIXES) or line.startswith(_NOT_ERRORS):
            continue
        if line.startswith("tcpdump: ") and _CAPTURED.search(line):
            continue
        out.append(line)
    return out
