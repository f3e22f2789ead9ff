"""The replay step of a sample: the case's sender (`traffic.sender`: tcpreplay or the native
replayer) started on the sender side, waited for, its own reports turned into typed records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from idsbench.plan import Case
from idsbench.proc import Supervisor
from idsbench.run.verdict import ReplayerFacts
from idsbench.store.schema import PerSecond, ReplayerRecord, ReplayRecord, TraceRecord
from idsbench.traffic.replay import ReplayResult
from idsbench.traffic.sender import ReplayJob, get_sender, run_senders
from idsbench.wire.netns import WireEnds


@dataclass(frozen=True)
class ReplayPlan:
    case: Case
    trace: TraceRecord
    pcaps: tuple[Path, ...]        # one per replayer
    interface: str
    netns: str
    cpus: tuple[int, ...]
    out_dir: Path
    timeout_s: float
    cgroup_procs: tuple[Path, ...] = ()   # the replayers' own cgroup (their CPU is measured apart)
    impaired: bool = False                # an emulated impairment on the sender's interface

    @property
    def job(self) -> ReplayJob:
        """What the sender seam runs (its rate maths: requested_pps, planned_s)."""
        case, trace = self.case, self.trace
        return ReplayJob(self.interface, self.pcaps, case.rate, case.loops, case.duration_s, trace.packets,
                         trace.duration_s, trace.bytes, cpus=self.cpus or None)


@dataclass(frozen=True)
class ReplayOutcome:
    record: ReplayRecord
    facts: tuple[ReplayerFacts, ...]


class Sender(Protocol):
    """Runs one sample's replayers to completion (or the timeout) and reports what they sent."""

    def replay(self, sup: Supervisor, plan: ReplayPlan) -> ReplayOutcome: ...


def replay_plan(case: Case, trace: TraceRecord, pcaps: Sequence[Path], wire: WireEnds, cpus: Sequence[int],
                out_dir: Path, timeout_s: float, cgroup_procs: Sequence[Path] = (),
                impaired: bool = False) -> ReplayPlan:
    return ReplayPlan(case, trace, tuple(pcaps), wire.sender_if, wire.sender_ns, tuple(cpus), out_dir, timeout_s,
                      tuple(cgroup_procs), impaired)


class TrafficSender:
    """The sender the case names, through the sender seam of `traffic.sender`."""

    def replay(self, sup: Supervisor, plan: ReplayPlan) -> ReplayOutcome:
        sender = get_sender(plan.case.sender, qdisc_bypass=not plan.impaired)
        job = plan.job
        run = run_senders(sup, sender, job, plan.out_dir, netns=plan.netns, timeout_s=plan.timeout_s,
                          cgroup_procs=plan.cgroup_procs)
        why = {i: w.strip() for i, w in run.why_failed.items() if not w.startswith("exit status")}  # verdict names these
        program = "tcpreplay" if sender.name == "tcpreplay" else "ibreplay"
        records = [_record(r) for r in run.results]
        facts = tuple(ReplayerFacts(r.index, f"{program} ({why[r.index]})" if r.index in why else program,
                                    r.exit_code, r.pkts_sent, r.pps, r.requested_pps, r.elapsed_s, r.planned_s,
                                    timed_out=not run.finished, per_second=rec.per_second)
                      for r, rec in zip(run.results, records))
        start = run.schedule_start_unix or run.start_unix
        record = ReplayRecord(
            start_unix=start, end_unix=run.end_unix, sent_pkts=sum(r.pkts_sent for r in records),
            sent_bytes=sum(r.bytes_sent for r in records), failed_pkts=sum(r.failed for r in records),
            requested_pps_per_replayer=job.requested_pps, planned_s=job.planned_s, sender=sender.name,
            replayers=tuple(records))
        return ReplayOutcome(record, facts)


def _record(r: ReplayResult) -> ReplayerRecord:
    return ReplayerRecord(
        index=r.index, pkts_sent=r.pkts_sent, bytes_sent=r.bytes_sent, failed=r.failed, truncated=r.truncated,
        elapsed_s=r.elapsed_s, pps=r.pps, mbps=r.mbps, requested_pps=r.requested_pps, exit_code=r.exit_code,
        planned_s=r.planned_s, lateness=r.lateness,
        per_second=tuple(PerSecond(t=s.t, packets=s.pkts, bytes=s.bytes, due_packets=s.due_pkts) for s in r.per_second))


