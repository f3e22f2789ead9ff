"""Driver for `ibreplay`, the native replayer (`native/src/ibreplay.c`): argv and its JSON report.

One ibreplay process serves every replayer of a sample: replayer i is thread i, sending the i-th
`--pcap` (the rewriter's per-replayer copy) pinned round-robin to the sender CPUs, all from one
start instant. Each packet has an absolute deadline (start + trace offset / multiplier, index /
pps, or cumulative bytes / mbps), so lateness never accumulates; the report gives per replayer what
tcpreplay reports plus retries, the lateness distribution, a per-second series and its CPU time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from idsbench.spec import Rate
from idsbench.store.schema import Lateness
from idsbench.traffic.replay import ReplayResult, SecondCount

PROGRAM = "ibreplay"
SENDER_NAME = "native"


@dataclass(frozen=True)
class NativeOptions:
    """Tuning of the native replayer (defaults measured on a shared 2-core VM: see bench_sender)."""

    batch: int = 64  # most packets per sendmmsg call (only packets already due are batched)
    spin_us: float = 20.0  # busy-wait this long before a deadline instead of sleeping
    rt_priority: int = 10  # SCHED_FIFO while the replayer keeps its schedule (0: never)
    start_delay_ms: float = 50.0  # between loading the traces and the common start instant
    qdisc_bypass: bool = True


def rate_arg(rate: Rate) -> str:
    """The `--rate` value for a spec rate: recorded, topspeed, multiplier=X, pps=X, mbps=X."""
    if rate.kind in ("recorded", "topspeed"):
        return rate.kind
    assert rate.value is not None  # the spec validates it
    return f"{rate.kind}={float(rate.value)!r}"


def ibreplay_argv(program: Path | str, interface: str, pcaps: Sequence[Path], rate: Rate, loops: int,
                  duration_s: float | None = None, cpus: Sequence[int] | None = None,
                  options: NativeOptions = NativeOptions()) -> list[str]:
    """argv for one ibreplay process sending `pcaps` (one per replayer) out of `interface`.

    With `duration_s` every replayer loops its trace until that many seconds passed (`loops` is
    then ignored, as tcpreplay's --duration with --loop=0)."""
    if not pcaps:
        raise ValueError("ibreplay needs at least one pcap")
    argv = [str(program), "--iface", interface]
    for pcap in pcaps:
        argv += ["--pcap", str(pcap)]
    argv += ["--rate", rate_arg(rate)]
    if duration_s is not None:
        argv += ["--duration", repr(float(duration_s))]
    else:
        argv += ["--loops", str(int(loops))]
    if cpus:
        argv += ["--cpus", ",".join(str(c) for c in cpus)]
    argv += ["--batch", str(options.batch), "--spin-us", f"{options.spin_us:g}",
             "--rt-priority", str(options.rt_priority), "--start-delay-ms", f"{options.start_delay_ms:g}"]
    if not options.qdisc_bypass:
        argv.append("--no-qdisc-bypass")
    return argv


@dataclass(frozen=True)
class NativeReport:
    """ibreplay's report. `replayers` holds one result per expected replayer (zeros for a run
    that printed no report); `messages` are its other output lines (errors, warnings)."""

    replayers: tuple[ReplayResult, ...]
    start_unix: float | None
    interrupted: bool
    cpu_s: float | None
    rt_demotions: int
    messages: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """The program printed its report (it may still have been interrupted)."""
        return self.start_unix is not None


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class _Lateness(_Doc):
    p50: float
    p99: float
    max: float


class _Second(_Doc):
    t: int
    pkts: int
    bytes: int
    due_pkts: int | None = None


class _Replayer(_Doc):
    index: int
    pkts_sent: int
    bytes_sent: int
    failed: int
    elapsed_s: float
    pps: float
    mbps: float
    retries: int
    lateness_us: _Lateness | None = None
    per_second: tuple[_Second, ...] = ()
    cpu_s: float
    warning: str | None = None
    rt_demotions: int = 0


class _Report(_Doc):
    """ibreplay's JSON report (native/src/ibreplay.c)."""

    start_unix: float
    interrupted: bool
    cpu_s: float
    replayers: tuple[_Replayer, ...]


def _find_document(text: str) -> tuple[_Report | None, list[str]]:
    """The JSON report inside `text` (stdout and stderr may share a file), and the other lines."""
    start = text.find('{"tool": "ibreplay"')
    if start < 0:
        return None, [line for line in text.splitlines() if line.strip()]
    try:
        doc, end = json.JSONDecoder().raw_decode(text, start)
        report = _Report.model_validate(doc)
    except ValueError:  # a ValidationError too
        return None, [line for line in text.splitlines() if line.strip() and not line.startswith(("{", " "))]
    rest = text[:start] + text[end:]
    return report, [line for line in rest.splitlines() if line.strip()]


def _result(r: _Replayer, *, requested: float | None, exit_code: int | None,
            planned_s: float | None) -> ReplayResult:
    late = r.lateness_us
    return ReplayResult(
        index=r.index, pkts_sent=r.pkts_sent, bytes_sent=r.bytes_sent, failed=r.failed, truncated=0,
        elapsed_s=r.elapsed_s, pps=r.pps, mbps=r.mbps, requested_pps=requested, exit_code=exit_code,
        planned_s=planned_s, sender=SENDER_NAME, retries=r.retries,
        lateness=Lateness(p50_ms=late.p50 / 1e3, p99_ms=late.p99 / 1e3, max_ms=late.max / 1e3)
        if late else None,  # ibreplay reports µs
        per_second=tuple(SecondCount(s.t, s.pkts, s.bytes, s.due_pkts) for s in r.per_second),
        cpu_s=r.cpu_s,
    )


def parse_report(text: str, *, replayers: int, requested: float | None, exit_code: int | None,
                 planned_s: float | None = None) -> NativeReport:
    """Parse ibreplay's output. Without a report (a setup error) every replayer counts 0 sent."""
    doc, messages = _find_document(text)
    if doc is None:
        empty = tuple(ReplayResult(index=i, pkts_sent=0, bytes_sent=0, failed=0, truncated=0, elapsed_s=0.0,
                                   pps=0.0, mbps=0.0, requested_pps=requested, exit_code=exit_code,
                                   planned_s=planned_s, sender=SENDER_NAME) for i in range(replayers))
        return NativeReport(empty, None, False, None, 0, tuple(messages))
    results = tuple(_result(r, requested=requested, exit_code=exit_code, planned_s=planned_s)
                    for r in doc.replayers)
    warnings = [f"replayer {r.index}: {r.warning}" for r in doc.replayers if r.warning]
    return NativeReport(results, doc.start_unix, doc.interrupted, doc.cpu_s,
                        sum(r.rt_demotions for r in doc.replayers), tuple(messages + warnings))


def fatal_message(text: str) -> str | None:
    """ibreplay's one-line setup error (`ibreplay: ...`), if it printed one."""
    for line in text.splitlines():
        if line.startswith("ibreplay: ") and "replayer " not in line[:20]:
            return line[len("ibreplay: "):].strip()
    return None
