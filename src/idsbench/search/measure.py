"""The search's measurer: a trial in, a measurement out. FD.io CSIT's MLRsearch splits a search into a
controller (it chooses each trial's load and duration and decides the bounds: search/mlr.py) and a
measurer; this is idsbench's measurer.

One frozen dataclass per concept, as the MLRsearch package keeps them:
- `Trial`: what is measured — the axis value (None: the sender at full speed, the ceiling trial) and
  the intended duration;
- `Allocation`: the cores the sensor had in it and whether a CPU quota gave them (the run facts);
- `Carry`: what one warm trial leaves to the next — the rewriter's address block its flows came from,
  the packets its capture counter had not counted yet, why the warm sensor is gone once it died;
- `Measurement`: the trial's record (`TrialRecord`, what search.json stores) and what it tells the
  controller (`mlr.TrialCount`).

`Measurer.trial(Trial) -> Measurement` runs one trial on the repeat's warm sensor (`start()` opens it)
or on a fresh sensor; as MLRsearch's `AbstractMeasurer`, `measure(duration, load)` maps the load onto
the axis, repeats a trial whose accounting did not close (`mlr.ACCOUNTING_RETRIES`), stops at the
trial budget (`mlr.TrialBudgetSpent`) and keeps every result it gave the controller (`measured`: the
bounds of a search stopped early are computed from them, `mlr.bounds_of`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from MLRsearch import AbstractMeasurer, MeasurementResult

from idsbench.accounting import waterfall_of
from idsbench.errors import SensorFailed
from idsbench.infra.cgroups import CFS_PERIOD_US
from idsbench.plan import Case
from idsbench.run.context import CampaignContext
from idsbench.run.facts import case_capture, case_facts
from idsbench.run.session import Phase, SampleDeps, SensorSession, TrialOutcome
from idsbench.run.timeline import Timeline
from idsbench.search import mlr
from idsbench.search.axis import Axis
from idsbench.sensors.base import Counters
from idsbench.store.schema import TrialRecord
from idsbench.store.witness import read_witness, span_rate
from idsbench.teardown import TeardownStack
from idsbench.traffic.rewrite import MAX_INDEX, distinct_copy

SENDER_SHORT = 0.05  # a trial that sent more than 5% below the offered load is sender-limited
# Physics of a sensor that keeps up, never a pass/fail threshold: the work still queued when a replay
# ends is not a deficit while the sensor clears it within the capture's delivery latency at its
# allocation — those packets are processed as soon after arrival as a sensor that keeps up processes any
# (Suricata's af-packet: a tpacket-v3 block is handed over after its 10 ms timeout, and its worker's
# poll wakes at least every 100 ms, POLL_TIMEOUT: 110 ms) — plus, under a CPU quota, one quota period
# (a throttled sensor waits it out with packets queued, however well it keeps up on average). Work
# beyond that is the backlog it was behind by: those packets count as not forwarded.
CAPTURE_LATENCY_S = 0.11
# What a trial's work is judged against (`trial_record`'s `rule`):
# - "tail" (a single search): the work left when the replay ended, beyond the allowance, is the backlog
#   the sensor was behind by;
# - "allocation" (a duet search): the trial's work beyond what the sensor's allocation does over the
#   replay, plus the allowance: allocation the sensor did not get during the replay (the host ran
#   something else then) is work it may still do after it. Two sides that share a trial share the
#   host's speed, so their work over the trial is alike when they are (the duet's paired cost ratio
#   holds within ~1%); where their work was left at the replay's end is not — the CPU's scheduler picks
#   one side or the other at that moment — and judging that made identical sides part near their NDR.
TailRule = Literal["tail", "allocation"]


@dataclass(frozen=True)
class Trial:
    """One trial the search asks for."""

    value: float | None    # the axis value; None: the sender at full speed (measuring its ceiling)
    duration_s: float      # the intended duration


@dataclass(frozen=True)
class Allocation:
    """The cores the sensor had in a trial (run/facts.py) and whether a CPU quota gave them."""

    cores: float
    quota: bool

    @property
    def tail_allowance_s(self) -> float:
        """The tail work a sensor that keeps up may leave (CAPTURE_LATENCY_S, + a quota period)."""
        return self.cores * (CAPTURE_LATENCY_S + (CFS_PERIOD_US / 1e6 if self.quota else 0.0))


@dataclass(frozen=True)
class Carry:
    """What a warm trial leaves to the next one on the same sensor."""

    flow_block: int = 0          # the rewriter's address block the last trial's flows came from
    capture_owed: int = 0        # packets the last trial's capture counter had not counted yet
    gone: str | None = None      # the warm sensor died (why): every later trial fails without running


@dataclass(frozen=True)
class Measurement:
    """A trial's record and what it tells the controller."""

    record: TrialRecord
    count: mlr.TrialCount


class Measurer(AbstractMeasurer):  # type: ignore[misc]
    """Trials of one whole search (one `search.repeats` repeat) on its axis: warm on one sensor
    (`start()` opens it, `stop()` stops it) or cold, a fresh sensor each."""

    def __init__(self, ctx: CampaignContext, case: Case, deps: SampleDeps, axis: Axis, out_dir: Path, *,
                 warm: bool, repeat: int = 0, first_index: int = 0, phase: Phase = lambda _p: None,
                 note: Phase = lambda _n: None, on_trial: Callable[[TrialRecord], None] = lambda _r: None):
        self.ctx, self.case, self.deps, self.axis, self.dir = ctx, case, deps, axis, out_dir
        self.warm, self.repeat, self.first_index, self.phase, self.note = warm, repeat, first_index, phase, note
        self.on_trial = on_trial                        # each recorded trial, once judged (progress lines)
        self.max_trials = ctx.settings.search.max_trials
        self.records: list[TrialRecord] = []            # every trial run, in order (indices from first_index)
        self.measured: list[MeasurementResult] = []     # what the controller was given, in order
        self.trials_run = 0                             # trials counted against the budget
        self.carry = Carry()
        self.session: SensorSession | None = None

    @property
    def loads(self) -> mlr.LoadMap:
        return mlr.LoadMap(self.axis.name, self.axis.low, self.axis.high)

    @property
    def next_index(self) -> int:
        return self.first_index + len(self.records)

    # --- the warm sensor ------------------------------------------------------------------------
    def start(self, stack: TeardownStack) -> str | None:
        """Open the warm sensor (cold trials: nothing to open); why it did not start, or None."""
        if not self.warm:
            return None
        # the cpus axis starts at the largest allocation (a limit that can then be lowered)
        case = self.axis.case_for(self.axis.high, self.ctx.settings.search.trial_s) if self.axis.name == "cpus" \
            else self.case
        name = f"warm{self.repeat}" if self.repeat else "warm"
        (self.dir / name).mkdir(parents=True, exist_ok=True)
        self.session = SensorSession(self.ctx, case, self.dir / name, self.deps, stack, f"{stack.run_id}-{name}",
                                     self.phase)
        if self.session.open():
            return None
        return self.session.facts.sensor_failure or "the sensor did not start"

    def stop(self) -> None:
        if self.session is not None:
            self.session.close()

    # --- MLRsearch's measurer -------------------------------------------------------------------
    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        """One trial at the axis value of `intended_load`. A trial that does not add up is not a
        measurement: it is noted and repeated (ACCOUNTING_RETRIES at most), then judged with the packets
        it could not account for as lost."""
        trial = Trial(self.loads.value_of(intended_load), float(intended_duration))
        count = self._counted(trial)
        for _ in range(mlr.ACCOUNTING_RETRIES):
            if count.accounted:
                break
            self.note(f"a trial at {trial.value:,.6g} did not add up ({count.why}): not a measurement, run again")
            count = self._counted(trial)
        if not count.accounted:
            self.note(f"the trial at {trial.value:,.6g} did not add up {mlr.ACCOUNTING_RETRIES + 1} times; judged "
                      "with the packets it could not account for as lost")
        result = MeasurementResult(intended_duration=float(intended_duration), intended_load=float(intended_load),
                                   offered_count=int(count.offered),
                                   forwarding_count=int(max(0, min(count.forwarded, count.offered))),
                                   offered_duration=float(count.duration_s or intended_duration),
                                   intended_count=count.intended)
        self.measured.append(result)
        return result

    def _counted(self, trial: Trial) -> mlr.TrialCount:
        if self.trials_run >= self.max_trials:
            raise mlr.TrialBudgetSpent(f"search.max_trials = {self.max_trials} trials ran")
        self.trials_run += 1
        if self.carry.gone:  # one sensor for all trials: once it is gone every trial fails
            return mlr.TrialCount(offered=1, forwarded=0, duration_s=trial.duration_s)
        return self.trial(trial).count

    # --- one trial ------------------------------------------------------------------------------
    def trial(self, trial: Trial) -> Measurement:
        """Run `trial` (warm or cold) and record it."""
        record = self._warm(trial) if self.warm else self.cold(trial, f"t{self.next_index}", self.next_index)
        self.records.append(record)
        if trial.value is not None:  # the ceiling trial is told once it is marked (ceiling())
            self.on_trial(record)
        if record.sensor_failed and self.warm:
            self.carry = dataclasses.replace(self.carry, gone=record.sensor_failed)
            self.note(f"trial {record.index}: {record.sensor_failed}; the search stopped")
        return Measurement(record, trial_count(record))

    def ceiling(self) -> Axis | None:
        """Measure the sender's maximum (a topspeed trial at `initial_trial_s`, not given to the
        controller): the axis up to it, or None when the trial failed (noted)."""
        first = self.trial(Trial(None, self.ctx.settings.search.initial_trial_s)).record
        if first.sensor_failed or first.achieved_pps <= 0:
            self.on_trial(first)
            self.note("the ceiling trial failed: " + (first.sensor_failed or "nothing was sent"))
            return None
        self.axis = self.axis.with_ceiling(first.achieved_pps)
        self.records[-1] = first.model_copy(update={"value": self.axis.high, "ceiling": True})
        self.on_trial(self.records[-1])
        return self.axis

    def allocation(self, value: float | None) -> Allocation:
        """The cores the sensor had at `value` (the run facts of the trial's case: the value on the cpus
        axis, else the case's quota, else the CPUs it is pinned to)."""
        facts = case_facts(self.ctx, self.axis.case_for(value, self.ctx.settings.search.trial_s),
                           self.deps.available_cpus())
        return Allocation(facts.allocation, facts.quota is not None)

    def _warm(self, trial: Trial) -> TrialRecord:
        session, index = self.session, self.next_index
        assert session is not None, "start() first"
        timeline = Timeline(self.deps.wall, self.deps.monotonic)
        timeline.enter("setup")
        if not session.alive():
            return self._failed(trial, index, "warm", session.facts.sensor_failure or "the sensor is gone")
        if self.axis.name == "cpus" and trial.value is not None and not session.set_cpus(trial.value):
            return self._failed(trial, index, "warm", "this setup cannot change its CPU limit while running")
        case = self.axis.case_for(trial.value, trial.duration_s)
        out = self.dir / f"t{index}"
        out.mkdir(parents=True, exist_ok=True)
        plan = session.plan(case, self._fresh_flows(case), out)
        outcome = session.trial(plan, settle_s=0.0, measure_cpu=True, timeline=timeline)
        timeline.enter("analysis")
        record, self.carry = trial_record(self.axis, trial, outcome, self.allocation(trial.value), index,
                                          self.repeat, "warm", self.carry)
        timeline.end()
        record = record.model_copy(update={"phases": timeline.records(), "witness_rate": witness_rate(session, record)})
        if not record.accounted and record.sensor_failed is None and not session.resync():
            # the next trial starts from a true baseline, or says why it could not
            self.note(f"trial {record.index}: the sensor's counters never caught up with its interface")
        return record

    def cold(self, trial: Trial, name: str, index: int) -> TrialRecord:
        """A trial on a fresh sensor in `<search>/<name>` (not recorded: the verification's own trials)."""
        case = self.axis.case_for(trial.value, trial.duration_s)
        sample_dir = self.dir / name
        sample_dir.mkdir(parents=True, exist_ok=True)
        with self.deps.make_stack(self.ctx.state_dir) as stack:
            session = SensorSession(self.ctx, case, sample_dir, self.deps, stack, f"{stack.run_id}-{name}", self.phase)
            try:
                if not session.open():
                    return self._failed(trial, index, "cold", session.facts.sensor_failure)
                plan = session.plan(case, self.ctx.replay_paths(case), sample_dir)
                # a method whose live counters lag (CaptureMethod.cold_trials) is counted by its exit statistics,
                # as a sample is: the drain may end once the sensor is quiet, the stop then counts
                by_exit = case_capture(case).cold_trials is not None
                outcome = session.trial(plan, settle_s=0.0, measure_cpu=True, stop_after=by_exit)
            finally:
                session.close()
            if by_exit:
                outcome = _counted_at_exit(session, outcome)
        return trial_record(self.axis, trial, outcome, self.allocation(trial.value), index, self.repeat, "cold",
                            Carry())[0]

    def _fresh_flows(self, case: Case) -> list[Path]:
        """Each warm trial sends flows no earlier trial sent (address blocks of the rewriter)."""
        original = Path(self.ctx.traces[case.trace].path)
        paths = []
        block = self.carry.flow_block
        for _ in range(case.replayers):
            block = block % MAX_INDEX + 1
            paths.append(distinct_copy(original, block, self.ctx.cache_dir))
        self.carry = dataclasses.replace(self.carry, flow_block=block)
        return paths

    def _failed(self, trial: Trial, index: int, mode: str, why: str | None) -> TrialRecord:
        return TrialRecord(index=index, mode="warm" if mode == "warm" else "cold", value=trial.value or 0.0,
                           offered_pps=self.axis.offered_pps(trial.value), achieved_pps=0.0, duration_s=0.0,
                           sent_pkts=0, repeat=self.repeat, sensor_failed=why or "the sensor did not start")


def witness_rate(session: SensorSession, record: TrialRecord) -> float | None:
    """The host-speed witness's work rate over the trial's replay (None without a witness or a piece
    inside it): how fast the host ran the sensor's CPUs in this trial."""
    if session.witness is None or record.started_unix is None or record.ended_unix is None:
        return None
    return span_rate(read_witness(session.witness.plan.log), record.started_unix, record.ended_unix)[0]


def _counted_at_exit(session: SensorSession, outcome: TrialOutcome) -> TrialOutcome:
    """`outcome` with the stopped sensor's final counters (its exit statistics) and their waterfall."""
    if session.run is None or not outcome.sensor_alive:
        return outcome
    try:
        counters = session.run.final_counters()
    except SensorFailed:
        return outcome
    wf = waterfall_of(outcome.replay.record.sent_pkts, outcome.wire, counters, session.facts.invisible)
    return dataclasses.replace(outcome, counters=counters, waterfall=wf)


def trial_record(axis: Axis, trial: Trial, outcome: TrialOutcome, allocation: Allocation, index: int, repeat: int,
                 mode: str, carry: Carry, rule: TailRule = "tail") -> tuple[TrialRecord, Carry]:
    """How the search judges one trial from what the session measured (pure): its record, and what it
    leaves to the next warm trial (a cold trial owes and is owed nothing). `rule`: what its work is
    judged against (TailRule)."""
    rec = outcome.replay.record
    elapsed = max((r.elapsed_s for r in rec.replayers), default=0.0) or (rec.end_unix - rec.start_unix)
    achieved = sum(r.pps for r in rec.replayers)
    offered = axis.offered_pps(trial.value)
    counters, wf = outcome.counters, outcome.waterfall
    owed, still_owed = (carry.capture_owed if mode == "warm" else 0), 0
    if counters is not None and wf is not None:
        # Counters read late (physics): a running sensor's capture counter can be older than its
        # decode counter (Suricata under a tenth of a core: every packet decoded, its kernel count
        # 10% short). It captured at least what it decoded and dropped; drops it has not read yet
        # stay unaccounted. What it caught up with later shows as a surplus in the next warm trial
        # (whose baseline was that old count): taken off there, up to what was owed.
        # (A sample reads a stopped sensor's final counters: there the same gap makes it invalid.)
        processed = counters.decoded_pkts + counters.dropped_pkts
        captured = counters.captured_pkts - min(owed, max(0, counters.captured_pkts - processed))
        if captured < processed:
            still_owed = processed - captured
            captured = processed
        if captured != counters.captured_pkts:
            counters = dataclasses.replace(counters, captured_pkts=captured)
            wf = waterfall_of(rec.sent_pkts, outcome.wire, counters, wf.invisible)
    cpu = outcome.cpu
    behind = 0
    cpu_s = us_per_pkt = allowance_s = None
    if cpu is not None and wf is not None:
        replay_work = max(0.0, cpu.at_replay_end - cpu.at_start - cpu.idle_rate * cpu.replay_s)
        allowance_s = allocation.tail_allowance_s
        if rule == "allocation":  # the allocation it did not use during the replay
            allowance_s += max(0.0, allocation.cores * cpu.replay_s - replay_work)
        behind = mlr.behind_packets(cpu.backlog_work_s, replay_work, wf.decoded_pkts, allowance_s)
        cpu_s = replay_work + cpu.backlog_work_s
        if wf.decoded_pkts > 0 and cpu_s > 0:
            us_per_pkt = round(cpu_s / wf.decoded_pkts * 1e6, 4)
    accounted = wf is not None and (wf.unaccounted_pkts == 0 or (bool(wf.invisible) and wf.unaccounted_pkts > 0))
    record = TrialRecord(
        index=index, mode="warm" if mode == "warm" else "cold", value=trial.value if trial.value is not None else achieved,
        offered_pps=offered, sensor_cpus_used=round(cpu.cores_needed, 4) if cpu else None,
        backlog_fraction=round(cpu.backlog_fraction, 5) if cpu else None,
        achieved_pps=round(achieved, 3), achieved_mbps=round(sum(r.mbps for r in rec.replayers), 3),
        duration_s=round(elapsed, 3), sent_pkts=rec.sent_pkts, counters=counters or Counters(), waterfall=wf,
        sender_limited=offered is not None and achieved < offered * (1 - SENDER_SHORT),
        fell_behind=behind > 0, behind_pkts=behind, repeat=repeat,
        tail_work_s=round(cpu.backlog_work_s, 6) if cpu else None,
        tail_allowance_s=None if allowance_s is None else round(allowance_s, 6),
        intended_duration_s=trial.duration_s, accounted=accounted or not outcome.sensor_alive,
        sensor_cpu_s=round(cpu_s, 6) if cpu_s is not None else None, sensor_us_per_pkt=us_per_pkt,
        sensor_failed=None if outcome.sensor_alive else "the sensor died during the trial",
        started_unix=rec.start_unix, ended_unix=rec.end_unix)
    return record, dataclasses.replace(carry, capture_owed=still_owed if mode == "warm" else carry.capture_owed)


def trial_count(record: TrialRecord) -> mlr.TrialCount:
    """What a trial tells the controller (a dead sensor forwarded nothing)."""
    w = record.waterfall
    if record.sensor_failed or w is None:
        return mlr.TrialCount(offered=max(1, record.sent_pkts), forwarded=0, duration_s=record.duration_s)
    why = "" if record.accounted else f"{w.unaccounted_pkts:+d} packets unaccounted for after the drain"
    intended = None
    if record.sender_limited and record.offered_pps:  # the sender fell short: this load was never offered
        # over the time it sent for: a sender that took 5% longer to send the trial's packets offered 5%
        # less (over the intended duration the counts match but for rounding, and MLRsearch counts |unsent|:
        # one packet too many made a lossless trial at the sender's ceiling fail the NDR)
        intended = max(record.sent_pkts,
                       round(record.offered_pps * (record.duration_s or record.intended_duration_s or 0.0)))
    return mlr.TrialCount(
        intended=intended, offered=record.sent_pkts,
        # a bypassed packet (idsbench.bypass) was handled by design, neither lost nor inspected
        forwarded=min(mlr.forwarded(record.sent_pkts, w.lost_pkts, w.unprocessed_pkts, record.behind_pkts),
                      max(0, w.decoded_pkts + w.bypassed_pkts - record.behind_pkts)),
        duration_s=record.duration_s, accounted=record.accounted, why=why)
