"""A `mode = "duet"` campaign: the same preflight as any campaign, then every pair's samples, one duet
sample at a time (run/duet/sample.py), in rounds: round k runs sample k of every pair (a matrix of duets
has several), the pairs of each round in the random order the campaign's seed gives (run/order.py; the
order "cases" runs each pair's samples in a row). `--resume` keeps a duet sample whose pair record exists
and both of whose sides have a measured verdict; any other runs again, both sides together.

With `[duet] precision` (run/duet/precision.py): one calibration sample per pair first (in
`duet-calibration/`, counted nowhere), then the plan — samples per pair and each pair's replay length —
printed and kept in `duet/plan.json`; the planned rounds; then, while a pair's CI half-width is wider
than the precision and `budget_s` allows, another round of the pairs still short of it.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from idsbench import settings
from idsbench.analysis.stats import median, median_ci
from idsbench.errors import SpecError
from idsbench.plan import DuetPair, duet_pairs
from idsbench.probemodel import NoiseProbe
from idsbench.run.campaign import CampaignResult, disk_error, signals_as_interrupt
from idsbench.run.context import CampaignContext
from idsbench.run.duet.place import place
from idsbench.run.duet.precision import DEFAULT_BUDGET_S, DuetPlan, PairRate, plan_pairs, samples_to_settle
from idsbench.run.duet.sample import DuetSampleOutcome, DuetSampleRun
from idsbench.run.duet.session import DuetDeps
from idsbench.run.preflight import prepare_campaign
from idsbench.run.progress import Progress
from idsbench.spec import Spec
from idsbench.spec.duet import aa_announcement
from idsbench.store.duet import DuetPlanRecord, DuetSampleRecord, PairPlanRecord, read_plan, write_plan
from idsbench.store.layout import DUET_CALIBRATION_DIR, DUET_DIR, DUET_FILE, CampaignDir
from idsbench.store.reader import read_campaign_doc


def is_done(ctx: CampaignContext, pair: DuetPair, index: int) -> bool:
    return ((ctx.layout.duet_sample_dir(pair.pair_id, index) / DUET_FILE).is_file()
            and all(ctx.layout.is_done(c.case_id, index) for c in pair.sides))


def pair_rounds(pairs: Sequence[DuetPair], indices: Sequence[int], order: str,
                rng: random.Random | None) -> list[tuple[DuetPair, int]]:
    """The (pair, sample index) in the order they run: rounds (sample k of every pair, shuffled with `rng`
    when given), or each pair's samples in a row (order "cases")."""
    if order == "cases":
        return [(p, k) for p in pairs for k in indices]
    out = []
    for k in indices:
        members = list(pairs)
        if rng is not None:
            rng.shuffle(members)
        out += [(p, k) for p in members]
    return out


def record_ratio(rec: DuetSampleRecord) -> float | None:
    """A duet sample's cost ratio b/a (None unless both sides are ok with a cost and packets)."""
    a, b = rec.side("a"), rec.side("b")
    if a is None or b is None or a.status != "ok" or b.status != "ok":
        return None
    ca, cb = a.cost_s, b.cost_s
    if not ca or not cb or a.processed_pkts <= 0 or b.processed_pkts <= 0:
        return None
    return (cb / b.processed_pkts) / (ca / a.processed_pkts)


def half_width(ratios: Sequence[float]) -> float | None:
    """The relative half-width of the median's CI (the wider side), None with fewer than 2 ratios."""
    mid = median(list(ratios))
    ci = median_ci(list(ratios)) if len(ratios) >= 2 else None
    if mid is None or ci is None or mid <= 0:
        return None
    return max(mid - ci[0], ci[1] - mid) / mid


class DuetCampaign:
    """The samples of one duet campaign: the runner, the pair records it reads back, the budget."""

    def __init__(self, ctx: CampaignContext, pairs: list[DuetPair], deps: DuetDeps,
                 progress: Progress, result: CampaignResult, clock: Callable[[], float]):
        self.ctx, self.pairs, self.deps = ctx, pairs, deps
        self.progress, self.result, self.clock = progress, result, clock
        doc = read_campaign_doc(ctx.layout.root)
        run_order = doc.run_order
        self.order = run_order.order
        self.rng = random.Random(run_order.seed) if run_order.seed is not None else None

    def run_sample(self, pair: DuetPair, index: int, replay_s: float | None = None,
                   ctx: CampaignContext | None = None) -> DuetSampleOutcome | None:
        """One duet sample (None: kept from an earlier run)."""
        ctx = ctx or self.ctx
        sample_id = f"{pair.pair_id}/s{index}"
        if ctx is self.ctx and is_done(ctx, pair, index):
            self.progress.skip(sample_id)
            self.result.skipped += 1
            return None
        self.progress.sample_started(sample_id)
        try:
            outcome = DuetSampleRun(ctx, pair, index, self.deps, phase=self.progress.phase, replay_s=replay_s).run()
        except OSError as exc:
            raise disk_error(exc, self.ctx.layout.root) from exc
        status = outcome.record.status
        self.progress.sample_done(sample_id, status, outcome.warnings)
        self.result.ran += 1
        if status != "ok":
            self.result.failed.append(f"{sample_id}: {status} ({outcome.record.reason})")
        self.result.warnings.extend(f"{sample_id}: {w}" for w in outcome.warnings)
        return outcome

    def ratios(self, pair: DuetPair) -> list[float]:
        out = []
        for path in sorted((self.ctx.layout.root / DUET_DIR / pair.pair_id).glob(f"s*/{DUET_FILE}")):
            try:
                ratio = record_ratio(DuetSampleRecord.model_validate_json(path.read_text()))
            except (OSError, ValueError):
                continue
            if ratio is not None:
                out.append(ratio)
        return out

    # --- the spec's samples -------------------------------------------------------------------
    def run_fixed(self) -> None:
        for pair, index in pair_rounds(self.pairs, range(self.ctx.settings.samples), self.order, self.rng):
            self.run_sample(pair, index)

    # --- precision asked ----------------------------------------------------------------------
    def run_precise(self, precision: float, budget_s: float) -> None:
        started = self.clock()
        plan = read_plan(self.ctx.layout.root)
        if plan is None:
            plan = self._plan(precision, budget_s, started)
            deadline = started + budget_s
        else:  # resumed: the budget again, less the calibration it does not repeat
            deadline = started + budget_s - plan.calibration_s
        for line in plan.lines:
            self.progress.note(line)
        replay = {p.pair_id: p.replay_s for p in plan.pairs}
        cost = {p.pair_id: p.overhead_s + p.replay_s for p in plan.pairs}
        self.progress.set_total(self.progress.done + len(self.pairs) * plan.samples)
        for pair, index in pair_rounds(self.pairs, range(plan.samples), "interleaved", self.rng):
            if self.clock() + cost.get(pair.pair_id, 0.0) > deadline and not is_done(self.ctx, pair, index):
                self.progress.note(f"duet: budget_s ends before {pair.pair_id}/s{index}; stopping")
                return
            self.run_sample(pair, index, replay.get(pair.pair_id))
        index = plan.samples
        noted = False
        while True:
            widths = {p.pair_id: half_width(self.ratios(p)) for p in self.pairs}
            short = [p for p in self.pairs if (hw := widths[p.pair_id]) is None or hw > precision]
            if not short:
                self.progress.note(f"duet: every pair's CI within ±{precision:.2%}")
                return
            if not noted:  # the host scattered more than the plan expected: say so, and what it takes now
                noted = True
                for pair in short:
                    n = len(self.ratios(pair))
                    hw = widths[pair.pair_id]
                    need = samples_to_settle(n, hw, precision) if hw is not None else None
                    more = f"~{need} samples (~{(need - n) * cost.get(pair.pair_id, 0.0):.0f} s more)" if need else "more"
                    left = max(0.0, deadline - self.clock())
                    self.progress.note(f"duet: {pair.pair_id} at ±{(hw or 0):.2%} after {n} samples (the plan "
                                       f"expected ±{precision:.2%}): {more} would settle it; {left:.0f} s of "
                                       "budget_s left; adding rounds")
            if self.rng is not None:
                self.rng.shuffle(short)
            self.progress.set_total(self.progress.total + len(short))
            for pair in short:
                if self.clock() + cost.get(pair.pair_id, 0.0) > deadline:
                    self.progress.note(f"duet: budget_s ends with {len(short)} pair(s) short of ±{precision:.2%} "
                                       "(their verdict says what would settle them)")
                    return
                self.run_sample(pair, index, replay.get(pair.pair_id))
            index += 1

    def _plan(self, precision: float, budget_s: float, started: float) -> DuetPlanRecord:
        """One calibration sample per pair (at the spec's length), then the plan, printed and kept."""
        cal_ctx = dataclasses.replace(self.ctx, layout=CampaignDir(self.ctx.layout.root / DUET_CALIBRATION_DIR))
        self.progress.note(f"duet: calibrating {len(self.pairs)} pair(s) (one sample each, not counted) for "
                           f"±{precision:.2%}")
        self.progress.set_total(self.progress.total + len(self.pairs))
        rates = []
        for pair, _ in pair_rounds(self.pairs, [0], "interleaved", self.rng):
            t0 = self.clock()
            outcome = self.run_sample(pair, 0, ctx=cal_ctx)
            wall = self.clock() - t0
            rate = calibration_rate(pair, outcome, wall) if outcome is not None else None
            if rate is None:
                raise SpecError(f"the calibration sample of duet {pair.pair_id} did not measure both sides "
                                f"({outcome.record.reason if outcome else 'not run'}), so no precision plan can "
                                "be made.", fix=f"see {DUET_CALIBRATION_DIR}/ in the campaign directory; run the "
                                "spec without [duet] precision to see the samples' failures.")
            rates.append(rate)
        calibration_s = self.clock() - started
        plan = plan_pairs(rates, precision, max(0.0, budget_s - calibration_s),
                          self.ctx.settings.samples)
        record = plan_record(plan, rates, calibration_s)
        write_plan(self.ctx.layout.root, record)
        return record


def calibration_rate(pair: DuetPair, outcome: DuetSampleOutcome, wall_s: float) -> PairRate | None:
    """Each side's CPU-s per replay second and the sample's fixed wall time, from a calibration sample."""
    rec = outcome.record
    replay = outcome.summaries["a"].replay
    if rec.status != "ok" or replay is None:
        return None
    length = replay.end_unix - replay.start_unix
    costs = [s.cost_s for s in rec.sides]
    if length <= 0 or any(c is None or c <= 0 for c in costs):
        return None
    a, b = (float(c or 0.0) / length for c in costs)
    return PairRate(pair.pair_id, (a, b), max(0.0, wall_s - length), float(round(length)) or 1.0)


def plan_record(plan: DuetPlan, rates: Sequence[PairRate], calibration_s: float) -> DuetPlanRecord:
    by_id = {r.pair_id: r for r in rates}
    return DuetPlanRecord(
        precision=plan.precision, budget_s=plan.budget_s, samples=plan.samples,
        pairs=tuple(PairPlanRecord(pair_id=p.pair_id, replay_s=p.replay_s, expected_half_width=p.expected_half_width,
                                   cpu_per_s=by_id[p.pair_id].cpu_per_s, overhead_s=by_id[p.pair_id].overhead_s)
                    for p in plan.pairs),
        total_s=plan.total_s, feasible=plan.feasible, best_s=plan.best_s, lines=tuple(plan.describe()),
        planned_unix=time.time(), calibration_s=calibration_s)


def run_duet_campaign(spec: Spec, out_dir: Path, *, resume: bool = False, progress: Progress | None = None,
                      state_dir: Path | None = None, cache_dir: Path | None = None, name_prefix: str | None = None,
                      deps: DuetDeps | None = None, require_quiet: bool = False,
                      clock: Callable[[], float] = time.monotonic, noise: NoiseProbe | None = None) -> CampaignResult:
    """Run every pending duet sample of `spec` into `out_dir` (this machine only); `noise`: as in
    run.campaign.run_campaign."""
    if spec.mode != "duet":
        raise SpecError("run_duet_campaign runs mode = \"duet\" specs.", fix="call run.campaign.run_campaign.")
    deps = deps or DuetDeps()
    with signals_as_interrupt():
        ctx, cases = prepare_campaign(spec, out_dir, resume=resume, state_dir=state_dir or settings.state_dir(),
                                      cache_dir=cache_dir or settings.cache_dir(), require_quiet=require_quiet,
                                      noise=noise)
        ctx.name_prefix = name_prefix or settings.name_prefix()
        pairs = duet_pairs(cases)
        progress = progress or Progress(len(pairs) * ctx.settings.samples)
        result = CampaignResult(out_dir, 0, 0, warnings=[f"host: {w}" for w in ctx.warnings])
        notes = [line for line in [aa_announcement(spec)] if line]
        for cpus in dict.fromkeys(c.cpus for c in cases):
            where = place(deps.sample.available_cpus(), cpus, sensor_cpuset=ctx.settings.setup.cpuset,
                          kind=deps.placement)
            notes += [f"duet placement: {where.describe()}", *([f"duet: {where.note}"] if where.note else [])]
        with progress:
            for line in [*(f"warning: {w}" for w in ctx.warnings), *notes]:
                progress.note(line)
            campaign = DuetCampaign(ctx, pairs, deps, progress, result, clock)
            if spec.duet.precision is None:
                campaign.run_fixed()
            else:
                campaign.run_precise(spec.duet.precision, spec.duet.budget_s or DEFAULT_BUDGET_S)
        result.warnings.extend(n for n in notes if n.startswith("duet: "))
        return result
