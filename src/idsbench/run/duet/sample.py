"""One duet sample: a DuetSession, one trial, then each side's sample summary (the single sample's
collection: counters, waterfall, verdict, cost) and the pair's record (store/duet.py), written last.

Side a's files go to `cases/<a case>/s<k>/`, side b's to `cases/<b case>/s<k>/`, the pair's monitor.csv
and duet.json to `duet/<pair>/s<k>/`; each side's monitor.csv is its view of the pair's.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from idsbench.accounting import waterfall_of
from idsbench.analysis.sample import resources_in_window
from idsbench.errors import IdsbenchError
from idsbench.plan import Case, DuetPair
from idsbench.run.context import CampaignContext
from idsbench.run.duet.place import slot_of, swapped
from idsbench.run.duet.session import DuetDeps, DuetSession, DuetTrialOutcome
from idsbench.run.sample import SampleRun
from idsbench.run.session import Phase
from idsbench.store.duet import DuetSampleRecord, DuetSideRecord, project_monitor, write_duet_record
from idsbench.store.layout import MONITOR_FILE
from idsbench.store.schema import SampleSummary
from idsbench.store.writers import write_summary
from idsbench.teardown import TeardownStack


class SideSample(SampleRun):
    """A side of a duet sample, collected exactly as a single sample (its `_collect`): the duet session
    and trial fill in what `SampleRun.run` would have."""

    def __init__(self, ctx: CampaignContext, case: Case, index: int, deps: DuetDeps, phase: Phase,
                 case_id: str | None = None):
        super().__init__(ctx, case, index, deps.sample, phase, case_id=case_id)

    def summarize(self, sample_dir: Path, started: float) -> tuple[SampleSummary, list[str]]:
        return self._collect(sample_dir, started)


@dataclass
class DuetSampleOutcome:
    record: DuetSampleRecord
    summaries: dict[str, SampleSummary]
    warnings: list[str] = field(default_factory=list)


class DuetSampleRun:
    def __init__(self, ctx: CampaignContext, pair: DuetPair, index: int, deps: DuetDeps | None = None,
                 phase: Phase = lambda _p: None, case_ids: tuple[str, str] | None = None,
                 replay_s: float | None = None):
        """`case_ids`: store the sides under these planned cases (a duet search's verification runs the
        planned pair at the load it found). `replay_s`: replay this long (the trace looped; a precision
        plan's sample length, run/duet/precision.py), the sides stored under the planned cases."""
        ids = case_ids or (pair.a.case_id, pair.b.case_id)
        if replay_s is not None:
            pair = dataclasses.replace(pair, a=dataclasses.replace(pair.a, duration_s=replay_s, loops=1),
                                       b=dataclasses.replace(pair.b, duration_s=replay_s, loops=1))
        self.ctx, self.pair, self.index, self.phase = ctx, pair, index, phase
        self.deps = deps or DuetDeps()
        self.sides = {name: SideSample(ctx, case, index, self.deps, phase, case_id)
                      for name, case, case_id in (("a", pair.a, ids[0]), ("b", pair.b, ids[1]))}
        self.duet: DuetSession | None = None
        self.outcome: DuetTrialOutcome | None = None

    def run(self) -> DuetSampleOutcome:
        ctx, sd = self.ctx, self.deps.sample
        for side in self.sides.values():
            side.timeline.enter("setup")
        started = sd.wall()
        dirs = {name: ctx.layout.fresh_sample_dir(s.case_id, self.index) for name, s in self.sides.items()}
        pair_dir = ctx.layout.duet_sample_dir(self.pair.pair_id, self.index)
        if pair_dir.exists():
            shutil.rmtree(pair_dir)
        pair_dir.mkdir(parents=True)
        failure: str | None = None
        try:
            with sd.make_stack(ctx.state_dir) as stack:
                self._run_in(stack, dirs, pair_dir)
        except KeyboardInterrupt:
            raise  # the stack is closed; the sample stays incomplete (no duet.json, maybe no summaries)
        except IdsbenchError as exc:
            failure = f"{'/'.join(dict.fromkeys(c.setup for c in self.pair.sides))} setup failed: {exc}"
        self.phase("collect")
        self._fail_with_the_other(failure)
        if (pair_dir / MONITOR_FILE).is_file():
            for name, d in dirs.items():
                project_monitor(pair_dir / MONITOR_FILE, name, d / MONITOR_FILE)
        summaries: dict[str, SampleSummary] = {}
        warnings: list[str] = []
        for name, side in self.sides.items():
            side.timeline.enter("analysis")
            summary, side_warnings = side.summarize(dirs[name], started)
            write_summary(dirs[name], summary)
            summaries[name] = summary
            warnings += [f"side {name}: {w}" for w in side_warnings]
        record = self._record(summaries, dirs)
        write_duet_record(pair_dir, record)
        return DuetSampleOutcome(record, summaries, warnings)

    def _run_in(self, stack: TeardownStack, dirs: dict[str, Path], pair_dir: Path) -> None:
        duet = self.duet = DuetSession(self.ctx, self.pair, self.index, dirs, pair_dir, self.deps, stack,
                                       f"{stack.run_id}-s{self.index}", self.phase,
                                       {n: s.timeline for n, s in self.sides.items()})
        for name, side in self.sides.items():
            side.session = next(s.session for s in duet.sides if s.name == name)
        try:
            if duet.open():
                plan = duet.plan(self.ctx.replay_paths(self.pair.a), pair_dir)
                self.outcome = duet.trial(plan, stop_after=True)
                for t in self.outcome.sides:
                    self.sides[t.side].outcome = t.outcome
        finally:
            duet.close()
            for side in self.sides.values():
                side.timeline.enter("teardown")

    def _fail_with_the_other(self, failure: str | None) -> None:
        """A setup error fails both sides; a side that did not start fails the other one too (a duet
        sample needs both)."""
        facts = {n: s.session.facts if s.session else None for n, s in self.sides.items()}
        for name, side in self.sides.items():
            own = facts[name]
            other_name = "b" if name == "a" else "a"
            other = facts[other_name]
            if own is not None and own.sensor_failure:
                continue
            if failure is not None:
                side.setup_failure = failure
            elif other is not None and other.sensor_failure and self.outcome is None:
                side.setup_failure = f"side {other_name} failed, so the duet sample did not run: {other.sensor_failure}"

    def _record(self, summaries: dict[str, SampleSummary], dirs: dict[str, Path]) -> DuetSampleRecord:
        out = self.outcome
        duet = self.duet
        sides = []
        for name, side in self.sides.items():
            summary = summaries[name]
            trial = out.side(name).outcome if out else None
            cpu = trial.cpu if trial else None
            counters = summary.sensor.counters  # the final counters: what the side's verdict judged
            sent = summary.replay.sent_pkts if summary.replay else 0
            wf = waterfall_of(sent, summary.wire, counters, summary.invisible) if trial else None
            lost = (wf.lost_pkts + max(0, wf.unaccounted_pkts)) if wf else 0
            slot = duet.placement.slots[slot_of(name, self.index)] if duet else None
            iso = out.side(name).isolation_cpu_s if out else None
            peak = resources_in_window(dirs[name] / MONITOR_FILE, 0.0, 0.0).sensor_rss_peak_bytes
            sides.append(DuetSideRecord(
                side=name, case_id=side.case_id, slot=slot_of(name, self.index), cpus=slot.cpus if slot else None,
                quota=slot.quota if slot else None, status=summary.status,
                cpu_s=round(cpu.at_drained - cpu.at_start, 6) if cpu else None,
                isolation_cpu_s=round(iso, 6) if iso is not None else None,
                processed_pkts=counters.decoded_pkts, sent_pkts=sent, lost_pkts=lost,
                exact=summary.status == "ok" and lost == 0 and counters.decoded_pkts == sent and sent > 0,
                mem_peak_bytes=peak or None, labels=summary.labels))
        bad = [s for s in sides if s.status != "ok"]
        return DuetSampleRecord(
            pair_id=self.pair.pair_id, sample=self.index, axis=self.pair.axis, ref=self.pair.ref, cell=self.pair.cell,
            replay_s=self.pair.a.duration_s, swapped=swapped(self.index),
            placement=duet.placement.kind if duet else "", mirror=self.deps.mirror,
            sender_cpus=duet.placement.sender_cpus if duet else (),
            span_start_unix=out.span_start_unix if out else None, span_end_unix=out.span_end_unix if out else None,
            softirq_s=out.softirq_s if out else None,
            sides=tuple(sides), status=bad[0].status if bad else "ok",
            reason=f"side {bad[0].side}: {summaries[bad[0].side].reason}" if bad else None)
