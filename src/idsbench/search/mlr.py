"""The search controller is FD.io CSIT's MLRsearch (PyPI `MLRsearch`, draft-ietf-bmwg-mlrsearch);
idsbench is its Measurer. Pure glue, no I/O: the goals from `[search]`, the axis mapped onto the
controller's "load", one trial turned into the offered and forwarded counts the controller judges,
and its goal results turned back into axis values.

The controller's load grows with difficulty. On the rate axis it is the offered pps; on the replayers
axis the number of replayers (a trial runs ⌊load⌋ of them); on the cpus axis it is 1 / cpus (fewer
CPUs = harder), so its relevant lower bound is the smallest allocation that meets the goal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch, SearchGoal

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


Trial = Callable[[float, float], TrialCount]   # (intended duration s, axis value) -> counts


class TrialBudgetSpent(Exception):
    """`search.max_trials` trials ran: the controller is stopped, the bounds so far are kept."""


class Measurer(AbstractMeasurer):  # type: ignore[misc]
    """MLRsearch's measurer: one trial at the axis value of the intended load. A trial that does not add
    up is not a measurement: it is noted and repeated (ACCOUNTING_RETRIES at most)."""

    def __init__(self, trial: Trial, loads: LoadMap, *, max_trials: int, note: Callable[[str], None]):
        self.trial, self.loads, self.max_trials, self.note = trial, loads, max_trials, note
        self.trials = 0

    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        value = self.loads.value_of(intended_load)
        count = self._one(intended_duration, value)
        for _ in range(ACCOUNTING_RETRIES):
            if count.accounted:
                break
            self.note(f"a trial at {value:,.6g} did not add up ({count.why}): not a measurement, run again")
            count = self._one(intended_duration, value)
        if not count.accounted:
            self.note(f"the trial at {value:,.6g} did not add up {ACCOUNTING_RETRIES + 1} times; judged with "
                      "the packets it could not account for as lost")
        forwarded = max(0, min(count.forwarded, count.offered))
        return MeasurementResult(intended_duration=float(intended_duration), intended_load=float(intended_load),
                                 offered_count=int(count.offered), forwarding_count=int(forwarded),
                                 offered_duration=float(count.duration_s or intended_duration),
                                 intended_count=count.intended)

    def _one(self, duration: float, value: float) -> TrialCount:
        if self.trials >= self.max_trials:
            raise TrialBudgetSpent(f"search.max_trials = {self.max_trials} trials ran")
        self.trials += 1
        return self.trial(float(duration), value)


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


def run_controller(goals: Goals, loads: LoadMap, trial: Trial, *, max_trials: int,
                   note: Callable[[str], None], debug: Callable[[str], None] | None = None) -> list[GoalOutcome]:
    """Run MLRsearch over `trial` and return one outcome per tolerance (sorted). When the trial budget
    or the time limit ends the search early, the bounds found so far are returned (and noted)."""
    config = Config()
    config.goals = goals.search_goals()
    config.min_load = loads.min_load
    config.max_load = loads.max_load
    config.search_duration_max = goals.max_search_s
    config.warmup_duration = None
    controller = MultipleLossRatioSearch(config=config)
    measurer = Measurer(trial, loads, max_trials=max_trials, note=note)
    try:
        results = controller.search(measurer=measurer, debug=debug or (lambda _m: None))
        raw = [(goal.loss_ratio, r.relevant_lower_bound, r.relevant_upper_bound, r.conditional_throughput)
               for goal, r in results.items()]
    except (TrialBudgetSpent, RuntimeError) as exc:
        note(f"the search stopped early ({exc}); its bounds so far are reported")
        raw = _bounds_so_far(controller)
    return sorted((_outcome(loads, *r) for r in raw), key=lambda o: o.tolerance)


def _bounds_so_far(controller: MultipleLossRatioSearch) -> list[tuple[float, object, object, object]]:
    """The relevant bounds in the controller's database when it was stopped (as `search()` ends)."""
    out: list[tuple[float, object, object, object]] = []
    scaling = getattr(controller, "scaling", None)
    database = getattr(controller, "database", None)
    if scaling is None or database is None:
        return out
    from MLRsearch import GoalResult

    for goal, target in scaling.goal_to_final_target.items():
        r = GoalResult.from_bounds(bounds=database.get_relevant_bounds(target=target))
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
