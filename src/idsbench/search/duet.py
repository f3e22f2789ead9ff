"""The duet search: both sides' NDR (and PDRs) from trials that feed both (docs/duet.md,
"The duet search").

One duet trial replays the load once into both running sensors (run/duet/session.py `DuetSession.trial`); each
side's forwarded count comes from its own counters and waterfall (search/measure.py `trial_record`,
`trial_count`, exactly as a single search judges a trial). Each side has its own MLRsearch controller
(search/mlr.py `run_controller`), run one after the other over `SharedTrials`:

- side a's controller asks for (duration, load); a duet trial runs there; a's result answers it and
  b's result is queued under that (duration, load) for b;
- side b's controller then runs; a request whose (duration, load) has a queued result of b is answered
  by it (each result used once, in the order the trials ran); any other runs a new duet trial (whose
  result for a is queued too, unused).

MLRsearch is deterministic in its inputs: while b's controller is given the counts a's was, it asks
exactly the loads a's asked and needs no trial of its own. Its inputs are counts, not only pass or fail:
its initial trials take each next load from the trial before's forwarding rate (the first runs at the top
of the axis, where both sides lose), so two real sensors, which never lose exactly alike there, would part
from the second request on although they judge every trial alike (an A/A search here once found NDRs
17% apart that way: b's later trials were its own, run in a slow spell of the host). So both controllers
take those loads from the same figure: the forwarded count of the side that forwarded least in that trial
(`SideFeed.hint`, `mlr.HintedSearch`); each side's bounds and conditional throughput stay its own counts.
The sides part only where they judge a trial differently. From there b's own trials are duet trials too
(run later, at the host's speed then); each side's record says which trials answered its controller
(`TrialRecord.answered`) and a note says where and why the two parted. Each side only ever
gets results of trials it asked for, at the duration and load it asked for, each once: its controller's
view is that of a single search. A trial that did not add up on a side is not queued (the side's own
request runs it again, `mlr.ACCOUNTING_RETRIES`).

`search.repeats` whole duet searches, each on a fresh warm pair whose slots swap between repeats (repeat
k is duet sample k's placement); each side's results are the medians over the repeats, and the NDR ratio
b/a is judged per repeat (analysis/duet.py). The verification is one duet sample (each side's sample s0)
at the lower of the two NDRs: there both sides should be lossless; it verifies the side whose NDR it
is (both when they are equal) and gives the pair's cost ratio at that load.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from MLRsearch import MeasurementResult
from MLRsearch.discrete_result import DiscreteResult

from idsbench import settings
from idsbench.errors import SpecError
from idsbench.plan import DuetPair, duet_pairs
from idsbench.run.campaign import signals_as_interrupt
from idsbench.run.context import CampaignContext
from idsbench.run.duet.sample import DuetSampleRun
from idsbench.run.duet.session import DuetDeps, DuetSession
from idsbench.run.preflight import prepare_campaign
from idsbench.run.progress import Progress
from idsbench.run.session import Phase
from idsbench.search import mlr
from idsbench.search.axis import Axis, axis_for
from idsbench.search.campaign import describe
from idsbench.search.measure import Allocation, Carry, Trial, trial_count, trial_record, witness_rate
from idsbench.search.run import CONTROLLER, loss_of_sample, median_results, tolerance_result
from idsbench.spec import Spec
from idsbench.store.layout import SEARCH_DIR, SEARCH_FILE
from idsbench.store.schema import SampleSummary, SearchGoals, SearchRepeat, SearchResult, ToleranceResult, TrialRecord
from idsbench.store.writers import write_search_result
from idsbench.teardown import TeardownStack
from idsbench.traffic.rewrite import MAX_INDEX, distinct_copy

SIDES = ("a", "b")
DUET_AXES = ("rate", "replayers")  # the load of one replay; the cpus axis would change both limits per trial

Key = tuple[float, float]   # (intended duration, intended load) as the controller asked


def check_duet_search(spec: Spec) -> None:
    """SpecError naming the fix when a duet spec cannot be searched (before anything starts)."""
    if spec.mode != "duet":
        return
    cfg = spec.search
    if cfg.axis not in DUET_AXES:
        raise SpecError(f"a duet search varies the load of the one replay both sides see; search.axis = "
                        f"{cfg.axis!r} would change both sensors' limits in every trial, which the duet keeps "
                        "identical and fixed.",
                        fix="use search.axis = \"rate\" (or \"replayers\"), or search the sides' minimum CPUs "
                            "with mode = \"single\".")
    if not cfg.warm:
        raise SpecError("a duet search runs warm trials only (both sensors stay up between trials); "
                        "search.warm = false asks for a fresh pair per trial.",
                        fix="set search.warm = true, or search each side with mode = \"single\".")


def measurement_result(intended_duration: float, intended_load: float, count: mlr.TrialCount) -> MeasurementResult:
    """What one trial's count tells MLRsearch (as search/measure.py `Measurer.measure` gives it)."""
    return MeasurementResult(intended_duration=float(intended_duration), intended_load=float(intended_load),
                             offered_count=int(count.offered),
                             forwarding_count=int(max(0, min(count.forwarded, count.offered))),
                             offered_duration=float(count.duration_s or intended_duration),
                             intended_count=count.intended)


class SharedTrials:
    """Duet trials shared by the two sides' controllers: a request is answered by a queued result of an
    earlier trial at the same (duration, load) for that side, else by a new trial (whose other side's
    result is queued). `run(trial)` runs one duet trial and returns each side's count."""

    def __init__(self, run: Callable[[Trial], dict[str, mlr.TrialCount]], max_trials: int):
        self.run, self.max_trials = run, max_trials
        self.queued: dict[str, dict[Key, deque[tuple[int, mlr.TrialCount]]]] = {s: {} for s in SIDES}
        self.trials_run = 0
        self.shared = 0      # requests answered by a trial another side's request ran
        self.given: dict[str, list[int]] = {s: [] for s in SIDES}   # per side: the trials (0-based, in the
                                                                    # order run) that answered its controller
        self.counts: list[dict[str, mlr.TrialCount]] = []           # each trial's counts, in that order

    def count(self, side: str, key: Key, trial: Trial) -> mlr.TrialCount:
        waiting = self.queued[side].get(key)
        if waiting:
            self.shared += 1
            ordinal, queued = waiting.popleft()
            self.given[side].append(ordinal)
            return queued
        if self.trials_run >= self.max_trials:
            raise mlr.TrialBudgetSpent(f"search.max_trials = {self.max_trials} duet trials ran")
        ordinal = self.trials_run
        self.trials_run += 1
        counts = self.run(trial)
        self.counts.append(counts)
        for other, c in counts.items():
            if other != side and c.accounted:
                self.queued[other].setdefault(key, deque()).append((ordinal, c))
        self.given[side].append(ordinal)
        return counts[side]

    def parting(self) -> str | None:
        """Where the sides' controllers parted (None: b was given exactly the trials a was) and the inputs
        that made them: the last trial both were given and what each side forwarded in it."""
        a, b = self.given["a"], self.given["b"]
        if a == b:
            return None
        common = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        if common == 0:
            return "the sides' controllers asked different trials from the first on"
        last = a[common - 1]
        ca, cb = self.counts[last]["a"], self.counts[last]["b"]
        return (f"the sides' controllers parted after {common} shared trial(s): in the last, a forwarded "
                f"{ca.forwarded:,} and b {cb.forwarded:,} of {ca.offered:,} packets, and MLRsearch's next load "
                "follows those counts (each side's later trials are its own, at the host's speed then)")


class SideFeed:
    """One side's measurer for its MLRsearch controller (`mlr.Measuring`): trials from `SharedTrials`."""

    def __init__(self, side: str, shared: SharedTrials, loads: mlr.LoadMap, note: Callable[[str], None]):
        self.side, self.shared, self._loads, self.note = side, shared, loads, note
        self.measured: list[MeasurementResult] = []

    @property
    def loads(self) -> mlr.LoadMap:
        return self._loads

    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        """As `Measurer.measure`: a count that did not add up is run again (ACCOUNTING_RETRIES), then
        judged with the packets it could not account for as lost."""
        key = (float(intended_duration), float(intended_load))
        trial = Trial(self._loads.value_of(intended_load), float(intended_duration))
        count = self.shared.count(self.side, key, trial)
        for _ in range(mlr.ACCOUNTING_RETRIES):
            if count.accounted:
                break
            self.note(f"side {self.side}: a trial at {trial.value:,.6g} did not add up ({count.why}): run again")
            count = self.shared.count(self.side, key, trial)
        result = measurement_result(intended_duration, intended_load, count)
        self.measured.append(result)
        return result

    def hint(self, result: DiscreteResult) -> DiscreteResult:
        """What this side's controller takes its next initial load from (`mlr.HintedSearch`): its last result
        with the forwarded count of the side that forwarded least in that trial, so both sides' controllers,
        given the same trial, ask the same next load. (Its own result is what its database keeps.)"""
        ordinal = self.shared.given[self.side][-1]
        counts = [c for c in self.shared.counts[ordinal].values()  # the sides that saw this trial's replay whole
                  if c.accounted and c.offered == result.offered_count]
        least = min((c.forwarded for c in counts), default=result.forwarding_count)
        if least >= result.forwarding_count:
            return result
        fewer = MeasurementResult(intended_duration=result.intended_duration, intended_load=result.intended_load,
                                  offered_count=result.offered_count, forwarding_count=max(0, least),
                                  offered_duration=result.offered_duration,
                                  duration_with_overheads=result.duration_with_overheads,
                                  intended_count=result.intended_count)
        return DiscreteResult.with_load(result=fewer, load=result.discrete_load)


def side_outcomes(goals: mlr.Goals, shared: SharedTrials, loads: mlr.LoadMap,
                  note: Callable[[str], None]) -> dict[str, list[mlr.GoalOutcome]]:
    """Side a's controller, then side b's, over the shared trials (pure given `shared.run`)."""
    out = {}
    for side in SIDES:
        feed = SideFeed(side, shared, loads, note)
        out[side] = mlr.run_controller(goals, feed, note=_prefixed(note, f"side {side}: "), hint=feed.hint)
    return out


def _prefixed(note: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda m: note(prefix + m)


def repeat_record(axis: Axis, tolerances: list[float], index: int, outcomes: list[mlr.GoalOutcome], trials: int,
                  elapsed_s: float) -> SearchRepeat:
    by_tolerance = {o.tolerance: o for o in outcomes}
    results = [tolerance_result(axis, t, by_tolerance.get(t)) for t in sorted(tolerances)]
    ndr = next((r for r in results if r.tolerance == 0), None)
    return SearchRepeat(index=index, results=tuple(results), trials=trials, elapsed_s=round(elapsed_s, 3),
                        ndr_pps=ndr.value_pps if ndr else None)


def verification_load(results: dict[str, list[ToleranceResult]]) -> float | None:
    """The axis value of the verification sample: the lower of the two sides' NDRs (either's when the
    other found none)."""
    ndrs = [r.value for side in SIDES for r in results[side] if r.tolerance == 0 and r.value is not None]
    return min(ndrs) if ndrs else None


def slot_allocation(session: DuetSession, side: str) -> Allocation:
    """The cores a side's slot gives it when both sides are busy: its quota, at most its equal share of the
    CPUs it runs on (the shared placement's slots on one CPU without quotas: half a CPU each)."""
    slots = [s.slot for s in session.sides]
    mine = next(s.slot for s in session.sides if s.name == side)
    cpus = mine.cpus or tuple(session.deps.sample.available_cpus())
    sharing = sum(1 for s in slots if set(s.cpus or cpus) & set(cpus))
    share = len(cpus) / max(1, sharing)
    return Allocation(min(mine.quota, share) if mine.quota is not None else share, mine.quota is not None)


class DuetTrials:
    """The warm pair of one repeat and its trials: one `DuetSession` (both sensors, the mirror), one
    replay per trial with flows no earlier trial sent, each side's trial record and carry."""

    def __init__(self, ctx: CampaignContext, pair: DuetPair, deps: DuetDeps, axis: Axis, root: Path, repeat: int,
                 first_index: int, phase: Phase, note: Callable[[str], None]):
        self.ctx, self.pair, self.deps, self.axis, self.root = ctx, pair, deps, axis, root
        self.repeat, self.first_index, self.phase, self.note = repeat, first_index, phase, note
        self.records: dict[str, list[TrialRecord]] = {s: [] for s in SIDES}
        self.carry: dict[str, Carry] = {s: Carry() for s in SIDES}
        self.flow_block = 0
        self.session: DuetSession | None = None
        self.ran = 0

    @property
    def next_index(self) -> int:
        return self.first_index + self.ran

    def start(self, stack: TeardownStack) -> str | None:
        name = f"warm{self.repeat}" if self.repeat else "warm"
        dirs = {s: self.root / self.pair.side(s).case_id / name for s in SIDES}
        pair_dir = self.root / self.pair.pair_id / name
        for d in (*dirs.values(), pair_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.session = DuetSession(self.ctx, self.pair, self.repeat, dirs, pair_dir, self.deps, stack,
                                   f"{stack.run_id}-{name}", self.phase)
        if self.session.open():
            return None
        return "; ".join(f"side {s.name}: {s.session.facts.sensor_failure}" for s in self.session.sides
                         if s.session.facts.sensor_failure) or "a sensor did not start"

    def stop(self) -> None:
        if self.session is not None:
            self.session.close()

    def allocation(self, side: str) -> Allocation:
        """The side's slot: its quota, at most its share of the CPUs it is pinned to (slots on the same
        CPUs share them equally: two cgroups of equal weight)."""
        assert self.session is not None
        return slot_allocation(self.session, side)

    def trial(self, trial: Trial) -> dict[str, TrialRecord]:
        """One duet trial: each side's record (a side whose sensor is gone gets a failed one)."""
        session, index = self.session, self.next_index
        assert session is not None, "start() first"
        self.ran += 1
        case = self.axis.case_for(trial.value, trial.duration_s)
        out = self.root / self.pair.pair_id / f"t{index}"
        out.mkdir(parents=True, exist_ok=True)
        outcome = session.trial(session.plan(self._fresh_flows(case.replayers), out, case), stop_after=False)
        records = {}
        for side in session.sides:
            name = side.name
            if self.carry[name].gone:
                records[name] = TrialRecord(index=index, mode="warm", value=trial.value or 0.0,
                                            offered_pps=self.axis.offered_pps(trial.value), achieved_pps=0.0,
                                            duration_s=0.0, sent_pkts=0, repeat=self.repeat,
                                            sensor_failed=self.carry[name].gone)
                continue
            record, self.carry[name] = trial_record(self.axis, trial, outcome.side(name).outcome,
                                                    self.allocation(name), index, self.repeat, "warm",
                                                    self.carry[name], rule="allocation")
            if record.sensor_failed:
                self.carry[name] = dataclasses.replace(self.carry[name], gone=record.sensor_failed)
                self.note(f"trial {index}: side {name}: {record.sensor_failed}")
            elif not record.accounted and not side.session.resync():
                self.note(f"trial {index}: side {name}'s counters never caught up with its interface")
            records[name] = record.model_copy(update={"witness_rate": witness_rate(side.session, record)})
        for name, record in records.items():
            self.records[name].append(record)
        return records

    def counts(self, trial: Trial) -> dict[str, mlr.TrialCount]:
        return {name: trial_count(r) for name, r in self.trial(trial).items()}

    def mark_answered(self, first: int, given: dict[str, list[int]]) -> None:
        """Each side's records say whether their result answered its controller (`given`: per side the
        trials, counted from the record at `first`, that did)."""
        for name in SIDES:
            mine = {first + k for k in given[name]}
            self.records[name] = [r.model_copy(update={"answered": i in mine}) for i, r in enumerate(self.records[name])]

    def ceiling(self) -> Axis | None:
        """The sender's maximum through the mirror (a topspeed trial at `initial_trial_s`, given to no
        controller): the axis up to it, or None when it failed."""
        records = self.trial(Trial(None, self.ctx.settings.search.initial_trial_s))
        achieved = records["a"].achieved_pps
        failed = next((r.sensor_failed for r in records.values() if r.sensor_failed), None)
        if failed or achieved <= 0:
            self.note(f"the ceiling trial failed: {failed or 'nothing was sent'}")
            return None
        self.axis = self.axis.with_ceiling(achieved)
        for name in SIDES:
            self.records[name][-1] = self.records[name][-1].model_copy(update={"value": self.axis.high, "ceiling": True})
        return self.axis

    def _fresh_flows(self, replayers: int) -> list[Path]:
        original = Path(self.ctx.traces[self.pair.a.trace].path)
        paths = []
        for _ in range(replayers):
            self.flow_block = self.flow_block % MAX_INDEX + 1
            paths.append(distinct_copy(original, self.flow_block, self.ctx.cache_dir))
        return paths


class DuetSearch:
    """Search one duet pair: `search.repeats` duet searches, each side's medians, one verification duet
    sample; each side's `SearchResult` in `search/<side case>/search.json`."""

    def __init__(self, ctx: CampaignContext, pair: DuetPair, deps: DuetDeps | None = None,
                 phase: Phase = lambda _p: None):
        self.ctx, self.pair, self.phase = ctx, pair, phase
        self.deps = deps or DuetDeps()
        self.cfg = ctx.settings.search
        self.root = ctx.layout.root / SEARCH_DIR
        self.trials: dict[str, list[TrialRecord]] = {s: [] for s in SIDES}
        self.notes: list[str] = []
        self.allocation: float | None = None   # each side's cores (its slot: the same for both)

    def goals(self) -> mlr.Goals:
        c = self.cfg
        return mlr.Goals(tuple(c.tolerances), c.exceed_ratio, c.precision, c.initial_trial_s, c.trial_s,
                         c.duration_sum, c.max_search_s)

    def run(self) -> dict[str, SearchResult]:
        started = time.monotonic()
        repeats: dict[str, list[SearchRepeat]] = {s: [] for s in SIDES}
        axis = axis_for(self.ctx, self.pair.a, self.deps.sample.available_cpus())
        for k in range(self.cfg.repeats):
            self.phase(f"duet search {k + 1}/{self.cfg.repeats}" if self.cfg.repeats > 1 else "duet search")
            began = time.monotonic()
            axis, outcomes, trials = self._one_search(k, axis_for(self.ctx, self.pair.a,
                                                                  self.deps.sample.available_cpus()) if k else axis)
            for side in SIDES:
                repeats[side].append(repeat_record(axis, list(self.cfg.tolerances), k, outcomes.get(side, []), trials,
                                                   time.monotonic() - began))
        results = {side: median_results(repeats[side]) for side in SIDES}
        trials_done = time.monotonic()
        verification = self._verify(axis, results)
        g = self.goals()
        goals = SearchGoals(tolerances=g.tolerances, exceed_ratio=g.exceed_ratio, relative_width=g.relative_width,
                            initial_trial_s=min(g.initial_trial_s, g.final_trial_s), final_trial_s=g.final_trial_s,
                            duration_sum_s=max(g.duration_sum_s, g.final_trial_s), controller=f"{CONTROLLER}, duet")
        out = {}
        for side in SIDES:
            case = self.pair.side(side)
            result = SearchResult(
                case_id=case.case_id, axis=axis.name, unit=axis.unit, precision=self.cfg.precision, mode="warm",
                avg_frame_bytes=axis.avg_frame, sender_ceiling_pps=axis.ceiling_pps, fixed_load_pps=axis.fixed_load_pps,
                results=tuple(results[side]), trials=tuple(self.trials[side]),
                verification=tuple(v for v in [verification.get(side)] if v is not None),
                elapsed_s=round(time.monotonic() - started, 3), trials_s=round(trials_done - started, 3),
                verification_s=round(time.monotonic() - trials_done, 3),
                notes=tuple(self.notes), repeats=tuple(repeats[side]), goals=goals,
                allocation_cpus=self.allocation)
            (self.root / case.case_id).mkdir(parents=True, exist_ok=True)
            write_search_result(self.root / case.case_id, result)
            out[side] = result
        return out

    def _one_search(self, repeat: int, axis: Axis) -> tuple[Axis, dict[str, list[mlr.GoalOutcome]], int]:
        first = len(self.trials["a"])
        trials = DuetTrials(self.ctx, self.pair, self.deps, axis, self.root, repeat, first, self.phase,
                            self.notes.append)
        try:
            with self.deps.sample.make_stack(self.ctx.state_dir) as stack:
                failure = trials.start(stack)
                try:
                    if failure is not None:
                        self.notes.append(f"the pair did not start: {failure}")
                        return axis, {}, 0
                    self.allocation = trials.allocation("a").cores
                    if trials.axis.needs_ceiling and trials.ceiling() is None:
                        return trials.axis, {}, trials.ran
                    shared = SharedTrials(trials.counts, self.cfg.max_trials)
                    before = trials.ran   # the ceiling trial, given to no controller
                    loads = mlr.LoadMap(trials.axis.name, trials.axis.low, trials.axis.high)
                    try:
                        outcomes = side_outcomes(self.goals(), shared, loads, self.notes.append)
                    finally:
                        trials.mark_answered(before, shared.given)
                    self.notes.append(f"repeat {repeat}: {shared.trials_run} duet trials, {shared.shared} requests "
                                      "answered by a trial the other side's controller asked for")
                    parting = shared.parting()
                    if parting:
                        self.notes.append(f"repeat {repeat}: {parting}")
                    return trials.axis, outcomes, trials.ran
                finally:
                    trials.stop()
        finally:
            for side in SIDES:
                self.trials[side].extend(trials.records[side])

    def _verify(self, axis: Axis, results: dict[str, list[ToleranceResult]]) -> dict[str, TrialRecord]:
        """One duet sample (each side's sample s0) at the lower NDR: `verified` for the side(s) whose NDR
        it is; the other side's NDR is above it, so it is noted, not verified."""
        value = verification_load(results)
        if value is None:
            return {}
        self.phase("verify")
        pair = dataclasses.replace(self.pair, a=axis.case_for(value, self.cfg.final_s),
                                   b=dataclasses.replace(axis, case=self.pair.b).case_for(value, self.cfg.final_s))
        run = DuetSampleRun(self.ctx, pair, 0, self.deps, self.phase, case_ids=(self.pair.a.case_id, self.pair.b.case_id))
        summaries = run.run().summaries
        out = {}
        index = len(self.trials["a"])
        for side in SIDES:
            record = verification_record(summaries[side], axis, value, self.cfg.final_s, index)
            out[side] = record
            for i, r in enumerate(results[side]):
                if r.tolerance != 0 or r.value is None:
                    continue
                if r.value != value:
                    self.notes.append(f"side {side}: its NDR {r.value:,.6g} {axis.unit} is above the verification "
                                      f"load {value:,.6g} (the other side's NDR): not verified at its own")
                    continue
                wf = record.waterfall
                loss = 1.0 if record.sensor_failed or wf is None else wf.loss_ratio
                results[side][i] = r.model_copy(update={"verified": record.sensor_failed is None and loss <= 0})
        return out


def verification_record(summary: SampleSummary, axis: Axis, value: float, duration_s: float, index: int) -> TrialRecord:
    replay = summary.replay
    return TrialRecord(
        index=index, mode="cold", value=value, offered_pps=axis.offered_pps(value),
        achieved_pps=sum(x.pps for x in replay.replayers) if replay else 0.0, duration_s=duration_s,
        sent_pkts=replay.sent_pkts if replay else 0, counters=summary.sensor.counters,
        waterfall=loss_of_sample(summary), sensor_us_per_pkt=summary.cost.us_per_pkt if summary.cost else None,
        sensor_failed=None if summary.status in ("ok", "invalid") else summary.reason)


def search_duet_campaign(spec: Spec, out_dir: Path, *, resume: bool = False, progress: Progress | None = None,
                         state_dir: Path | None = None, cache_dir: Path | None = None, name_prefix: str | None = None,
                         deps: DuetDeps | None = None, require_quiet: bool = False) -> list[dict[str, SearchResult]]:
    """Search every duet pair of `spec` into `out_dir` (each side's search.json, the verification as
    duet sample s0); a pair whose sides' searches and sample are done is skipped with `resume`."""
    check_duet_search(spec)
    spec = spec.model_copy(update={"samples": 1})
    deps = deps or DuetDeps()
    with signals_as_interrupt():
        ctx, cases = prepare_campaign(spec, out_dir, resume=resume, state_dir=state_dir or settings.state_dir(),
                                      cache_dir=cache_dir or settings.cache_dir(), require_quiet=require_quiet,
                                      search=True)
        ctx.name_prefix = name_prefix or settings.name_prefix()
        pairs = duet_pairs(cases)
        progress = progress or Progress(len(pairs))
        out = []
        with progress:
            for warning in ctx.warnings:
                progress.note(f"warning: {warning}")
            for pair in pairs:
                files = [out_dir / SEARCH_DIR / c.case_id / SEARCH_FILE for c in pair.sides]
                if resume and all(f.is_file() for f in files) and all(ctx.layout.is_done(c.case_id, 0) for c in pair.sides):
                    progress.skip(pair.pair_id)
                    continue
                progress.sample_started(pair.pair_id)
                results = DuetSearch(ctx, pair, deps, phase=progress.phase).run()
                out.append(results)
                progress.sample_done(pair.pair_id, "; ".join(f"{s}: {describe(r)}" for s, r in results.items()),
                                     list(results["a"].notes))
        return out
