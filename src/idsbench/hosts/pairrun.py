"""One sender/sensor pair on the controller: its two agent connections and its samples, in order.

A sample: clocks of both hosts measured; `sample` sent to the sensor agent, which runs the whole
SampleRun there and calls back for the sender's NIC counters and the replay (run on the sender
agent, its times moved onto the sensor's clock); then every artifact of both hosts is copied into
the local sample directory with its sha256 checked, `hosts.json` written, and the summary (with
`pair`) written last. A lost host fails the sample (reason naming the host) and, unless it comes
back on one reconnect attempt, every later sample of this pair; other pairs are not affected.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from idsbench.errors import EnvironmentMissing, IdsbenchError
from idsbench.hosts.inventory import HostEntry, Pair
from idsbench.hosts.link import HostLink, measure_offset
from idsbench.hosts.protocol import (
    Empty,
    FileInfo,
    HostLost,
    NicArgs,
    NicCounters,
    PathArgs,
    ReplayArgs,
    ReplayDone,
    Replayed,
    SampleArgs,
    SampleDone,
    Upcall,
)
from idsbench.plan import Case
from idsbench.store.layout import SUMMARY_FILE, CampaignDir
from idsbench.store.schema import CaseParams, SampleSummary, TraceRecord
from idsbench.store.writers import HostClockRecord, HostsRecord, write_hosts_record, write_summary
from idsbench.teardown import TeardownStack

Opener = Callable[[HostEntry], HostLink]     # connects and opens the campaign on one host
SAMPLE_MARGIN_S = 600.0                      # beyond the spec's own timeouts, before a sample is given up


@dataclass
class SampleResult:
    sample_id: str
    status: str
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class Clock:
    offset_s: float = 0.0       # host − controller
    uncertainty_s: float = 0.0


@dataclass
class PairRunner:
    pair: Pair
    layout: CampaignDir
    campaign: str
    traces: dict[str, TraceRecord]
    stack: TeardownStack
    opener: Opener
    links: dict[str, HostLink] = field(default_factory=dict)   # by role
    lost: IdsbenchError | None = None   # why the pair cannot run: a host lost, or one without idsbench
    stopping: threading.Event = field(default_factory=threading.Event)
    on_phase: Callable[[str], None] = lambda _p: None

    # --- connections ---------------------------------------------------------------------------
    def connect(self) -> None:
        for role, host in (("sensor", self.pair.sensor), ("sender", self.pair.sender)):
            if role not in self.links or not self.links[role].alive:
                self.links[role] = self.opener(host)

    def _reconnect(self) -> bool:
        """One attempt after a loss: the host may have been restarted."""
        for link in self.links.values():
            link.close(timeout_s=2.0)
        self.links = {}
        try:
            self.connect()
        except IdsbenchError as exc:
            # a host reached without (this) idsbench is named as such, not as unreachable
            self.lost = exc if isinstance(exc, (HostLost, EnvironmentMissing)) else HostLost(self._host_of(exc), str(exc))
            return False
        self.lost = None
        return True

    def _host_of(self, exc: Exception) -> str:
        text = str(exc)
        for h in (self.pair.sensor, self.pair.sender):
            if h.name in text:
                return h.name
        return self.pair.label

    def close(self) -> None:
        for link in self.links.values():
            if link.alive:
                try:
                    link.call("remove", PathArgs(path="runs"), Empty, timeout=30)
                except IdsbenchError:
                    pass
            link.close()
        self.links = {}

    # --- samples -------------------------------------------------------------------------------
    def run_sample(self, case: Case, index: int, timeout_s: float) -> SampleResult:
        sample_dir = self.layout.fresh_sample_dir(case.case_id, index)
        started = time.time()
        if self.lost is not None and not self._reconnect():
            return self._failed(case, index, sample_dir, started, self.lost)
        try:
            return self._remote(case, index, sample_dir, started, timeout_s)
        except HostLost as exc:
            if self.stopping.is_set():
                raise KeyboardInterrupt("campaign interrupted") from exc
            self.lost = exc
            return self._failed(case, index, sample_dir, started, exc)
        except IdsbenchError as exc:  # the agent could not run the sample (its error names the host)
            return self._failed(case, index, sample_dir, started, exc)

    def _remote(self, case: Case, index: int, sample_dir: Path, started: float, timeout_s: float) -> SampleResult:
        sensor, sender = self.links["sensor"], self.links["sender"]
        clocks = {"sensor": Clock(*measure_offset(sensor)), "sender": Clock(*measure_offset(sender))}
        shift = clocks["sensor"].offset_s - clocks["sender"].offset_s   # sender clock → sensor clock
        replayed: list[ReplayDone] = []
        sender_lost: list[HostLost] = []

        def upcall(msg: Upcall) -> BaseModel:
            try:
                if msg.op == "nic":
                    return sender.call("nic", msg.args_as(NicArgs), NicCounters)
                if msg.op == "replay":
                    args = msg.args_as(ReplayArgs)
                    got = sender.call("replay", args, ReplayDone, timeout=args.timeout_s + SAMPLE_MARGIN_S)
                    replayed.append(got)
                    # the sample's times are the sensor host's: the sender's record moves onto its clock
                    return Replayed(record=got.record, facts=got.facts).shifted(shift)
            except HostLost as exc:
                sender_lost.append(exc)
                raise
            raise IdsbenchError(f"unknown upcall {msg.op!r}")

        got = sensor.call("sample", SampleArgs(case_id=case.case_id, index=index), SampleDone, upcall=upcall,
                          event=lambda e: self.on_phase(e.name), timeout=timeout_s + SAMPLE_MARGIN_S)
        if sender_lost:
            self.lost = sender_lost[0]
        checksums = self._fetch(sensor, got.dir, got.files, sample_dir, skip={SUMMARY_FILE})
        if replayed and not sender_lost:
            checksums.update(self._fetch(sender, replayed[0].dir, replayed[0].files, sample_dir))
        for link, remote in ((sensor, got.dir), (sender, replayed[0].dir if replayed else None)):
            if remote and link.alive:
                link.call("remove", PathArgs(path=remote), Empty)
        summary = got.summary.model_copy(update={"pair": self.pair.label})
        if sender_lost:
            summary = summary.model_copy(update={"status": "failed", "reason": str(sender_lost[0])})
        self._write_hosts(sample_dir, clocks, checksums, started)
        write_summary(sample_dir, summary)
        return SampleResult(f"{case.case_id}/s{index}", summary.status, summary.reason, list(got.warnings))

    def _fetch(self, link: HostLink, remote_dir: str, files: list[FileInfo], dest: Path,
               skip: set[str] | None = None) -> dict[str, str]:
        out = {}
        for info in files:
            if skip and info.name in skip:
                continue
            link.get(f"{remote_dir}/{info.name}", dest / info.name, info)
            out[info.name] = info.sha256
        return out

    def _write_hosts(self, sample_dir: Path, clocks: dict[str, Clock], checksums: dict[str, str], started: float) -> None:
        write_hosts_record(sample_dir, HostsRecord(
            pair=self.pair.label,
            hosts={role: HostClockRecord(name=h.name, address=h.address,
                                         clock_offset_s=round(clocks[role].offset_s, 6),
                                         clock_uncertainty_s=round(clocks[role].uncertainty_s, 6))
                   for role, h in (("sensor", self.pair.sensor), ("sender", self.pair.sender))},
            artifacts_sha256=checksums, controller_started_unix=started,
            controller_s=round(time.time() - started, 3)))

    def _failed(self, case: Case, index: int, sample_dir: Path, started: float, exc: IdsbenchError) -> SampleResult:
        summary = SampleSummary(
            campaign=self.campaign, case_id=case.case_id, sample=index, case=CaseParams.model_validate(case.params()),
            status="failed", reason=str(exc), started_unix=started, finished_unix=time.time(),
            trace=self.traces[case.trace], pair=self.pair.label)
        write_summary(sample_dir, summary)
        return SampleResult(f"{case.case_id}/s{index}", "failed", str(exc))
