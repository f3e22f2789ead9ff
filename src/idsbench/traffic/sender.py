"""The sender seam: the runner replays a sample's traces through a `Sender` picked by name.

    sender = get_sender("native")            # or "tcpreplay"
    job = ReplayJob(interface, pcaps, rate, loops, duration_s, trace_packets, trace_duration_s,
                    trace_bytes, cpus)
    run = run_senders(sup, sender, job, sample_dir, netns=wire.sender_ns, timeout_s=...)
    run.results   # one ReplayResult per replayer, index order

A sender turns a job into processes (`processes`: tcpreplay = one per replayer, native = one for
all) and their outputs back into results (`results`). `run_senders` starts them through the
supervisor (so they are torn down like every child), waits, stops and parses.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from idsbench import native
from idsbench.errors import SpecError
from idsbench.proc import Supervisor, wait_all
from idsbench.spec import Rate
from idsbench.store.layout import REPLAY_NATIVE_FILE, replay_output
from idsbench.traffic import native_replay, replay
from idsbench.traffic.replay import ReplayResult


@dataclass(frozen=True)
class ReplayJob:
    """What to send: one pcap per replayer (index order), at `rate`, `loops` times or for `duration_s`."""

    interface: str
    pcaps: tuple[Path, ...]
    rate: Rate
    loops: int
    duration_s: float | None
    trace_packets: int  # of one copy of the trace
    trace_duration_s: float
    trace_bytes: int
    cpus: tuple[int, ...] | None = None  # sender CPUs (affinity; the native sender pins threads)

    @property
    def requested_pps(self) -> float | None:
        """Packets per second each replayer is asked for (None for topspeed)."""
        return replay.requested_pps(self.rate, self.trace_packets, self.trace_duration_s, self.trace_bytes)

    @property
    def planned_s(self) -> float | None:
        return replay.planned_seconds(self.trace_packets * self.loops, self.requested_pps, self.duration_s)


@dataclass(frozen=True)
class SenderProcess:
    name: str  # supervisor name, e.g. tcpreplay-0 / ibreplay
    argv: tuple[str, ...]
    output: str  # file name (in the sample directory) for its stdout and stderr
    replayers: tuple[int, ...]  # the replayer indices it serves


@dataclass(frozen=True)
class SenderOutput:
    text: str
    exit_code: int | None


class Sender(Protocol):
    @property
    def name(self) -> str: ...

    def processes(self, job: ReplayJob) -> list[SenderProcess]: ...

    def results(self, job: ReplayJob, outputs: Sequence[SenderOutput]) -> list[ReplayResult]:
        """One result per replayer, from the outputs of `processes(job)` (same order)."""
        ...

    def failure(self, output: SenderOutput) -> str | None:
        """Why a process failed (its own message), None if it did not."""
        ...

    def start_unix(self, outputs: Sequence[SenderOutput]) -> float | None:
        """The schedule's start instant (wall clock) if the sender reports it."""
        ...


class TcpreplaySender:
    """N tcpreplay processes ("NX load"), each timing its packets from the previous one."""

    name = "tcpreplay"

    def processes(self, job: ReplayJob) -> list[SenderProcess]:
        return [SenderProcess(f"tcpreplay-{i}", tuple(replay.tcpreplay_argv(
                    job.interface, pcap, job.rate, job.loops, job.trace_bytes, job.duration_s)),
                    replay_output(i), (i,))
                for i, pcap in enumerate(job.pcaps)]

    def results(self, job: ReplayJob, outputs: Sequence[SenderOutput]) -> list[ReplayResult]:
        return [replay.parse_output(out.text, index=i, requested=job.requested_pps, exit_code=out.exit_code,
                                    planned_s=job.planned_s) for i, out in enumerate(outputs)]

    def failure(self, output: SenderOutput) -> str | None:
        if output.exit_code in (0, None):
            return None
        return replay.fatal_message(output.text) or f"exit status {output.exit_code}"

    def start_unix(self, outputs: Sequence[SenderOutput]) -> float | None:
        return None


@dataclass(frozen=True)
class NativeSender:
    """One ibreplay process, one thread per replayer, absolute schedule (native/src/ibreplay.c)."""

    options: native_replay.NativeOptions = field(default_factory=native_replay.NativeOptions)
    program: Path | None = None  # default: built (once) by idsbench.native
    name: str = native_replay.SENDER_NAME

    def processes(self, job: ReplayJob) -> list[SenderProcess]:
        program = self.program or native.program(native_replay.PROGRAM)
        argv = native_replay.ibreplay_argv(program, job.interface, job.pcaps, job.rate, job.loops,
                                           job.duration_s, job.cpus, self.options)
        return [SenderProcess("ibreplay", tuple(argv), REPLAY_NATIVE_FILE, tuple(range(len(job.pcaps))))]

    def results(self, job: ReplayJob, outputs: Sequence[SenderOutput]) -> list[ReplayResult]:
        (out,) = outputs
        report = native_replay.parse_report(out.text, replayers=len(job.pcaps), requested=job.requested_pps,
                                            exit_code=out.exit_code, planned_s=job.planned_s)
        return list(report.replayers)

    def failure(self, output: SenderOutput) -> str | None:
        if output.exit_code in (0, None):
            return None
        return native_replay.fatal_message(output.text) or f"exit status {output.exit_code}"

    def start_unix(self, outputs: Sequence[SenderOutput]) -> float | None:
        (out,) = outputs
        return native_replay.parse_report(out.text, replayers=0, requested=None, exit_code=None).start_unix


SENDERS: dict[str, type[TcpreplaySender | NativeSender]] = {
    TcpreplaySender.name: TcpreplaySender, native_replay.SENDER_NAME: NativeSender}


def get_sender(name: str, *, qdisc_bypass: bool = True) -> Sender:
    """The sender `name`; `qdisc_bypass=False` keeps the native sender's packets on the qdisc path
    (an emulated impairment on the sender's interface acts there)."""
    if name == native_replay.SENDER_NAME:
        return NativeSender(native_replay.NativeOptions(qdisc_bypass=qdisc_bypass))
    try:
        return SENDERS[name]()
    except KeyError:
        raise SpecError(f"unknown sender {name!r}.", fix=f"use one of: {', '.join(SENDERS)}.") from None


@dataclass(frozen=True)
class SenderRun:
    results: tuple[ReplayResult, ...]
    start_unix: float  # when the processes were started
    end_unix: float
    schedule_start_unix: float | None  # the sender's own start instant (native: the first deadline)
    finished: bool  # every process ended before the timeout
    failures: tuple[str, ...]  # "<process>: <why>" for each process that failed
    outputs: tuple[Path, ...]
    why_failed: dict[int, str] = field(default_factory=dict)  # replayer -> its process's <why>


def run_senders(sup: Supervisor, sender: Sender, job: ReplayJob, out_dir: Path, *, netns: str | None,
                timeout_s: float | None, cgroup_procs: Sequence[Path] = ()) -> SenderRun:
    """Start the sender's processes (in `netns`, on `job.cpus`, in the replayers' cgroup), wait, stop
    them and parse."""
    procs = sender.processes(job)
    start = time.time()
    children = [sup.start(list(p.argv), name=p.name, stdout=out_dir / p.output, netns=netns,
                          cpus=list(job.cpus) if job.cpus else None, cgroup_procs=cgroup_procs) for p in procs]
    finished = wait_all(children, timeout_s)
    end = time.time()
    outputs: list[SenderOutput] = []
    failures: list[str] = []
    why_failed: dict[int, str] = {}
    for proc, child in zip(procs, children):
        sup.stop(child, timeout=5.0)
        out = SenderOutput((out_dir / proc.output).read_text(errors="replace"), child.returncode)
        outputs.append(out)
        why = sender.failure(out)
        if why and finished:
            failures.append(f"{proc.name}: {why}")
            why_failed.update(dict.fromkeys(proc.replayers, why))
    return SenderRun(tuple(sender.results(job, outputs)), start, end, sender.start_unix(outputs), finished,
                     tuple(failures), tuple(out_dir / p.output for p in procs), why_failed)
