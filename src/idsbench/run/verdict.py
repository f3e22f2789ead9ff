"""A sample's verdict from what was recorded (pure: unit-tested with recorded inputs).

Statuses (docs/sample.md, "Sample verdicts"):
- `ok`          every check passed; only ok samples enter medians.
- `invalid`     the accounting does not add up (the reason names the equation and both sides), or the
                sensor received nothing while the packets vanished where the host cannot count.
- `failed`      the sensor, a replayer or the setup died or never started; the reason names the
                process and its exit status or signal.
- `oom`         the sensor was OOM-killed.
- `incomplete`  the run was cut short or its event log is damaged (counters may be short).
Labels (e.g. `sender-off`, `undrained`, `emulated`) and warnings never change the status.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import TypeAdapter

from idsbench.infra.cgroups import MemoryEvents, starved_fix
from idsbench.sensors.base import Counters
from idsbench.store.schema import PerSecond
from idsbench.store.waterfall import Waterfall

RATE_TOLERANCE = 0.05  # a replayer more than 5% off its requested rate (either way) is flagged
SCHEDULE_SLACK_PKTS = 5  # per-second differences this small are boundary jitter, not a missed rate


@dataclass(frozen=True)
class ReplayerFacts:
    index: int
    program: str
    exit_code: int | None     # negative: killed by that signal; None: never reaped
    pkts_sent: int
    pps: float
    requested_pps: float | None
    elapsed_s: float
    planned_s: float | None
    timed_out: bool = False
    per_second: tuple[PerSecond, ...] = ()  # sent (and, with a schedule, due) packets per second

    def to_json(self) -> dict[str, object]:
        """Plain JSON (what a remote sender host answers with; hosts.protocol carries it the same way)."""
        doc: dict[str, object] = _FACTS.dump_python(self, mode="json")
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, object]) -> ReplayerFacts:
        return _FACTS.validate_python(doc)


_FACTS = TypeAdapter(ReplayerFacts)


@dataclass(frozen=True)
class SampleFacts:
    """Everything the verdict looks at."""

    engine: str
    expected_pkts: int | None               # replayers × loops × trace packets (None with duration_s)
    replayers: tuple[ReplayerFacts, ...] = ()
    sensor_failure: str | None = None      # why the sensor did not run through (exit, signal, timeout)
    setup_failure: str | None = None
    oom: bool = False
    memory: MemoryEvents | None = None      # the sensor group's memory state when it failed
    memory_starved: bool = False            # not ready while its group sat at its memory limit
    interrupted: bool = False
    counters: Counters | None = None
    waterfall: Waterfall | None = None
    wire_impaired: bool = False             # loss on the wire is expected (netem)
    drained: bool = True
    stuck: bool = False                     # it held a backlog and processed nothing for a while
    event_log_damage: str | None = None


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str | None = None
    labels: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())


def describe_exit(program: str, code: int | None) -> str:
    if code is None:
        return f"{program} did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"{program} was killed by {name}"
    return f"{program} exited with status {code}"


def judge(f: SampleFacts) -> Verdict:
    labels: list[str] = []
    warnings: list[str] = []
    labels += _sender_labels(f, warnings)
    if f.oom:
        return Verdict("oom", oom_reason(f), tuple(labels), tuple(warnings))
    if f.memory_starved and f.memory is not None:
        return Verdict("oom", starved_reason(f, f.memory), tuple(labels), tuple(warnings))
    if f.setup_failure:
        return Verdict("failed", f.setup_failure, tuple(labels), tuple(warnings))
    if f.sensor_failure:
        return Verdict("failed", f.sensor_failure, tuple(labels), tuple(warnings))
    for r in f.replayers:
        if r.timed_out:
            return Verdict("failed", f"replayer {r.index} ({r.program}) did not finish in time "
                           "(timing.replay_timeout_s)", tuple(labels), tuple(warnings))
        if r.exit_code != 0:
            return Verdict("failed", f"replayer {r.index}: {describe_exit(r.program, r.exit_code)}",
                           tuple(labels), tuple(warnings))
    if f.interrupted:
        return Verdict("incomplete", "the run was interrupted", tuple(labels), tuple(warnings))
    if f.counters is None or f.waterfall is None:
        return Verdict("failed", f"{f.engine} left no counters", tuple(labels), tuple(warnings))
    if f.event_log_damage:
        return Verdict("incomplete", f.event_log_damage, tuple(labels), tuple(warnings))
    if f.stuck:
        w = f.waterfall
        return Verdict("invalid", f"captured {f.counters.captured_pkts} != decoded {f.counters.decoded_pkts} + "
                       f"dropped {f.counters.dropped_pkts}: unprocessed {w.unprocessed_pkts} while the sensor "
                       "stood idle (it stopped processing with packets in its ring)", tuple(labels), tuple(warnings))
    if not f.drained or f.waterfall.unprocessed_pkts > 0:  # drained: the drain read counters that lagged
        labels.append("undrained")
        warnings.append(f"{f.waterfall.unprocessed_pkts} packets were captured but still unprocessed when " + (
            "the sensor was stopped (counted as unprocessed_pkts); raise timing.drain_timeout_s" if not f.drained else
            "the sensor was stopped, although the counters the drain read showed none left (they lagged behind "
            "its capture: a slow or emulated sensor); counted as unprocessed_pkts"))
    problem = accounting_problem(f) or nothing_received(f)
    if problem:
        return Verdict("invalid", problem, tuple(labels), tuple(warnings))
    if f.waterfall.unaccounted_pkts > 0:
        labels.append("unaccounted")
        warnings.append(f"{f.waterfall.unaccounted_pkts} packets were lost where the host cannot count "
                        f"({', '.join(f.waterfall.invisible)})")
    return Verdict("ok", None, tuple(labels), tuple(warnings))


def oom_reason(f: SampleFacts) -> str:
    """The OOM kill, with the limit, the peak and the events when they were read."""
    if f.memory is None:
        return f"{f.engine} was killed by the OOM killer (its memory limit was too small)"
    return f"{f.engine} was killed by the OOM killer at its memory limit ({f.memory.describe()}); {starved_fix(f.memory)}"


def starved_reason(f: SampleFacts, memory: MemoryEvents) -> str:
    """Never ready while its group sat at its limit: memory starvation, named as such."""
    what = f.sensor_failure or f"{f.engine} did not start"
    what = what.split(". Errors from ")[0]  # the engine's log excerpt says nothing about memory
    if "memory cgroup sat at its limit" in what:  # the starvation watch ended the wait: it says it all
        return f"{f.engine} ran out of memory: {what}; {starved_fix(memory)}"
    return f"{f.engine} ran out of memory ({memory.describe()}): {what}; {starved_fix(memory)}"


def accounting_problem(f: SampleFacts) -> str | None:
    """The first accounting equation that does not hold, with both sides; None when all hold."""
    c, w = f.counters, f.waterfall
    assert c is not None and w is not None
    sent = w.sent
    if f.expected_pkts is not None and sent != f.expected_pkts:
        return (f"sent {sent} != replayers × loops × trace packets = {f.expected_pkts}: a replayer did "
                "not send the whole trace")
    if w.unprocessed_pkts < 0:
        return (f"captured {c.captured_pkts} < decoded {c.decoded_pkts} + dropped {c.dropped_pkts}: "
                f"{f.engine}'s counters do not add up")
    if w.unaccounted_pkts < 0 or (w.unaccounted_pkts > 0 and not w.invisible):
        return (f"sent {sent} != decoded {c.decoded_pkts} + unprocessed {w.unprocessed_pkts} + bypassed "
                f"{w.bypassed_pkts - c.bypassed_local_pkts} + losses "
                f"(sender {w.loss_sender_pkts}, wire {w.loss_wire_pkts}, NIC {w.loss_nic_pkts}, softnet "
                f"{w.loss_softnet_pkts}, capture {w.loss_capture_pkts}): {w.unaccounted_pkts:+d} packets "
                "unaccounted for")
    if w.loss_wire_pkts and not f.wire_impaired:
        return (f"the sender interface transmitted {sent - w.loss_sender_pkts} packets but the sensor "
                f"side received {sent - w.loss_sender_pkts - w.loss_wire_pkts}: {w.loss_wire_pkts} lost "
                "on an unimpaired wire")
    # a kernel-side bypass (idsbench.bypass) drops a bypassed flow's packets before the capture, by design
    filtered = w.bypassed_pkts - c.bypassed_local_pkts
    if w.lost_pkts == 0 and w.unprocessed_pkts == 0 and w.unaccounted_pkts == 0 and c.decoded_pkts + filtered != sent:
        return f"no drops, but decoded {c.decoded_pkts}" + (f" + bypassed {filtered}" if filtered else "") + \
            f" != sent {sent}"
    return None


def nothing_received(f: SampleFacts) -> str | None:
    """A sample whose sensor received none of what was sent while the packets vanished where the host
    cannot count (`invisible`: a macvtap, a VF, a guest) measures the path, not the sensor: never `ok`.
    Everything lost at a counted point (a capture ring overrun, an impaired wire) is a measurement."""
    c, w = f.counters, f.waterfall
    assert c is not None and w is not None
    if w.sent <= 0 or c.captured_pkts > 0 or c.decoded_pkts > 0 or w.unaccounted_pkts <= 0:
        return None
    return (f"the sensor received none of the {w.sent} packets sent: {w.unaccounted_pkts} lost where the host "
            f"cannot count ({', '.join(w.invisible)}); the path to it delivers nothing (check the guest's "
            "capture interface and, for a VF, that the NIC's switch forwards the frames to it)")


def _sender_labels(f: SampleFacts, warnings: list[str]) -> list[str]:
    """`sender-off` when a replayer missed its schedule: by the second where it reports one (sent
    against due, the native sender), else by its overall rate and duration (tcpreplay)."""
    misses = [m for r in f.replayers if r.exit_code == 0 and not r.timed_out
              for m in [_schedule_miss(r) if _has_schedule(r) else _overall_miss(r)] if m]
    if not misses:
        return []
    worst = max(misses, key=lambda m: m[0])
    warnings.append(
        f"{len(misses)} of {len(f.replayers)} replayers missed the requested rate by more than "
        f"{RATE_TOLERANCE:.0%} (worst: {worst[1]}); fewer replayers, a lower rate, "
        "the native sender or a quieter host give a cleaner load")
    return ["sender-off"]


def _has_schedule(r: ReplayerFacts) -> bool:
    return any(s.due_packets is not None for s in r.per_second)


def _schedule_miss(r: ReplayerFacts) -> tuple[float, str] | None:
    """How far the replayer fell behind (or ran ahead of) its schedule at each second's end:
    packets due so far minus packets sent so far, flagged beyond the tolerance of one second's
    packets (and a few packets, so one packet across a second boundary is not a miss);
    (deviation in seconds of traffic, description) or None."""
    seconds = sorted(r.per_second, key=lambda s: s.t)
    total_due = sum(s.due_packets or 0 for s in seconds)
    if not seconds or total_due == 0:
        return None
    per_second = total_due / len(seconds)
    due = sent = 0
    worst: tuple[int, float] = (0, 0.0)
    for s in seconds:
        due, sent = due + (s.due_packets or 0), sent + s.packets
        if abs(due - sent) > abs(worst[0]):
            worst = (due - sent, s.t)
    gap, t = worst
    if abs(gap) <= max(RATE_TOLERANCE * per_second, SCHEDULE_SLACK_PKTS):
        return None
    lag = abs(gap) / per_second
    where = "behind" if gap > 0 else "ahead of"
    return lag, (f"replayer {r.index} too {'slow' if gap > 0 else 'fast'}: {abs(gap):,} packets {where} its "
                 f"schedule by the end of second {t:g} ({lag:.2f} s of its traffic)")


def _overall_miss(r: ReplayerFacts) -> tuple[float, str] | None:
    ratio = r.pps / r.requested_pps if r.requested_pps and r.pps > 0 else None
    late = r.elapsed_s / r.planned_s if r.planned_s and r.elapsed_s > 0 else None
    deviations = [abs(x - 1.0) for x in (ratio, late) if x is not None]
    if not deviations or max(deviations) <= RATE_TOLERANCE:
        return None
    direction = "slow" if (ratio is not None and ratio < 1) or (late is not None and late > 1) else "fast"
    return max(deviations), (f"replayer {r.index} too {direction}, {r.pps:.0f} pps in {r.elapsed_s:.2f} s "
                             f"for {r.requested_pps or 0:.0f} pps in {r.planned_s or 0:.2f} s")
