"""tcpreplay driver: argv for a requested rate, and tcpreplay's own final figures parsed.

N replayers ("NX load") are N tcpreplay processes started together by the runner through the
supervisor; this module knows only about one tcpreplay at a time.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from idsbench.spec import Rate
from idsbench.store.schema import Lateness

PRELOAD_LIMIT_BYTES = 1 << 30  # preload captures up to 1 GiB into RAM (no disk reads while sending)
SHORTFALL_TOLERANCE = 0.05  # a sender more than 5% below the requested rate is flagged


@dataclass(frozen=True)
class SecondCount:
    """Packets and bytes one replayer sent in second `t` after the replay start, and (senders that
    keep a schedule) how many packets were due in that second."""

    t: int
    pkts: int
    bytes: int
    due_pkts: int | None = None


@dataclass(frozen=True)
class ReplayResult:
    index: int
    pkts_sent: int
    bytes_sent: int
    failed: int
    truncated: int
    elapsed_s: float
    pps: float
    mbps: float
    requested_pps: float | None
    exit_code: int | None
    planned_s: float | None = None  # how long the replay should take at the requested rate
    # Beyond tcpreplay's report (the native sender fills them; tcpreplay leaves the defaults):
    sender: str = "tcpreplay"
    retries: int = 0  # sends retried after ENOBUFS/EAGAIN (none of them lost)
    lateness: Lateness | None = None  # (store.schema) None: no schedule (topspeed) or not measured
    per_second: tuple[SecondCount, ...] = ()
    cpu_s: float | None = None  # CPU time the replayer used

    def to_json(self) -> dict[str, object]:
        doc = asdict(self)
        doc["per_second"] = [asdict(s) for s in self.per_second]
        return doc

    @property
    def rate_ratio(self) -> float | None:
        """Achieved / requested packet rate (None for topspeed or when nothing was sent)."""
        if not self.requested_pps or self.pps <= 0:
            return None
        return self.pps / self.requested_pps

    @property
    def overrun(self) -> float | None:
        """Fraction longer than planned (0.1 = took 10% longer), None without a plan."""
        if not self.planned_s or self.elapsed_s <= 0:
            return None
        return max(0.0, self.elapsed_s / self.planned_s - 1.0)

    def fell_short(self) -> bool:
        """The sender could not keep the requested rate (more than the tolerance off)."""
        return any(x is not None and x > SHORTFALL_TOLERANCE for x in (self.shortfall, self.overrun))

    @property
    def shortfall(self) -> float | None:
        """Fraction below the requested rate (0.1 = 10% slower), None when nothing was requested."""
        if not self.requested_pps or self.pps <= 0:
            return None
        return max(0.0, 1.0 - self.pps / self.requested_pps)


def tcpreplay_argv(interface: str, pcap: Path, rate: Rate, loops: int, pcap_bytes: int,
                   duration_s: float | None = None) -> list[str]:
    """argv for one replayer. With `duration_s`, the trace loops until that many seconds passed."""
    argv = ["tcpreplay", "-i", interface, "--no-flow-stats"]
    if duration_s is not None:
        argv += ["--loop=0", f"--duration={max(1, round(duration_s))}"]
    else:
        argv.append(f"--loop={loops}")
    if loops > 1 or duration_s is not None or pcap_bytes <= PRELOAD_LIMIT_BYTES:
        argv.append("--preload-pcap")
    if rate.kind == "topspeed":
        argv.append("--topspeed")
    elif rate.kind == "multiplier":
        argv.append(f"--multiplier={rate.value:g}")
    elif rate.kind == "mbps":
        argv.append(f"--mbps={rate.value:g}")
    elif rate.kind == "pps":
        argv.append(f"--pps={rate.value:g}")
    argv.append(str(pcap))
    return argv


def requested_pps(rate: Rate, trace_packets: int, trace_duration_s: float, trace_bytes: int) -> float | None:
    """Packets per second one replayer is asked to send; None for topspeed."""
    recorded = trace_packets / trace_duration_s if trace_duration_s > 0 else None
    value = float(rate.value or 0.0)  # the spec requires one for pps, multiplier and mbps
    if rate.kind == "pps":
        return value
    if rate.kind == "recorded":
        return recorded
    if rate.kind == "multiplier":
        return recorded * value if recorded else None
    if rate.kind == "mbps" and trace_packets:
        avg_frame = trace_bytes / trace_packets
        return value * 1e6 / 8 / avg_frame
    return None


_ACTUAL = re.compile(r"Actual:\s+(\d+)\s+packets\s+\((\d+)\s+bytes\)\s+sent in\s+([\d.]+)\s+seconds")
_RATED = re.compile(r"Rated:\s+([\d.]+)\s+Bps,\s+([\d.]+)\s+Mbps,\s+([\d.]+)\s+pps")
_FAILED = re.compile(r"Failed packets:\s+(\d+)")
_TRUNCATED = re.compile(r"Truncated packets:\s+(\d+)")


def planned_seconds(packets: int, requested: float | None, duration_s: float | None) -> float | None:
    """Planned replay time: the fixed duration, or packets at the requested rate."""
    if duration_s is not None:
        return duration_s
    if requested and packets:
        return packets / requested
    return None


def parse_output(text: str, *, index: int, requested: float | None, exit_code: int | None,
                 planned_s: float | None = None) -> ReplayResult:
    """Parse tcpreplay's final report. Missing figures (a replayer that died) count as 0."""
    actual = _ACTUAL.search(text)
    rated = _RATED.search(text)
    failed = _FAILED.search(text)
    truncated = _TRUNCATED.search(text)
    return ReplayResult(
        index=index,
        pkts_sent=int(actual.group(1)) if actual else 0,
        bytes_sent=int(actual.group(2)) if actual else 0,
        elapsed_s=float(actual.group(3)) if actual else 0.0,
        mbps=float(rated.group(2)) if rated else 0.0,
        pps=float(rated.group(3)) if rated else 0.0,
        failed=int(failed.group(1)) if failed else 0,
        truncated=int(truncated.group(1)) if truncated else 0,
        requested_pps=requested,
        exit_code=exit_code,
        planned_s=planned_s,
    )


def fatal_message(text: str) -> str | None:
    """tcpreplay's 'Fatal Error' explanation, if it printed one."""
    match = re.search(r"Fatal Error[^\n]*\n(.*)", text)
    return match.group(1).strip() if match else None
