"""Reading suricata.log (and Suricata's console output): readiness, errors, shutdown summary.

Measured with Suricata 7.0.10 (file log, info level):
  [5377 - Suricata-Main] 2026-11-22 05:12:26 Notice: threads: Threads created -> W: 2 FM: 1 FR: 1   Engine started.
  [5377 - Suricata-Main] 2026-11-22 05:12:32 Info: counters: Alerts: 2
  [5377 - Suricata-Main] 2026-11-22 05:12:32 Notice: device: ibtstx1: packets: 572, drops: 0 (0.00%), invalid chksum: 0
The console (stdout) uses the same text without the `[pid - thread] date time` prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

READY_MARKER = "Engine started."
_PREFIX = re.compile(r"^\[\d+ - [^\]]*\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")
_LEVEL = re.compile(r"^(?P<level>Error|Warning|Notice|Info|Config|Perf|Debug|Critical|Alert|Emergency): ")
_DEVICE = re.compile(r"device: (?P<iface>\S+): packets: (?P<pkts>\d+), drops: (?P<drops>\d+)")
_PCAP_TOTAL = re.compile(r"pcap total:(?P<total>\d+) recv:\d+ drop:\d+")
_ALERTS = re.compile(r"counters: Alerts: (?P<alerts>\d+)")
_THREADS = re.compile(r"Threads created -> (?:RX: \d+ )?W: (?P<workers>\d+)")
_RULES_FILE = re.compile(r'from file (?P<file>\S+) at line (?P<line>\d+)')
# Warnings that are expected with our config and say nothing about the run.
_BORING_WARNINGS = (
    "block-size is not large enough",
    "running in SYSTEM mode",
)
MAX_SURFACED = 30


def strip_prefix(line: str) -> str:
    """`[pid - thread] date time Level: module: msg` -> `Level: module: msg`."""
    return _PREFIX.sub("", line.rstrip("\n"))


def level_of(line: str) -> str | None:
    m = _LEVEL.match(strip_prefix(line))
    return m.group("level") if m else None


def is_ready_line(line: str) -> bool:
    return READY_MARKER in line


def error_lines(lines: Iterable[str], warnings: bool = True, limit: int = MAX_SURFACED) -> list[str]:
    """Error (and optionally Warning) lines, prefix stripped, de-duplicated, in order, at most `limit`."""
    wanted = {"Error", "Critical", "Alert", "Emergency"} | ({"Warning"} if warnings else set())
    out: list[str] = []
    seen: set[str] = set()
    for raw in lines:
        text = strip_prefix(raw)
        m = _LEVEL.match(text)
        if not m or m.group("level") not in wanted:
            continue
        if m.group("level") == "Warning" and any(b in text for b in _BORING_WARNINGS):
            continue
        if text not in seen:
            seen.add(text)
            out.append(text)
            if len(out) >= limit:
                break
    return out


def rule_files_in(lines: Iterable[str]) -> list[str]:
    """Rule files named in `error parsing signature ... from file X at line N` lines."""
    files: list[str] = []
    for line in lines:
        m = _RULES_FILE.search(line)
        if m and m.group("file") not in files:
            files.append(m.group("file"))
    return files


@dataclass(frozen=True)
class ShutdownSummary:
    """Totals Suricata logs at exit (None when the line is absent, e.g. killed)."""

    kernel_packets: int | None = None
    kernel_drops: int | None = None
    alerts: int | None = None


def parse_shutdown(lines: Iterable[str]) -> ShutdownSummary:
    """Sum the per-device `packets/drops` lines and read the `Alerts:` line."""
    pkts: dict[str, tuple[int, int]] = {}
    alerts: int | None = None
    for line in lines:
        m = _DEVICE.search(line)
        if m:
            pkts[m.group("iface")] = (int(m.group("pkts")), int(m.group("drops")))
            continue
        m = _ALERTS.search(line)
        if m:
            alerts = int(m.group("alerts"))
    if not pkts:
        return ShutdownSummary(alerts=alerts)
    return ShutdownSummary(
        kernel_packets=sum(p for p, _ in pkts.values()),
        kernel_drops=sum(d for _, d in pkts.values()),
        alerts=alerts,
    )


def pcap_total(lines: Iterable[str]) -> int | None:
    """libpcap's ps_recv at exit, summed over the pcap threads ("pcap: IF: pcap total:N recv:R drop:D", read
    fresh when the thread exits: the stats records hold the value of the last packet-time second, short by
    what arrived after it)."""
    found = [int(m.group("total")) for line in lines if (m := _PCAP_TOTAL.search(line))]
    return sum(found) if found else None


def worker_threads(lines: Iterable[str]) -> int | None:
    """The worker threads Suricata started ("Threads created -> W: 2 FM: 1 FR: 1", 7.0 and 8.0 alike:
    the packet-processing threads of the workers runmode), None when it did not log them."""
    for line in lines:
        found = _THREADS.search(line)
        if found:
            return int(found.group("workers"))
    return None
