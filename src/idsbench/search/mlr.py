"""The search controller is FD.io CSIT's MLRsearch (PyPI `MLRsearch`, draft-ietf-bmwg-mlrsearch);
idsbench is its measurer (search/measure.py). Pure glue, no I/O: the goals from `[search]`, the axis
mapped onto the controller's "load", what one trial tells the controller (`TrialCount`), its goal results
turned back into axis values, and the bounds of a search stopped early (`bounds_of`).

The controller's load grows with difficulty. On the rate axis it is the offered pps; on the replayers
axis the number of replayers (a trial runs ⌊load⌋ of them); on the cpus axis it is 1 / cpus (fewer
CPUs = harder), so its relevant lower bound is the smallest allocation that meets the goal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from MLRsearch import Config, GoalResult, MeasurementResult, MultipleLossRatioSearch, SearchGoal
from MLRsearch.discrete_load import DiscreteLoad
from MLRsearch.discrete_result import DiscreteResult
from MLRsearch.load_rounding import LoadRounding
from MLRsearch.measurement_database import MeasurementDatabase
from MLRsearch.target_scaling import TargetScaling

# A trial whose accounting did not close is repeated this many times at most; after that it is
# judged with every packet it could not account for counted as lost (never as forwarded).
ACCOUNTING_RETRIES = 2

AxisName = Literal["rate", "replayers", "cpus"]


@dataclass(frozen=True)
class Goals:
    """`[search]`'s goal parameters (the same for every tolerance; one goal per tolerance)."""

    tolerances: tuple[float, ...]       # goal loss ratios (0 = NDR)
    exceed_ratio: float                 # share of the duration sum that may be bad trials
    relative_width: float               # `precision`: the relevant bounds' relative width
    initial_trial_s: float
    final_trial_s: float
    duration_sum_s: float
    max_search_s: float

    def search_goals(self) -> list[SearchGoal]:
        initial = min(self.initial_trial_s, self.final_trial_s)
        return [SearchGoal(loss_ratio=t, exceed_ratio=self.exceed_ratio, relative_width=self.relative_width,
                           initial_trial_duration=initial, final_trial_duration=self.final_trial_s,
                           duration_sum=max(self.duration_sum_s, self.final_trial_s),
                           preceding_targets=2, fail_fast=False)
                for t in self.tolerances]


@dataclass(frozen=True)
class LoadMap:
    """Axis value ↔ controller load."""

    axis: AxisName
    low: float       # the axis' range, in its unit
    high: float

    def load_of(self, value: float) -> float:
        return 1.0 / value if self.axis == "cpus" else value

    def value_of(self, load: float) -> float:
        if self.axis == "cpus":
            return 1.0 / load
        if self.axis == "replayers":
            return float(max(1, math.floor(load + 1e-9)))
        return load

    @property
    def min_load(self) -> float:
        return self.load_of(self.high if self.axis == "cpus" else self.low)

    @property
    def max_load(self) -> float:
        return self.load_of(self.low if self.axis == "cpus" else self.high)


@dataclass(frozen=True)
class TrialCount:
    """What one trial tells the controller: packets offered (sent) and forwarded (processed by the
    sensor in time: sent minus every loss of the waterfall, minus what it left unprocessed, minus the
    backlog of a trial that fell behind); `accounted`: its waterfall closed."""

    offered: int
    forwarded: int
    duration_s: float
    accounted: bool = True
    why: str = ""            # when not accounted: what did not add up
    intended: int | None = None   # a sender-limited trial: the packets it should have sent (the shortfall
                                  # counts as loss: the load was never offered)


class TrialBudgetSpent(Exception):
    """`search.max_trials` trials ran: the controller is stopped, the bounds so far are kept."""


class Measuring(Protocol):
    """What the controller needs of a measurer (search/measure.py `Measurer`): MLRsearch's
    `measure(duration, load)`, the axis' load map, and every result it gave the controller."""

    @property
    def loads(self) -> LoadMap: ...

    @property
    def measured(self) -> list[MeasurementResult]: ...

    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult: ...


@dataclass(frozen=True)
class GoalOutcome:
    """One goal's result in axis units: the relevant lower bound (the best value meeting the goal:
    highest load, or smallest allocation), the relevant upper bound (the closest value that does not),
    and `kept`: the conditional throughput over the lower bound (1 − the loss of the trial its exceed
    ratio selects), so conditional throughput = the lower bound's load × kept (load axes)."""

    tolerance: float
    lower: float | None
    upper: float | None
    kept: float | None


def controller_config(goals: Goals, loads: LoadMap) -> Config:
    """MLRsearch's configuration of one search: the goals, the axis' load range, no warm-up."""
    config = Config()
    config.goals = goals.search_goals()
    config.min_load = loads.min_load
    config.max_load = loads.max_load
    config.search_duration_max = goals.max_search_s
    config.warmup_duration = None
    return config


Bounds = tuple[float, object, object, object]  # (loss ratio, relevant lower, relevant upper, conditional)


Hint = Callable[[DiscreteResult], DiscreteResult]


@dataclass
class HintedSearch(MultipleLossRatioSearch):  # type: ignore[misc]  # MLRsearch ships no types
    """MLRsearch whose initial trials take their next load from `hint(result)` instead of the result itself.
    Its initial trials pick each next load from the trial before: that trial's forwarding rate (MLRsearch's
    `run_initial_trials`; how loads are chosen is the implementation's, draft-ietf-bmwg-mlrsearch). The
    measurement database, hence every bound and the conditional throughput, keeps the measurer's own
    result: the main loop reads only the database, never what `measure` returns."""

    hint: Hint | None = field(default=None, repr=False, compare=False)

    def measure(self, duration: float, load: DiscreteLoad) -> DiscreteResult:
        result = super().measure(duration, load)
        return result if self.hint is None else self.hint(result)


def run_controller(goals: Goals, measurer: Measuring, *, note: Callable[[str], None],
                   debug: Callable[[str], None] | None = None, hint: Hint | None = None) -> list[GoalOutcome]:
    """Run MLRsearch over `measurer` and return one outcome per tolerance (sorted). When the trial budget
    or the time limit ends the search early, the bounds of the measurements so far are returned (and
    noted). `hint`: where the initial trials' loads come from (`HintedSearch`; None: each trial's own
    forwarding rate, as MLRsearch does)."""
    loads = measurer.loads
    config = controller_config(goals, loads)
    controller = HintedSearch(config=config, hint=hint)
    raw: list[Bounds]
    try:
        results = controller.search(measurer=measurer, debug=debug or (lambda _m: None))
        raw = [(goal.loss_ratio, r.relevant_lower_bound, r.relevant_upper_bound, r.conditional_throughput)
               for goal, r in results.items()]
    except (TrialBudgetSpent, RuntimeError) as exc:
        note(f"the search stopped early ({exc}); its bounds so far are reported")
        raw = bounds_of(config, measurer.measured)
    return sorted((_outcome(loads, *r) for r in raw), key=lambda o: o.tolerance)


def bounds_of(config: Config, measured: list[MeasurementResult]) -> list[Bounds]:
    """Each goal's relevant bounds over `measured`, computed as MLRsearch's controller computes them when
    its search ends: the same load rounding, target scaling and measurement database (MLRsearch's own
    classes, built from `config`; the controller's state is never read)."""
    rounding = LoadRounding(min_load=config.min_load, max_load=config.max_load,
                            float_goals=[goal.relative_width for goal in config.goals])
    to_load = DiscreteLoad.float_conver(rounding=rounding)
    scaling = TargetScaling(goals=config.goals, rounding=rounding)
    database = MeasurementDatabase(scaling.targets)
    for result in measured:
        database.add(DiscreteResult.with_load(result=result, load=to_load(result.intended_load)))
    out: list[Bounds] = []
    for goal in config.goals:
        r = GoalResult.from_bounds(bounds=database.get_relevant_bounds(target=scaling.goal_to_final_target[goal]))
        out.append((goal.loss_ratio, r.relevant_lower_bound, r.relevant_upper_bound, r.conditional_throughput))
    return out


def _outcome(loads: LoadMap, tolerance: float, lower: object, upper: object, conditional: object) -> GoalOutcome:
    def value(load: object) -> float | None:
        return None if load is None else loads.value_of(float(load))  # type: ignore[arg-type]

    kept = None
    if conditional is not None and lower is not None and float(lower) > 0:  # type: ignore[arg-type]
        kept = float(conditional) / float(lower)  # type: ignore[arg-type]
    return GoalOutcome(float(tolerance), value(lower), value(upper), kept)


def forwarded(sent: int, lost: int, unprocessed: int, behind: int) -> int:
    """Packets the sensor processed in time: sent minus every loss, minus what it left unprocessed,
    minus the packets of the backlog it was behind by."""
    return max(0, sent - lost - unprocessed - behind)


def behind_packets(backlog_work_s: float, replay_work_s: float, processed: int, allowance_s: float) -> int:
    """The packets a trial was behind by when its replay ended: the tail work beyond `allowance_s` (what
    physics leaves even a sensor that keeps up: a quota period, a capture block's timeout), at the
    replay's CPU cost per packet."""
    excess = backlog_work_s - allowance_s
    if excess <= 0 or processed <= 0 or replay_work_s <= 0:
        return 0
    per_packet = (replay_work_s + backlog_work_s) / processed
    return min(processed, math.ceil(excess / per_packet))
