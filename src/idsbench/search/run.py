"""Search one case: MLRsearch (FD.io CSIT's controller, `search/mlr.py`) chooses each trial's load and
duration; idsbench measures it on a warm sensor (or a fresh one each) and says how many packets the
sensor forwarded (processed in time). `search.repeats` whole searches, a fresh sensor each; the
median result is verified once at final length.

A trial replays the case's trace at one value of the axis for the duration the controller asks and counts
its packets by the loss waterfall (every drop point, not only the capture drops). Warm trials share one running
sensor: its counters are read before and after each trial, and each trial sends its own flows (the
rewriter's address blocks), so no state carries over. The verification at the result is a cold
sample of `search.final_s` seconds, stored as the case's sample s0 (the NDR) — a full sample with
its verdict — or as a cold trial for the other tolerances.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from idsbench.accounting import Waterfall, waterfall_of
from idsbench.infra.cgroups import CFS_PERIOD_US
from idsbench.plan import Case
from idsbench.run.context import CampaignContext
from idsbench.run.sample import SampleRun
from idsbench.run.session import Phase, SampleDeps, SensorSession, TrialOutcome
from idsbench.run.timeline import Timeline
from idsbench.search import mlr
from idsbench.search.axis import Axis, axis_for
from idsbench.sensors.base import Counters
from idsbench.store import atomic
from idsbench.store.layout import SEARCH_DIR, SEARCH_FILE
from idsbench.store.schema import (
    SampleSummary,
    SearchGoals,
    SearchRepeat,
    SearchResult,
    ToleranceResult,
    TrialRecord,
)
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
ACCOUNTING_RETRIES = mlr.ACCOUNTING_RETRIES
CONTROLLER = "MLRsearch 1.2.1"


class CaseSearch:
    def __init__(self, ctx: CampaignContext, case: Case, deps: SampleDeps | None = None,
                 phase: Phase = lambda _p: None):
        self.ctx, self.case, self.phase = ctx, case, phase
        self.deps = deps or SampleDeps()
        self.cfg = ctx.spec.search
        self.dir = ctx.layout.root / SEARCH_DIR / case.case_id
        self.trials: list[TrialRecord] = []
        self.notes: list[str] = []
        self.repeat = 0
        self._flow_block = 0
        self._capture_owed = 0  # packets a warm trial's capture counter had not counted yet
        self.warm = self.cfg.warm  # one sensor for every trial (run() turns it off where it cannot be)

    def goals(self) -> mlr.Goals:
        """`[search]`'s goals, one per tolerance."""
        c = self.cfg
        return mlr.Goals(tuple(c.tolerances), c.exceed_ratio, c.precision, c.initial_trial_s, c.trial_s,
                         c.duration_sum, c.max_search_s)

    def run(self) -> SearchResult:
        """`search.repeats` whole searches (a fresh sensor each), the median of their results, and one
        final-length verification at each median."""
        started = time.monotonic()
        self.dir.mkdir(parents=True, exist_ok=True)
        axis = self.axis = axis_for(self.ctx, self.case)
        if self.warm and axis.name == "cpus" and self.case.setup != "baremetal":
            self.warm = False
            self.notes.append(f"the cpus axis on {self.case.setup} runs cold trials (its limit is set at start)")
        repeats: list[SearchRepeat] = []
        for k in range(self.cfg.repeats):
            self.repeat = k
            self.phase(f"search {k + 1}/{self.cfg.repeats}" if self.cfg.repeats > 1 else "search")
            began, first = time.monotonic(), len(self.trials)
            axis, outcomes = self._one_search(axis_for(self.ctx, self.case) if k else axis)
            repeats.append(self._repeat_record(k, axis, outcomes, len(self.trials) - first,
                                               time.monotonic() - began))
        results = median_results(repeats)
        trials_done = time.monotonic()
        verification = self._verify(axis, results)
        g = self.goals()
        result = SearchResult(
            case_id=self.case.case_id, axis=axis.name, unit=axis.unit, precision=self.cfg.precision,
            mode="warm" if self.warm else "cold", avg_frame_bytes=axis.avg_frame, sender_ceiling_pps=axis.ceiling_pps,
            fixed_load_pps=axis.fixed_load_pps, results=tuple(results), trials=tuple(self.trials),
            verification=tuple(verification), elapsed_s=round(time.monotonic() - started, 3),
            trials_s=round(trials_done - started, 3), verification_s=round(time.monotonic() - trials_done, 3),
            notes=tuple(self.notes), repeats=tuple(repeats),
            goals=SearchGoals(tolerances=g.tolerances, exceed_ratio=g.exceed_ratio, relative_width=g.relative_width,
                              initial_trial_s=min(g.initial_trial_s, g.final_trial_s), final_trial_s=g.final_trial_s,
                              duration_sum_s=max(g.duration_sum_s, g.final_trial_s), controller=CONTROLLER),
            allocation_cpus=self._allocation(axis, None)[0])
        atomic.write_json(self.dir / SEARCH_FILE, result.model_dump(mode="json"))
        return result

    def _one_search(self, axis: Axis) -> tuple[Axis, list[mlr.GoalOutcome]]:
        """One whole search on a fresh sensor (warm) or a fresh sensor per trial (cold)."""
        if not self.warm:
            return self._control(axis, lambda d, v: self._cold_trial(self.axis, v, d, f"t{len(self.trials)}"))
        with self.deps.make_stack(self.ctx.state_dir) as stack:
            # the cpus axis starts at the largest allocation (a limit that can then be lowered)
            case = axis.case_for(axis.high, self.cfg.trial_s) if axis.name == "cpus" else self.case
            name = f"warm{self.repeat}" if self.repeat else "warm"
            session = SensorSession(self.ctx, case, self.dir / name, self.deps, stack,
                                    f"{stack.run_id}-{name}", self.phase)
            (self.dir / name).mkdir(exist_ok=True)
            self._capture_owed = 0
            try:
                if not session.open():
                    self.notes.append(f"the sensor did not start: {session.facts.sensor_failure}")
                    return axis, []
                return self._control(axis, lambda d, v: self._warm_trial(session, self.axis, v, d))
            finally:
                session.close()

    def _control(self, axis: Axis, trial: Callable[[float, float | None], TrialRecord]) -> \
            tuple[Axis, list[mlr.GoalOutcome]]:
        """Measure the sender's ceiling when the top is unknown, then hand the trials to MLRsearch."""
        self.axis = axis
        if axis.needs_ceiling:
            first = trial(self.cfg.initial_trial_s, None)
            if first.sensor_failed or first.achieved_pps <= 0:
                self.notes.append("the ceiling trial failed: " + (first.sensor_failed or "nothing was sent"))
                return axis, []
            axis = self.axis = axis.with_ceiling(first.achieved_pps)
            self.trials[-1] = first.model_copy(update={"value": axis.high, "ceiling": True})
        dead: list[str] = []

        def counted(duration_s: float, value: float) -> mlr.TrialCount:
            if dead:  # one sensor for all trials: once it is gone every trial fails
                return mlr.TrialCount(offered=1, forwarded=0, duration_s=duration_s)
            record = trial(duration_s, value)
            if record.sensor_failed and self.warm:
                dead.append(record.sensor_failed)
                self.notes.append(f"trial {record.index}: {record.sensor_failed}; the search stopped")
            return trial_count(record)

        outcomes = mlr.run_controller(self.goals(), mlr.LoadMap(axis.name, axis.low, axis.high), counted,
                                      max_trials=self.cfg.max_trials, note=self.notes.append)
        return axis, outcomes

    def _warm_trial(self, session: SensorSession, axis: Axis, value: float | None,
                    duration_s: float | None = None) -> TrialRecord:
        duration_s = duration_s or self.cfg.trial_s
        timeline = Timeline(self.deps.wall, self.deps.monotonic)
        timeline.enter("setup")
        if not session.alive():
            record = self._failed_record(axis, value, "warm", session.facts.sensor_failure or "the sensor is gone")
            self.trials.append(record)
            return record
        if axis.name == "cpus" and value is not None and not session.set_cpus(value):
            record = self._failed_record(axis, value, "warm", "this setup cannot change its CPU limit while running")
            self.trials.append(record)
            return record
        case = axis.case_for(value, duration_s)
        out = self.dir / f"t{len(self.trials)}"
        out.mkdir(parents=True, exist_ok=True)
        plan = session.plan(case, self._fresh_flows(case), out)
        outcome = session.trial(plan, settle_s=0.0, measure_cpu=True, timeline=timeline)
        timeline.enter("analysis")
        record = self._record(axis, value, "warm", outcome, len(self.trials), duration_s)
        timeline.end()
        record = record.model_copy(update={"phases": timeline.records()})
        self.trials.append(record)
        if not record.accounted and record.sensor_failed is None:
            synced = session.resync()  # the next trial starts from a true baseline
            if not synced:
                self.notes.append(f"trial {record.index}: the sensor's counters never caught up with its interface")
        return record

    def _cold_trial(self, axis: Axis, value: float | None, duration_s: float, name: str) -> TrialRecord:
        case = axis.case_for(value, duration_s)
        sample_dir = self.dir / name
        sample_dir.mkdir(parents=True, exist_ok=True)
        with self.deps.make_stack(self.ctx.state_dir) as stack:
            session = SensorSession(self.ctx, case, sample_dir, self.deps, stack, f"{stack.run_id}-{name}", self.phase)
            try:
                if not session.open():
                    record = self._failed_record(axis, value, "cold", session.facts.sensor_failure)
                else:
                    plan = session.plan(case, self.ctx.replay_paths(case), sample_dir)
                    outcome = session.trial(plan, settle_s=0.0, measure_cpu=True)
                    record = self._record(axis, value, "cold", outcome, len(self.trials), duration_s)
            finally:
                session.close()
        if name.startswith("t"):
            self.trials.append(record)
        return record

    def _fresh_flows(self, case: Case) -> list[Path]:
        """Each warm trial sends flows no earlier trial sent (address blocks of the rewriter)."""
        original = Path(self.ctx.traces[case.trace].path)
        paths = []
        for _ in range(case.replayers):
            self._flow_block = self._flow_block % MAX_INDEX + 1
            paths.append(distinct_copy(original, self._flow_block, self.ctx.cache_dir))
        return paths

    def _record(self, axis: Axis, value: float | None, mode: str, outcome: TrialOutcome, index: int,
                duration_s: float | None = None) -> TrialRecord:
        rec = outcome.replay.record
        elapsed = max((r.elapsed_s for r in rec.replayers), default=0.0) or (rec.end_unix - rec.start_unix)
        achieved = sum(r.pps for r in rec.replayers)
        offered = axis.offered_pps(value)
        counters, wf = outcome.counters, outcome.waterfall
        owed, self._capture_owed = (self._capture_owed if mode == "warm" else 0), 0
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
                self._capture_owed = processed - captured
                captured = processed
            if captured != counters.captured_pkts:
                counters = replace(counters, captured_pkts=captured)
                wf = waterfall_of(rec.sent_pkts, outcome.wire, counters, wf.invisible)
        allocation, quota = self._allocation(axis, value)
        cpu = outcome.cpu
        behind = 0
        cpu_s = us_per_pkt = None
        if cpu is not None and wf is not None:
            replay_work = max(0.0, cpu.at_replay_end - cpu.at_start - cpu.idle_rate * cpu.replay_s)
            allowance = allocation * (CAPTURE_LATENCY_S + (CFS_PERIOD_US / 1e6 if quota else 0.0))
            behind = mlr.behind_packets(cpu.backlog_work_s, replay_work, wf.decoded_pkts, allowance)
            cpu_s = replay_work + cpu.backlog_work_s
            if wf.decoded_pkts > 0 and cpu_s > 0:
                us_per_pkt = round(cpu_s / wf.decoded_pkts * 1e6, 4)
        accounted = wf is not None and (wf.unaccounted_pkts == 0 or (bool(wf.invisible) and wf.unaccounted_pkts > 0))
        return TrialRecord(
            index=index, mode="warm" if mode == "warm" else "cold", value=value if value is not None else achieved,
            offered_pps=offered, sensor_cpus_used=round(cpu.cores_needed, 4) if cpu else None,
            backlog_fraction=round(cpu.backlog_fraction, 5) if cpu else None,
            achieved_pps=round(achieved, 3), achieved_mbps=round(sum(r.mbps for r in rec.replayers), 3),
            duration_s=round(elapsed, 3), sent_pkts=rec.sent_pkts, counters=counters or Counters(),
            waterfall=wf,
            sender_limited=offered is not None and achieved < offered * (1 - SENDER_SHORT),
            fell_behind=behind > 0, behind_pkts=behind, repeat=self.repeat,
            intended_duration_s=duration_s, accounted=accounted or not outcome.sensor_alive,
            sensor_cpu_s=round(cpu_s, 6) if cpu_s is not None else None, sensor_us_per_pkt=us_per_pkt,
            sensor_failed=None if outcome.sensor_alive else "the sensor died during the trial",
            started_unix=rec.start_unix, ended_unix=rec.end_unix)

    def _allocation(self, axis: Axis, value: float | None) -> tuple[float, bool]:
        """The cores the sensor had in a trial — the value on the cpus axis, else the case's quota, else
        every CPU of the host — and whether a CPU quota gave them."""
        if axis.name == "cpus" and value is not None:
            return value, True
        if self.case.cpus is not None:
            return self.case.cpus, True
        return float(os.cpu_count() or 1), False

    def _failed_record(self, axis: Axis, value: float | None, mode: str, why: str | None) -> TrialRecord:
        return TrialRecord(index=len(self.trials), mode="warm" if mode == "warm" else "cold", value=value or 0.0,
                           offered_pps=axis.offered_pps(value), achieved_pps=0.0, duration_s=0.0, sent_pkts=0,
                           repeat=self.repeat, sensor_failed=why or "the sensor did not start")

    # --- results ------------------------------------------------------------------------------
    def _repeat_record(self, index: int, axis: Axis, outcomes: list[mlr.GoalOutcome], trials: int,
                       elapsed_s: float) -> SearchRepeat:
        by_tolerance = {o.tolerance: o for o in outcomes}
        results = []
        for t in sorted(self.cfg.tolerances):
            o = by_tolerance.get(t)
            results.append(tolerance_result(axis, t, o))
        ndr = next((r for r in results if r.tolerance == 0), None)
        return SearchRepeat(index=index, results=tuple(results), trials=trials, elapsed_s=round(elapsed_s, 3),
                            ndr_pps=ndr.value_pps if ndr else None)

    def _verify(self, axis: Axis, results: list[ToleranceResult]) -> list[TrialRecord]:
        """One final-length cold trial at each result (the NDR's as the case's sample s0, a full sample
        with its verdict): `verified` says whether it met its tolerance. It does not move the result —
        the controller's goals already say how much noise a result tolerates."""
        verified: list[TrialRecord] = []
        for i, r in enumerate(results):
            if r.value is None:
                continue
            self.phase(f"verify {r.tolerance:g}")
            record = self._verify_at(axis, r.value, i, len(self.trials) + len(verified))
            verified.append(record)
            loss = 1.0 if record.sensor_failed or record.waterfall is None else record.waterfall.loss_ratio
            held = record.sensor_failed is None and loss <= r.tolerance
            if not held:
                self.notes.append(f"tolerance {r.tolerance:g}: the {self.cfg.final_s:g} s verification at "
                                  f"{r.value:,.6g} {axis.unit} lost {loss:.3g} of its packets")
            results[i] = r.model_copy(update={"verified": held})
        return verified

    def _verify_at(self, axis: Axis, value: float, tolerance_index: int, index: int) -> TrialRecord:
        if tolerance_index > 0:
            return self._cold_trial(axis, value, self.cfg.final_s, f"verify-{index}").model_copy(
                update={"index": index})
        sample = SampleRun(self.ctx, axis.case_for(value, self.cfg.final_s), 0, self.deps, self.phase,
                           case_id=self.case.case_id).run().summary
        replay = sample.replay
        return TrialRecord(
            index=index, mode="cold", value=value, offered_pps=axis.offered_pps(value),
            achieved_pps=sum(x.pps for x in replay.replayers) if replay else 0.0,
            duration_s=self.cfg.final_s, sent_pkts=replay.sent_pkts if replay else 0,
            counters=sample.sensor.counters, waterfall=loss_of_sample(sample),
            sensor_us_per_pkt=sample.cost.us_per_pkt if sample.cost else None,
            sensor_failed=None if sample.status in ("ok", "invalid") else sample.reason)


def trial_count(record: TrialRecord) -> mlr.TrialCount:
    """What a trial tells the controller (a dead sensor forwarded nothing)."""
    w = record.waterfall
    if record.sensor_failed or w is None:
        return mlr.TrialCount(offered=max(1, record.sent_pkts), forwarded=0, duration_s=record.duration_s)
    lost = w.lost_pkts
    why = "" if record.accounted else f"{w.unaccounted_pkts:+d} packets unaccounted for after the drain"
    intended = None
    if record.sender_limited and record.offered_pps:  # the sender fell short: this load was never offered
        intended = round(record.offered_pps * (record.intended_duration_s or record.duration_s))
    return mlr.TrialCount(
        intended=intended, offered=record.sent_pkts,
        forwarded=min(mlr.forwarded(record.sent_pkts, lost, w.unprocessed_pkts, record.behind_pkts),
                      max(0, w.decoded_pkts - record.behind_pkts)),
        duration_s=record.duration_s, accounted=record.accounted, why=why)


def tolerance_result(axis: Axis, tolerance: float, o: mlr.GoalOutcome | None) -> ToleranceResult:
    """One goal of one search in axis units: the relevant lower bound is the value, (lower, upper) the
    bracket; no upper bound on a max-load axis = the sensor took the top (a lower bound)."""
    if o is None:
        return ToleranceResult(tolerance=tolerance, value=None)
    bracket = None
    if o.lower is not None and o.upper is not None:
        lo, hi = sorted((o.lower, o.upper))
        bracket = (lo, hi)
    pps = axis.pps_of(o.lower) if o.lower is not None else None
    conditional = pps * o.kept if o.kept is not None and pps is not None and axis.direction == "max" else None
    return ToleranceResult(tolerance=tolerance, value=o.lower, value_pps=pps, bracket=bracket,
                           lower_bound=o.lower is not None and o.upper is None and axis.direction == "max",
                           relevant_lower=o.lower, relevant_upper=o.upper,
                           conditional_pps=round(conditional, 3) if conditional is not None else None)


def median_results(repeats: list[SearchRepeat]) -> list[ToleranceResult]:
    """Per tolerance, the median over the repeats of the value, its bounds and conditional throughput
    (the one repeat's own result when there is one)."""
    if len(repeats) == 1:
        return list(repeats[0].results)
    out = []
    for i, first in enumerate(repeats[0].results):
        each = [r.results[i] for r in repeats]

        def mid(values: list[float | None]) -> float | None:
            known = [v for v in values if v is not None]
            return statistics.median(known) if len(known) == len(values) and known else None

        value = mid([r.value for r in each])
        lower, upper = mid([r.relevant_lower for r in each]), mid([r.relevant_upper for r in each])
        bracket = None
        if lower is not None and upper is not None:
            lo, hi = sorted((lower, upper))
            bracket = (lo, hi)
        out.append(ToleranceResult(tolerance=first.tolerance, value=value,
                                   value_pps=mid([r.value_pps for r in each]), bracket=bracket,
                                   lower_bound=any(r.lower_bound for r in each), relevant_lower=lower,
                                   relevant_upper=upper, conditional_pps=mid([r.conditional_pps for r in each])))
    return out


def loss_of_sample(summary: SampleSummary) -> Waterfall | None:
    if summary.replay is None:
        return None
    return waterfall_of(summary.replay.sent_pkts, summary.wire, summary.sensor.counters, summary.invisible)
