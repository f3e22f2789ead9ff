"""Search one case: trials on a warm sensor (or a fresh one each), the bracket, verification.

A trial replays the case's trace at one value of the axis for `search.trial_s` seconds and judges it
by the loss waterfall (every drop point, not only the capture drops). Warm trials share one running
sensor: its counters are read before and after each trial, and each trial sends its own flows (the
rewriter's address blocks), so no state carries over. The verification at the result is a cold
sample of `search.final_s` seconds, stored as the case's sample s0 (the NDR) — a full sample with
its verdict — or as a cold trial for the other tolerances.
"""

from __future__ import annotations

import math
import os
import shutil
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
from idsbench.search.axis import Axis, axis_for
from idsbench.search.bracket import Bracket, BracketSearch, Observation, step_back
from idsbench.sensors.base import Counters
from idsbench.store import atomic
from idsbench.store.layout import SEARCH_DIR, SEARCH_FILE
from idsbench.store.schema import SampleSummary, SearchResult, ToleranceResult, TrialRecord, WaterfallRecord
from idsbench.traffic.rewrite import MAX_INDEX, distinct_copy

SENDER_SHORT = 0.05  # a trial that sent more than 5% below the offered load is sender-limited
# A trial fell behind when the work left at the end of its replay is above this share of the replay's
# work and would keep its whole allocation busy for more than this share of the replay's duration (a
# light load's few ms of tail work are no deficit), plus one quota period under a CPU quota.
BEHIND_SLACK = 0.05
VERIFY_STEPS = 5     # verification trials per tolerance before giving up
# A verification that failed by at most this much more loss than its tolerance (a few packets of a
# million: one scheduling pause of a shared host) is run once more at the same value, which holds if
# that one passes: the value then passed one of two final-length trials, MLRsearch's "goal exceed
# ratio" of 0.5 (FD.io CSIT's default). A clearer failure steps back at once.
MARGINAL_LOSS = 1e-4
# A trial that fell behind without loss while the sensor needed this much more CPU per packet than in
# the search's lossless trials so far ran on a slowed host (this shared VM's host slows the sensor by
# 10–30% for seconds at a time): it is not judged and the load is tried again, at most MAX_RETRIES
# times per search (its trial budget).
SLOW_HOST = 0.15
MAX_RETRIES = 2
HELD_SAMPLE_DIR = "held-s0"  # the best verification sample that held, while later ones run in s0


class CaseSearch:
    def __init__(self, ctx: CampaignContext, case: Case, deps: SampleDeps | None = None,
                 phase: Phase = lambda _p: None):
        self.ctx, self.case, self.phase = ctx, case, phase
        self.deps = deps or SampleDeps()
        self.cfg = ctx.spec.search
        self.dir = ctx.layout.root / SEARCH_DIR / case.case_id
        self.trials: list[TrialRecord] = []
        self.notes: list[str] = []
        self.search: BracketSearch | None = None
        self._flow_block = 0
        self._capture_owed = 0  # packets a warm trial's capture counter had not counted yet
        self.warm = self.cfg.warm  # one sensor for every trial (run() turns it off where it cannot be)

    def run(self) -> SearchResult:
        started = time.monotonic()
        self.dir.mkdir(parents=True, exist_ok=True)
        axis = self.axis = axis_for(self.ctx, self.case)
        warm = self.warm = self.cfg.warm
        if warm and axis.name == "cpus" and self.case.setup != "baremetal":
            warm = self.warm = False
            self.notes.append(f"the cpus axis on {self.case.setup} runs cold trials (its limit is set at start)")
        if warm:
            with self.deps.make_stack(self.ctx.state_dir) as stack:
                # the cpus axis starts at the largest allocation (a limit that can then be lowered)
                case = axis.case_for(axis.high, self.cfg.trial_s) if axis.name == "cpus" else self.case
                session = SensorSession(self.ctx, case, self.dir / "warm", self.deps, stack,
                                        f"{stack.run_id}-warm", self.phase)
                (self.dir / "warm").mkdir(exist_ok=True)
                try:
                    if session.open():
                        axis = self._search(axis, lambda value: self._warm_trial(session, self.axis, value))
                    else:
                        self.notes.append(f"the sensor did not start: {session.facts.sensor_failure}")
                finally:
                    session.close()
        else:
            axis = self._search(axis, lambda value: self._cold_trial(self.axis, value, self.cfg.trial_s,
                                                                    f"t{len(self.trials)}"))
        results = self._results(axis)
        trials_done = time.monotonic()
        verification = self._verify(axis, results)
        result = SearchResult(
            case_id=self.case.case_id, axis=axis.name, unit=axis.unit, precision=self.cfg.precision,
            mode="warm" if warm else "cold", avg_frame_bytes=axis.avg_frame, sender_ceiling_pps=axis.ceiling_pps,
            fixed_load_pps=axis.fixed_load_pps, results=tuple(results), trials=tuple(self.trials),
            verification=tuple(verification), elapsed_s=round(time.monotonic() - started, 3),
            trials_s=round(trials_done - started, 3), verification_s=round(time.monotonic() - trials_done, 3),
            notes=tuple(self.notes))
        atomic.write_json(self.dir / SEARCH_FILE, result.model_dump(mode="json"))
        return result

    def _search(self, axis: Axis, trial: Callable[[float | None], TrialRecord]) -> Axis:
        """The loop: measure the sender's ceiling when the top is unknown, then bracket."""
        self.axis = axis
        if axis.needs_ceiling:
            first = trial(None)
            if first.sensor_failed or first.achieved_pps <= 0:
                self.notes.append("the ceiling trial failed: " + (first.sensor_failed or "nothing was sent"))
                self.search = None
                return axis
            axis = self.axis = axis.with_ceiling(first.achieved_pps)
            self.trials[-1] = first = first.model_copy(update={"value": axis.high})
        search = self.search = BracketSearch(tuple(self.cfg.tolerances), self.cfg.precision, axis.low, axis.high,
                                             direction=axis.direction, integer=axis.integer)
        judged: list[TrialRecord] = []  # the trials the bracket has seen
        top = self.trials[-1] if self.trials else None
        if top is not None and not _accounted(top) and top.waterfall is not None and top.waterfall.unaccounted_pkts > 0:
            # far beyond the sensor: what it had not counted after the drain counts as lost (a second
            # top-speed trial would tell the same at the cost of a trial)
            self.notes.append(f"trial {top.index} is judged all the same: the packets the sensor had not "
                              "counted after the drain count as lost")
        elif top is not None and not _accounted(top):
            top = None
        if top is not None:
            judged.append(top)
            search.record(self._observation(axis, top))
        retries = 0
        retry: float | None = None  # a load whose trial the host slowed down: tried again next
        while (value := retry if retry is not None else search.next_value()) is not None \
                and len(self.trials) < self.cfg.max_trials:
            retry = None
            record = trial(value)
            if not _accounted(record):
                continue  # tried again: a trial that does not add up tells nothing about the sensor
            slower = _host_slowed(record, judged) if retries < MAX_RETRIES else None
            if slower is not None:
                retries += 1
                retry = value
                self.notes.append(f"trial {record.index} fell behind while the sensor needed {slower:.0%} more CPU "
                                  "per packet than in the lossless trials before it (the host slowed it); "
                                  "not judged, tried again")
                continue
            judged.append(record)
            search.record(self._observation(axis, record))
            if record.sensor_failed and self.warm:  # one sensor for all trials: it is gone
                self.notes.append(f"trial {record.index}: {record.sensor_failed}; the search stopped")
                break
        if search.next_value() is not None and len(self.trials) >= self.cfg.max_trials:
            self.notes.append(f"stopped after search.max_trials = {self.cfg.max_trials} trials")
        return axis

    def _warm_trial(self, session: SensorSession, axis: Axis, value: float | None) -> TrialRecord:
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
        case = axis.case_for(value, self.cfg.trial_s)
        out = self.dir / f"t{len(self.trials)}"
        out.mkdir(parents=True, exist_ok=True)
        plan = session.plan(case, self._fresh_flows(case), out)
        outcome = session.trial(plan, settle_s=0.0, measure_cpu=True, timeline=timeline)
        timeline.enter("analysis")
        record = self._record(axis, value, "warm", outcome, len(self.trials))
        timeline.end()
        record = record.model_copy(update={"phases": timeline.records()})
        self.trials.append(record)
        if not _accounted(record) and record.sensor_failed is None:
            w = record.waterfall
            synced = session.resync()
            self.notes.append(
                f"trial {record.index}: {w.unaccounted_pkts if w else record.sent_pkts:+d} packets unaccounted for "
                "after the drain (the sensor's counters lagged its interface); not judged, "
                + ("tried again" if synced else "and the sensor never caught up"))
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
                    record = self._record(axis, value, "cold", outcome, len(self.trials))
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

    def _record(self, axis: Axis, value: float | None, mode: str, outcome: TrialOutcome, index: int) -> TrialRecord:
        rec = outcome.replay.record
        elapsed = max((r.elapsed_s for r in rec.replayers), default=0.0) or (rec.end_unix - rec.start_unix)
        achieved = sum(r.pps for r in rec.replayers)
        offered = axis.offered_pps(value)
        counters, wf = outcome.counters, outcome.waterfall
        owed, self._capture_owed = (self._capture_owed if mode == "warm" else 0), 0
        if counters is not None and wf is not None:
            # A running sensor's capture counter can be older than its decode counter (seen with
            # Suricata under a tenth of a core: every packet decoded, its kernel count 10% short). It
            # captured at least what it decoded and dropped; drops it has not read yet stay unaccounted.
            # What it caught up with later shows as a surplus in the next warm trial (whose baseline
            # was that old count): taken off there, up to what was owed.
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
        behind = outcome.cpu is not None and \
            outcome.cpu.fell_behind(allocation, BEHIND_SLACK, CFS_PERIOD_US / 1e6 if quota else 0.0)
        return TrialRecord(
            index=index, mode="warm" if mode == "warm" else "cold", value=value if value is not None else achieved,
            offered_pps=offered, sensor_cpus_used=round(outcome.cpu.cores_needed, 4) if outcome.cpu else None,
            backlog_fraction=round(outcome.cpu.backlog_fraction, 5) if outcome.cpu else None,
            achieved_pps=round(achieved, 3), achieved_mbps=round(sum(r.mbps for r in rec.replayers), 3),
            duration_s=round(elapsed, 3), sent_pkts=rec.sent_pkts, counters=counters or Counters(),
            waterfall=waterfall_record(wf) if wf else None,
            sender_limited=offered is not None and achieved < offered * (1 - SENDER_SHORT),
            fell_behind=behind,
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
                           sensor_failed=why or "the sensor did not start")

    def _observation(self, axis: Axis, record: TrialRecord) -> Observation:
        loss = 1.0 if record.sensor_failed or record.waterfall is None else record.waterfall.loss_ratio
        if record.fell_behind and record.backlog_fraction is not None:
            # what a longer trial would have lost too: it kept up with 1/(1 + backlog) of what it took
            loss = 1.0 - (1.0 - loss) / (1.0 + record.backlog_fraction)
        achieved = axis.value_of_achieved(record.achieved_pps)
        return Observation(record.value, loss, sender_limited=record.sender_limited, achieved=achieved,
                           usage=record.sensor_cpus_used, behind=record.fell_behind)

    # --- results ------------------------------------------------------------------------------
    def _results(self, axis: Axis) -> list[ToleranceResult]:
        brackets = self.search.result() if self.search is not None else \
            [Bracket(t) for t in sorted(self.cfg.tolerances)]
        out = []
        for b in brackets:
            bracket = None
            if b.passed is not None and b.failed is not None:
                lo, hi = sorted((b.passed, b.failed))
                bracket = (lo, hi)
            out.append(ToleranceResult(tolerance=b.tolerance, value=b.passed,
                                       value_pps=axis.pps_of(b.passed) if b.passed is not None else None,
                                       bracket=bracket, lower_bound=b.lower_bound))
        return out

    def _verify(self, axis: Axis, results: list[ToleranceResult]) -> list[TrialRecord]:
        """A final-length cold trial at each result (the NDR as the case's sample s0). A result that
        fails it is stepped back (`bracket.step_back`: by the precision, or as far as its loss says);
        when the value that then holds is further than the precision from the closest failure, the
        gap is narrowed with more final-length trials (at most VERIFY_STEPS in all). The NDR's s0 is
        always the sample at the value reported."""
        verified: list[TrialRecord] = []
        for i, r in enumerate(results):
            if r.value is None:
                continue
            self.phase(f"verify {r.tolerance:g}")
            held, broke, last = self._verify_tolerance(axis, r, i, verified)
            if held is None:
                results[i] = r.model_copy(update={"value": None, "value_pps": None, "verified": False})
                self.notes.append(f"tolerance {r.tolerance:g}: no value held in the verification trials "
                                  f"(last tried {last:,.6g} {axis.unit})")
                continue
            if i == 0:  # s0 is the verification sample at the value reported (it may not be the last)
                self._restore_held_sample()
            if broke is None:
                bracket = r.bracket
            else:
                lo, hi = sorted((held, broke))
                bracket = (lo, hi)
            results[i] = r.model_copy(update={"value": held, "value_pps": axis.pps_of(held), "verified": True,
                                              "bracket": bracket})
        return verified

    def _verify_tolerance(self, axis: Axis, r: ToleranceResult, tolerance_index: int,
                          verified: list[TrialRecord]) -> tuple[float | None, float | None, float]:
        """(best value that held, closest value that did not, last value tried) for one tolerance."""
        def better(a: float, b: float) -> bool:
            return a > b if axis.direction == "max" else a < b

        held: float | None = None
        broke: float | None = None
        value: float | None = r.value
        last = float(r.value or 0.0)
        retried: set[float] = set()
        for _ in range(VERIFY_STEPS):
            if value is None:
                break
            record = self._verify_at(axis, value, tolerance_index, len(self.trials) + len(verified))
            verified.append(record)
            last = value
            loss = 1.0 if record.sensor_failed or record.waterfall is None else record.waterfall.loss_ratio
            if record.sensor_failed is None and loss <= r.tolerance:
                if held is None or better(value, held):
                    held = value
                    if tolerance_index == 0:
                        self._keep_held_sample()
                if broke is None:
                    break  # held where the search ended (or first after stepping back without a failure)
            elif record.sensor_failed is None and loss <= r.tolerance + MARGINAL_LOSS and value not in retried:
                retried.add(value)
                self.notes.append(f"tolerance {r.tolerance:g}: the verification at {value:,.6g} {axis.unit} lost "
                                  f"{loss:.2g} of its packets; run once more (the value holds if that one passes)")
                continue
            else:
                broke = value if broke is None or better(broke, value) else broke
            if held is None:
                value = step_back(value, loss, r.tolerance, self.cfg.precision, direction=axis.direction,
                                  integer=axis.integer, low=axis.low, high=axis.high)
                continue
            assert broke is not None
            lo, hi = sorted((held, broke))
            if (hi - lo <= 1) if axis.integer else (hi / lo - 1 <= self.cfg.precision):
                break
            middle = math.sqrt(lo * hi)
            value = float(round(middle)) if axis.integer else middle
            if value in (lo, hi):
                break
        return held, broke, last

    def _keep_held_sample(self) -> None:
        """Set the sample s0 that just held aside: a later verification would reuse its directory."""
        kept = self.dir / HELD_SAMPLE_DIR
        if kept.exists():
            shutil.rmtree(kept)
        s0 = self.ctx.layout.sample_dir(self.case.case_id, 0)
        if s0.is_dir():
            shutil.move(s0, kept)

    def _restore_held_sample(self) -> None:
        """The case's sample s0 becomes the best verification that held (not a later one that broke)."""
        kept = self.dir / HELD_SAMPLE_DIR
        if not kept.is_dir():
            return
        s0 = self.ctx.layout.sample_dir(self.case.case_id, 0)
        if s0.exists():
            shutil.rmtree(s0)
        shutil.move(kept, s0)

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
            sensor_failed=None if sample.status in ("ok", "invalid") else sample.reason)


def waterfall_record(wf: Waterfall) -> WaterfallRecord:
    return WaterfallRecord(
        sent=wf.sent, loss_sender_pkts=wf.loss_sender_pkts, loss_wire_pkts=wf.loss_wire_pkts,
        loss_nic_pkts=wf.loss_nic_pkts, loss_softnet_pkts=wf.loss_softnet_pkts,
        loss_capture_pkts=wf.loss_capture_pkts, unprocessed_pkts=wf.unprocessed_pkts, decoded_pkts=wf.decoded_pkts,
        unaccounted_pkts=wf.unaccounted_pkts, invisible=wf.invisible, loss_ratio=round(wf.loss_ratio, 9))


def loss_of_sample(summary: SampleSummary) -> WaterfallRecord | None:
    if summary.replay is None:
        return None
    return waterfall_record(waterfall_of(summary.replay.sent_pkts, summary.wire, summary.sensor.counters,
                                            summary.invisible))


def _host_slowed(record: TrialRecord, before: list[TrialRecord]) -> float | None:
    """How much more CPU per packet the sensor needed in `record`, which fell behind without loss, than
    the median of the lossless, kept-up trials `before` it (at least two) — when above SLOW_HOST."""
    cost = record.cpu_s_per_packet
    if not record.fell_behind or cost is None or record.waterfall is None or record.waterfall.loss_ratio > 0:
        return None
    usual = [c for t in before if t.kept_up_lossless and (c := t.cpu_s_per_packet) is not None]
    if len(usual) < 2:
        return None
    slower = cost / statistics.median(usual) - 1
    return slower if slower > SLOW_HOST else None


def _accounted(record: TrialRecord) -> bool:
    """The trial's packets all add up (drops the host cannot see are allowed where it says so)."""
    if record.sensor_failed is not None:
        return True  # a dead sensor is a result (a failure at this load)
    w = record.waterfall
    return w is not None and (w.unaccounted_pkts == 0 or (bool(w.invisible) and w.unaccounted_pkts > 0))
