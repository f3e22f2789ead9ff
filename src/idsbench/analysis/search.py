"""A searched case's results-row fields (the contract of `idsbench search`), and how steadily the
host ran the sensor during the search."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from idsbench.analysis.stats import ci_coverage, median_ci
from idsbench.store.casefigures import GoalBounds, MinCpusFigures, NdrFigures, RepeatFigures, SearchFigures
from idsbench.store.schema import SearchResult

NEAR_RESULT = 0.5    # trials at half the NDR's load or more show the sensor's cost near it
HOST_MOVED = 0.15    # the sensor's cost per packet spread more than this: the host's speed moved


@dataclass(frozen=True)
class SensorCost:
    """The sensor's CPU per packet (µs) in the lossless trials near the NDR: how fast the host ran it.
    At a fixed CPU allocation the NDR is about the allocation over this cost, so two searches of one
    case can only agree as well as their costs do."""

    median_us: float
    low_us: float
    high_us: float
    trials: int

    @property
    def spread(self) -> float:
        """high / low − 1 across those trials."""
        return self.high_us / self.low_us - 1 if self.low_us > 0 else 0.0


def sensor_cost(result: SearchResult) -> SensorCost | None:
    """The sensor's cost per packet over its lossless, kept-up trials at ≥ NEAR_RESULT of the NDR's load
    (rate and replayers axes; None without such trials or without the sensor's CPU time)."""
    ndr = next((r for r in result.results if r.tolerance == 0), None)
    if result.axis == "cpus" or ndr is None or not ndr.value_pps:
        return None
    costs = sorted(c * 1e6 for t in (*result.trials, *result.verification)
                   if t.kept_up_lossless and not t.ceiling and t.achieved_pps >= NEAR_RESULT * ndr.value_pps
                   and (c := t.cpu_s_per_packet) is not None)
    if not costs:
        return None
    return SensorCost(statistics.median(costs), costs[0], costs[-1], len(costs))


def search_fields(result: SearchResult | None) -> SearchFigures | None:
    """A searched case's row fields (`SearchFigures.row`): `ndr_pps`, `ndr_mbps`, `ndr_bracket` ([lo, hi]
    pps), `pdr` ({tolerance: pps}), `search_trials`, `sender_limited`, `search_verified`,
    `ndr_sensor_us_per_pkt` (`SensorCost.median_us`); for a cpus search `min_cpus` (and
    `min_cpus_bracket`). None: the case was not searched."""
    if result is None:
        return None
    head = SearchFigures(search_axis=result.axis, search_mode=result.mode,
                         search_trials=len(result.trials) + len(result.verification),
                         sender_ceiling_pps=result.sender_ceiling_pps,
                         # the sender bounded a result (search.json before sender_limited: the sensor took
                         # the measured ceiling)
                         sender_limited=any(r.sender_limited or (r.lower_bound and result.sender_ceiling_pps is not None)
                                            for r in result.results))
    if result.axis == "cpus":
        found = next((r for r in result.results if r.tolerance == 0), None)
        return head.model_copy(update={"min_cpus": MinCpusFigures(
            min_cpus=found.value if found else None,
            min_cpus_bracket=found.bracket if found and found.bracket else None,
            search_verified=found.verified if found else None)})

    def mbps(pps: float | None) -> float | None:
        return round(pps * result.avg_frame_bytes * 8 / 1e6, 3) if pps is not None and result.avg_frame_bytes else None

    ndr: NdrFigures | None = None
    pdr: dict[str, float | None] = {}
    for r in result.results:
        lo_hi = None
        if r.bracket is not None:
            lo_hi = (_pps(result, r.bracket[0]), _pps(result, r.bracket[1]))
        if r.tolerance == 0:
            cost = sensor_cost(result)
            ndr = NdrFigures(ndr_pps=r.value_pps, ndr_mbps=mbps(r.value_pps), ndr_bracket=lo_hi,
                             search_verified=r.verified,
                             ndr_sensor_us_per_pkt=round(cost.median_us, 3) if cost else None,
                             ndr_replayers=r.value if result.axis == "replayers" else None)
        else:
            pdr[f"{r.tolerance:g}"] = r.value_pps
    return head.model_copy(update={"repeats": repeat_fields(result), "ndr": ndr, "pdr": pdr})


def repeat_fields(result: SearchResult) -> RepeatFigures:
    """`search_repeats`, `ndr_repeats` (each repeat's NDR, pps), `ndr_ci` ([low, high] of the median, each
    repeat within its bounds: `ndr_median_ci`) and
    `ndr_ci_level`; per goal `goals` {tolerance: {conditional_pps, lower_pps, upper_pps}} (the
    conditional throughput and relevant bounds, medians over the repeats) and `search_goals` (the
    goal parameters used); `ndr_capacity_pps`: the allocation over the sensor's CPU per packet near
    the NDR (what the CPU cost alone says the sensor could take)."""
    ndrs = [r.ndr_pps for r in result.repeats]
    known = [x for x in ndrs if x is not None]
    ci = ndr_median_ci(result) if known and len(known) == len(ndrs) else None
    goals = {f"{r.tolerance:g}": GoalBounds(
        conditional_pps=r.conditional_pps,
        lower_pps=_pps(result, r.relevant_lower) if r.relevant_lower is not None else None,
        upper_pps=_pps(result, r.relevant_upper) if r.relevant_upper is not None else None) for r in result.results}
    ndr = next((r for r in result.results if r.tolerance == 0), None)
    cost = sensor_cost(result)
    return RepeatFigures(
        search_repeats=max(1, len(result.repeats)),
        ndr_repeats=tuple(round(x, 3) if x is not None else None for x in ndrs),
        # rounded outward so that the interval still holds the (unrounded) median NDR it is about
        ndr_ci=(math.floor(ci[0] * 1000) / 1000, math.ceil(ci[1] * 1000) / 1000) if ci else None,
        ndr_ci_level=round(ci_coverage(len(known)), 4) if ci else None,
        goals=goals, search_goals=result.goals,
        ndr_conditional_pps=ndr.conditional_pps if ndr else None,
        ndr_capacity_pps=round(result.allocation_cpus / (cost.median_us * 1e-6), 1)
        if cost and result.allocation_cpus and cost.median_us > 0 else None)


def ndr_median_ci(result: SearchResult) -> tuple[float, float] | None:
    """The order-statistic CI of the repeats' median NDR, each repeat taken as what its search knows: its
    NDR lies between its relevant lower bound (the NDR found) and its relevant upper bound (the lowest
    load that failed; none where the top passed). The low end is the order statistic of the lower bounds,
    the high end of the upper bounds, so repeats that landed on one point of MLRsearch's load grid give
    the width of a grid step, not [x, x] (it covers the true values' order statistics, hence their median)."""
    lowers: list[float] = []
    uppers: list[float] = []
    for rep in result.repeats:
        if rep.ndr_pps is None:
            return None
        goal = next((g for g in rep.results if g.tolerance == 0), None)
        upper = _pps(result, goal.relevant_upper) if goal is not None and goal.relevant_upper is not None else None
        lowers.append(rep.ndr_pps)
        uppers.append(max(rep.ndr_pps, upper) if upper is not None else rep.ndr_pps)
    low, high = median_ci(lowers), median_ci(uppers)
    return (low[0], high[1]) if low and high else None


def _pps(result: SearchResult, value: float) -> float | None:
    """An axis value in pps (replayers axis: the trial that tried it tells its offered load)."""
    if result.axis == "rate":
        return value
    for t in (*result.trials, *result.verification):
        if t.value == value and t.offered_pps is not None:
            return t.offered_pps
    return None
