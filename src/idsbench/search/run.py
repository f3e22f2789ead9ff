"""Search one case: MLRsearch (FD.io CSIT's controller, `search/mlr.py`) chooses each trial's load and
duration; idsbench measures it on a warm sensor (or a fresh one each) and says how many packets the
sensor forwarded (processed in time). `search.repeats` whole searches, a fresh sensor each; the
median result is verified once at final length.

A trial (search/measure.py, the `Measurer`) replays the case's trace at one value of the axis for the
duration the controller asks and counts its packets by the loss waterfall (every drop point, not only
the capture drops). Warm trials share one running sensor: its counters are read before and after each
trial, and each trial sends its own flows (the rewriter's address blocks), so no state carries over. This
module runs the repeats, takes their medians and verifies them. The verification at the result is a cold
sample of `search.final_s` seconds, stored as the case's sample s0 (the NDR) — a full sample with
its verdict — or as a cold trial for the other tolerances.

The sender's ceiling (a topspeed rate: the top of the axis is unknown) is measured once per search, by
the first repeat, and shared by every later repeat: its spread between measurements is the sender's,
not the sensor's. A result the sender bounded says so (`ToleranceResult.sender_limited`, `sender_bound`).
Each trial can be told as one line (`trial_line`, the progress of a search without a terminal).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence

from idsbench.accounting import waterfall_of
from idsbench.plan import Case
from idsbench.run.context import CampaignContext
from idsbench.run.facts import case_capture, case_facts
from idsbench.run.sample import SampleRun
from idsbench.run.session import Phase, SampleDeps
from idsbench.search import mlr
from idsbench.search.axis import Axis, axis_for
from idsbench.search.measure import Measurer, Trial, trial_count
from idsbench.store.layout import SEARCH_DIR
from idsbench.store.schema import (
    SampleSummary,
    SearchGoals,
    SearchRepeat,
    SearchResult,
    ToleranceResult,
    TrialRecord,
)
from idsbench.store.waterfall import Waterfall
from idsbench.store.writers import write_search_result

CONTROLLER = "MLRsearch 1.2.1"


class CaseSearch:
    def __init__(self, ctx: CampaignContext, case: Case, deps: SampleDeps | None = None,
                 phase: Phase = lambda _p: None, trial_lines: Callable[[str], None] | None = None):
        self.ctx, self.case, self.phase = ctx, case, phase
        self.trial_lines = trial_lines  # each trial told as one line (a search without a terminal), or None
        self.deps = deps or SampleDeps()
        self.cfg = ctx.settings.search
        self.dir = ctx.layout.root / SEARCH_DIR / case.case_id
        self.trials: list[TrialRecord] = []
        self.notes: list[str] = []
        self.repeat = 0
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
        axis = axis_for(self.ctx, self.case, self.deps.available_cpus())
        if self.warm and axis.name == "cpus" and self.case.setup != "baremetal":
            self.warm = False
            self.notes.append(f"the cpus axis on {self.case.setup} runs cold trials (its limit is set at start)")
        method = case_capture(self.case)
        cold_reason = method.cold_trials
        if self.warm and cold_reason:
            self.warm = False
            self.notes.append(f"{method.name} runs cold trials (a fresh sensor each): {cold_reason}")
        repeats: list[SearchRepeat] = []
        ceiling: float | None = None  # the sender's, measured once (by the first repeat that measured it)
        for k in range(self.cfg.repeats):
            self.repeat = k
            self.phase(f"search {k + 1}/{self.cfg.repeats}" if self.cfg.repeats > 1 else "search")
            began, first = time.monotonic(), len(self.trials)
            fresh = axis_for(self.ctx, self.case, self.deps.available_cpus()) if k else axis
            if ceiling is not None and fresh.needs_ceiling:
                fresh = fresh.with_ceiling(ceiling)  # shared: not measured again
            axis, outcomes = self._one_search(fresh)
            if ceiling is None and axis.ceiling_pps is not None:
                ceiling = axis.ceiling_pps
            repeats.append(self._repeat_record(k, axis, outcomes, self.trials[first:], time.monotonic() - began))
        results = median_results(repeats)
        if any(r.sender_limited for r in results):
            self.notes.append(sender_note(axis, len(repeats)))
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
            allocation_cpus=case_facts(self.ctx, self.case, self.deps.available_cpus()).allocation)
        write_search_result(self.dir, result)
        return result

    def _one_search(self, axis: Axis) -> tuple[Axis, list[mlr.GoalOutcome]]:
        """One whole search: on a fresh warm sensor, or a fresh sensor per trial (cold). Its trials join
        `self.trials`."""
        measurer = Measurer(self.ctx, self.case, self.deps, axis, self.dir, warm=self.warm, repeat=self.repeat,
                            first_index=len(self.trials), phase=self.phase, note=self.notes.append,
                            on_trial=self._tell)
        try:
            with self.deps.make_stack(self.ctx.state_dir) as stack:
                failure = measurer.start(stack)
                try:
                    if failure is not None:
                        self.notes.append(f"the sensor did not start: {failure}")
                        return axis, []
                    return self._control(measurer)
                finally:
                    measurer.stop()
        finally:
            self.trials.extend(measurer.records)

    def _control(self, measurer: Measurer) -> tuple[Axis, list[mlr.GoalOutcome]]:
        """Measure the sender's ceiling when the top is unknown, then hand the trials to MLRsearch."""
        if measurer.axis.needs_ceiling and measurer.ceiling() is None:
            return measurer.axis, []
        return measurer.axis, mlr.run_controller(self.goals(), measurer, note=self.notes.append)

    def _tell(self, record: TrialRecord, label: str = "") -> None:
        """One line for `record` to `trial_lines` (when the search has no terminal)."""
        if self.trial_lines is not None:
            self.trial_lines(trial_line(self.case.case_id, record, self.cfg.tolerances, self.cfg.repeats, label))

    # --- results ------------------------------------------------------------------------------
    def _repeat_record(self, index: int, axis: Axis, outcomes: list[mlr.GoalOutcome], trials: list[TrialRecord],
                       elapsed_s: float) -> SearchRepeat:
        by_tolerance = {o.tolerance: o for o in outcomes}
        results = []
        for t in sorted(self.cfg.tolerances):
            o = by_tolerance.get(t)
            results.append(tolerance_result(axis, t, o, trials))
        ndr = next((r for r in results if r.tolerance == 0), None)
        return SearchRepeat(index=index, results=tuple(results), trials=len(trials), elapsed_s=round(elapsed_s, 3),
                            ndr_pps=ndr.value_pps if ndr else None, sender_ceiling_pps=axis.ceiling_pps,
                            ceiling_measured=any(t.ceiling for t in trials),
                            sender_limited=any(r.sender_limited for r in results))

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
            self._tell(record, f"verify {r.tolerance:g}")
            loss = 1.0 if record.sensor_failed or record.waterfall is None else record.waterfall.loss_ratio
            held = record.sensor_failed is None and loss <= r.tolerance
            if not held:
                self.notes.append(f"tolerance {r.tolerance:g}: the {self.cfg.final_s:g} s verification at "
                                  f"{r.value:,.6g} {axis.unit} lost {loss:.3g} of its packets")
            results[i] = r.model_copy(update={"verified": held})
        return verified

    def _verify_at(self, axis: Axis, value: float, tolerance_index: int, index: int) -> TrialRecord:
        if tolerance_index > 0:
            measurer = Measurer(self.ctx, self.case, self.deps, axis, self.dir, warm=False, phase=self.phase)
            return measurer.cold(Trial(value, self.cfg.final_s), f"verify-{index}", index)
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


def tolerance_result(axis: Axis, tolerance: float, o: mlr.GoalOutcome | None,
                     trials: Sequence[TrialRecord] = ()) -> ToleranceResult:
    """One goal of one search in axis units: the relevant lower bound is the value, (lower, upper) the
    bracket; no upper bound on a max-load axis = the sensor took the top (a lower bound). `trials`: the
    search's trials, which say whether the sender bounded it (`sender_bound`)."""
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
                           conditional_pps=round(conditional, 3) if conditional is not None else None,
                           sender_limited=sender_bound(axis, o, trials))


def sender_bound(axis: Axis, o: mlr.GoalOutcome, trials: Sequence[TrialRecord]) -> bool:
    """The sender, not the sensor, bounded this goal's result (load axes): the sensor took the sender's
    measured ceiling (no upper bound below it), or at the relevant upper bound the sensor kept every
    trial's packets within the tolerance while the sender fell short in some (the shortfall alone failed
    it)."""
    if axis.direction != "max" or o.lower is None:
        return False
    if o.upper is None:
        return axis.ceiling_pps is not None
    at_upper = [t for t in trials if not t.ceiling and math.isclose(t.value, o.upper, rel_tol=1e-9)]
    return any(t.sender_limited for t in at_upper) and all(sensor_loss(t) <= o.tolerance for t in at_upper)


def sensor_loss(record: TrialRecord) -> float:
    """The share of the packets sent that the sensor did not process in time (1: it failed)."""
    count = trial_count(record)
    if record.sensor_failed or count.offered <= 0:
        return 1.0
    return 1 - count.forwarded / count.offered


def sender_note(axis: Axis, repeats: int) -> str:
    """What a result the sender bounded means."""
    shared = f", measured once and shared by the {repeats} repeats" if repeats > 1 else ""
    ceiling = f" (its ceiling {axis.ceiling_pps:,.0f} pps{shared})" if axis.ceiling_pps else ""
    return (f"sender-limited: the sender{ceiling} could not offer more, the sensor was not the limit; "
            "its NDR is at least the result")


def trial_line(case_id: str, record: TrialRecord, tolerances: Sequence[float], repeats: int = 1,
               label: str = "") -> str:
    """One trial as one line (pure): the case, repeat and trial, its load, duration, loss (packets and %)
    and verdict against the goals. The loss counts a sender's shortfall, as the controller does."""
    where = f"{case_id} {label or f't{record.index}'}" + (f" repeat {record.repeat + 1}/{repeats}" if repeats > 1
                                                           and not label else "")
    achieved = f"{record.achieved_pps:,.0f} pps"
    if record.ceiling:
        load = f"sender at full speed: {achieved}"
    elif record.offered_pps is None:
        load = f"{record.value:,.4g} at topspeed: {achieved}"
    else:
        load = f"{record.offered_pps:,.0f} pps"
        if record.value != record.offered_pps:
            load = f"{record.value:,.4g} ({load})"
        if record.sender_limited:
            load += f" (sent {achieved})"
    count = trial_count(record)
    total = count.intended or count.offered
    lost = max(0, total - count.forwarded)
    ratio = lost / total if total > 0 else 1.0
    loss = f"lost {lost:,} of {total:,} pkts ({ratio:.3%})"
    if record.sensor_failed:
        verdict = f"sensor failed: {record.sensor_failed}"
    elif record.ceiling:
        verdict = "the sender's ceiling (not judged)"
    elif not record.accounted:
        verdict = "did not add up: run again"
    else:
        passed = sorted(t for t in tolerances if ratio <= t)
        goal = "NDR" if min(tolerances, default=0) == 0 else f"PDR {min(tolerances, default=0):g}"
        verdict = "pass" if len(passed) == len(tolerances) else \
            "fail" if not passed else f"fail {goal}, pass PDR {passed[0]:g}"
        why = [w for w, on in (("sender-limited", record.sender_limited),
                               (f"fell behind by {record.behind_pkts:,} pkts", record.fell_behind)) if on]
        if why and verdict != "pass":
            verdict += f" ({', '.join(why)})"
    return f"{where} {record.mode}: {load} for {record.duration_s:.2f} s: {loss}: {verdict}"


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
                                   relevant_upper=upper, conditional_pps=mid([r.conditional_pps for r in each]),
                                   sender_limited=any(r.sender_limited for r in each)))
    return out


def loss_of_sample(summary: SampleSummary) -> Waterfall | None:
    if summary.replay is None:
        return None
    return waterfall_of(summary.replay.sent_pkts, summary.wire, summary.sensor.counters, summary.invisible)
