"""The search itself, pure: which load to try next, and what the trials so far say.

In the spirit of MLRsearch (FD.io CSIT): one trial informs every tolerance at once; the first trial is
at the top of the range (the sender's measured maximum or the spec's bound); a failing trial's loss
ratio gives the first guess of the sensor's capacity; after that the bracket [highest pass, lowest
fail] of each tolerance narrows geometrically until hi/lo − 1 ≤ precision (or, on an integer axis,
hi − lo ≤ 1). A trial where the sender fell short of the offered load is never judged at that load but at the
load actually achieved (rate axis): within tolerance it passes there and the result is a lower
bound (the sensor may take more than this sender can send); outside it, it fails there.

`direction = "max"`: find the highest load that stays within tolerance (rate, replayers).
`direction = "min"`: find the smallest allocation that stays within tolerance (cpus).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["max", "min"]
FIRST_GUESS_MARGIN = 0.97   # aim just below the capacity a failing trial suggests
FALLBACK_STEP = 0.5         # no better guess: halve (max) or double (min)
STALL_STEP = 0.8            # after 2 failures, a hint within 20% of the lowest failure is a creep
MAX_STEP_BACK = 4           # a failed verification moves at most this many precision steps at once


@dataclass(frozen=True)
class Observation:
    value: float               # the axis value tried (load, or allocation)
    loss_ratio: float          # every loss of the waterfall, over what was sent
    sender_limited: bool = False
    achieved: float | None = None   # the load actually sent (rate axis), when sender-limited
    usage: float | None = None      # cpus axis: the CPU the sensor used (cores), a hint for the guess
    behind: bool = False            # it did not keep up (needed more than it had): outside every tolerance


@dataclass
class Bracket:
    tolerance: float
    passed: float | None = None     # best value within tolerance on the safe side of every failure
    failed: float | None = None     # closest value seen outside it
    lower_bound: bool = False
    passes: list[tuple[float, bool]] = field(default_factory=list)  # (value, lower bound) of every pass


@dataclass
class BracketSearch:
    tolerances: tuple[float, ...]
    precision: float
    low: float                      # the range of the axis
    high: float
    direction: Direction = "max"
    integer: bool = False
    brackets: list[Bracket] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"empty search range [{self.low}, {self.high}]")
        self.brackets = [Bracket(t) for t in sorted(self.tolerances)]

    # --- recording --------------------------------------------------------------------------
    def record(self, obs: Observation) -> None:
        self.observations.append(obs)
        for b in self.brackets:
            within = obs.loss_ratio <= b.tolerance and not obs.behind
            if obs.sender_limited:  # judged at the load the sensor actually got, never the offered one
                if obs.achieved is not None:
                    if within:
                        self._pass(b, obs.achieved, lower_bound=True)
                    else:
                        self._fail(b, obs.achieved)
                continue
            if within:
                self._pass(b, obs.value, lower_bound=False)
            else:
                self._fail(b, obs.value)

    def better(self, a: float, b: float) -> bool:
        """a is a better result than b (higher load, or smaller allocation)."""
        return a > b if self.direction == "max" else a < b

    def _pass(self, b: Bracket, value: float, lower_bound: bool) -> None:
        b.passes.append((value, lower_bound))
        self._settle(b)

    def _fail(self, b: Bracket, value: float) -> None:
        if b.failed is None or self.better(b.failed, value):  # keep the failure closest to the passes
            b.failed = value
        self._settle(b)

    def _settle(self, b: Bracket) -> None:
        """The best pass on the safe side of the closest failure. Trials that disagree (a pass at a
        load above a failure: the host paused during one of them) resolve conservatively, as in
        MLRsearch: the failure stands and the passes beyond it no longer count."""
        safe = [(v, lb) for v, lb in b.passes if b.failed is None or self.better(b.failed, v)]
        if not safe:
            b.passed, b.lower_bound = None, False
            return
        pick = max if self.direction == "max" else min
        b.passed, b.lower_bound = pick(safe, key=lambda p: p[0])

    # --- deciding ---------------------------------------------------------------------------
    def resolved(self, b: Bracket) -> bool:
        best, worst = (self.high, self.low) if self.direction == "max" else (self.low, self.high)
        if b.failed is None:  # only passes so far: done once the best end of the range passed
            return (b.passed is not None and math.isclose(b.passed, best)) or \
                (b.passed is not None and self.direction == "max" and b.lower_bound)
        if b.passed is None:  # only failures: done once the worst end failed (no result exists)
            return math.isclose(b.failed, worst)
        lo, hi = sorted((b.passed, b.failed))
        if self.integer:
            return hi - lo <= 1
        return lo > 0 and hi / lo - 1 <= self.precision

    def done(self) -> bool:
        return all(self.resolved(b) for b in self.brackets)

    def next_value(self) -> float | None:
        """The next value to try, or None when every tolerance is resolved."""
        if not self.observations:
            return self.high  # max: the top load first; min: the largest allocation, which should pass
        open_brackets = [b for b in self.brackets if not self.resolved(b)]
        if not open_brackets:
            return None
        b = open_brackets[0]  # the strictest tolerance first (NDR): the others share its trials
        value = self._guess(b)
        return self._round(value)

    def _guess(self, b: Bracket) -> float:
        if b.passed is not None and b.failed is not None:
            middle = math.sqrt(b.passed * b.failed)  # geometric midpoint
            if self.direction == "max":
                # a pass just below the estimated capacity: close the bracket from just above it
                est = self._capacity_estimate(b)
                if est is not None and b.passed < est < middle:
                    return min(middle, max(est * 1.02, b.passed * (1 + self.precision * 0.999)))
            else:
                # the CPU the trials needed, when it falls inside the bracket, beats the midpoint
                hint = self._usage_hint()
                tried = {o.value for o in self.observations}
                if hint is not None and b.failed < hint < b.passed and hint not in tried:
                    return hint
            return middle
        assert b.failed is not None or b.passed is not None
        if self.direction == "max":
            assert b.failed is not None
            hint = self._capacity_hint(b)
            candidate = hint if hint is not None else b.failed * FALLBACK_STEP
            if hint is not None and self._fails(b) >= 2 and hint > b.failed * STALL_STEP:
                # the loss does not shrink with the excess load (bursts lost at every load): the
                # hints creep down in small steps; halve instead
                candidate = b.failed * FALLBACK_STEP
            return max(self.low, min(candidate, b.failed * (1 - self.precision)))
        # min: the smallest allocation that passes; start from how much CPU the sensor used
        assert b.passed is not None
        hint = self._usage_hint()
        candidate = hint if hint is not None and hint < b.passed else b.passed * FALLBACK_STEP
        return max(self.low, min(candidate, b.passed * (1 - self.precision)))

    def _capacity_hint(self, b: Bracket) -> float | None:
        """From the failing trials, the load the sensor can keep, aimed just below.

        One failure: the sensor kept (1 − loss) of the load. Two or more: the kept load is fitted as
        kept = C + a·(load − C) through the two lowest failures (buffers absorb part of an excess
        load, so one trial overstates the capacity), and C is the guess."""
        capacity = self._capacity_estimate(b)
        if capacity is None:
            return None
        guess = capacity * (1 + b.tolerance) * FIRST_GUESS_MARGIN
        tried = {o.value for o in self.observations}
        return guess if guess not in tried and guess > self.low else None

    def _fails(self, b: Bracket) -> int:
        return sum(1 for o in self.observations if not o.sender_limited and o.loss_ratio > b.tolerance)

    def _capacity_estimate(self, b: Bracket) -> float | None:
        fails = sorted((o for o in self.observations if not o.sender_limited and o.loss_ratio > b.tolerance),
                       key=lambda o: o.value)
        if not fails:
            return None
        kept = [(o.value, o.value * (1 - o.loss_ratio)) for o in fails]
        capacity = kept[0][1]
        if len(kept) >= 2:
            (l1, k1), (l2, k2) = kept[0], kept[1]
            a = (k2 - k1) / (l2 - l1) if l2 != l1 else 0.0
            if 0 <= a < 1:
                fitted = (k1 - a * l1) / (1 - a)
                if 0 < fitted < capacity:
                    # at most a step below the lowest failure's own estimate: a fit through two
                    # close failures amplifies their noise (12k pps sensor, 13k and 17k pps: 5.4k)
                    capacity = max(fitted, capacity * STALL_STEP)
        return capacity

    def _usage_hint(self) -> float | None:
        used = [o.usage for o in self.observations if o.usage is not None and (o.loss_ratio == 0 or o.behind)]
        return max(used) * 1.1 if used else None

    def _round(self, value: float) -> float:
        if not self.integer:
            return value
        rounded = float(round(value))
        b = next(b for b in self.brackets if not self.resolved(b))
        for bound in (b.passed, b.failed):  # never repeat a bracket end
            if bound is not None and rounded == bound:
                rounded = math.floor(value) if self.direction == "max" else math.ceil(value)
        return min(max(rounded, self.low), self.high)

    # --- results ----------------------------------------------------------------------------
    def result(self) -> list[Bracket]:
        return list(self.brackets)


def step_back(value: float, loss_ratio: float, tolerance: float, precision: float, *, direction: Direction,
              integer: bool, low: float, high: float) -> float | None:
    """The next value to verify after a verification at `value` lost `loss_ratio` (> tolerance).

    At least one precision step towards safety; further when the loss says the capacity is further
    away (the same estimate as a failing search trial: the sensor kept (1 − loss) of the load, or
    needs 1/(1 − loss) of the allocation), but never more than MAX_STEP_BACK steps at once, so one
    unlucky trial does not throw the result far away. None when the step leaves the axis' range."""
    kept = max(0.0, 1.0 - loss_ratio)
    if direction == "max":
        one = value - 1 if integer else value / (1 + precision)
        estimate = value * kept * (1 + tolerance) * FIRST_GUESS_MARGIN
        furthest = value - MAX_STEP_BACK if integer else value / (1 + precision) ** MAX_STEP_BACK
        step = max(min(one, estimate), furthest)
        step = float(math.floor(step)) if integer else step
    else:
        one = value + 1 if integer else value * (1 + precision)
        estimate = value / (kept * FIRST_GUESS_MARGIN) if kept > 0 else math.inf
        furthest = value + MAX_STEP_BACK if integer else value * (1 + precision) ** MAX_STEP_BACK
        step = min(max(one, estimate), furthest)
        step = float(math.ceil(step)) if integer else step
    if not low <= step <= high:
        return None
    return step
