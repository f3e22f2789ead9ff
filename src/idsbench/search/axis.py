"""What a search varies: the offered rate (pps), the number of replayers, or the sensor's CPUs.

An `Axis` turns a value into the trial's case (rate, replayers or cpus changed, `duration_s` set to
the trial length) and into the load it offers. The rate axis searches the total offered packets per
second; `traffic.rate` gives its upper bound (`topspeed`: the sender's measured maximum, found by
the first trial), and mbps or multiplier rates are converted with the trace's average frame size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from idsbench.errors import SpecError
from idsbench.plan import Case
from idsbench.run.context import CampaignContext
from idsbench.run.facts import case_facts
from idsbench.spec import Rate
from idsbench.traffic.replay import requested_pps

LOW_FRACTION = 0.005  # the rate axis starts at 0.5% of its top


@dataclass(frozen=True)
class Axis:
    name: Literal["rate", "replayers", "cpus"]
    unit: str
    case: Case
    low: float
    high: float
    direction: Literal["max", "min"] = "max"
    integer: bool = False
    avg_frame: float = 0.0
    per_replayer_pps: float | None = None   # replayers/cpus axes: the case's own rate (None: topspeed)
    ceiling_pps: float | None = None        # the sender's measured maximum (topspeed)
    needs_ceiling: bool = False             # the top is unknown until a topspeed trial measured it

    @property
    def fixed_load_pps(self) -> float | None:
        if self.name != "cpus" or self.per_replayer_pps is None:
            return None
        return self.per_replayer_pps * self.case.replayers

    def with_ceiling(self, pps: float) -> Axis:
        return dataclasses.replace(self, high=pps, low=pps * LOW_FRACTION, ceiling_pps=pps, needs_ceiling=False)

    def case_for(self, value: float | None, duration_s: float) -> Case:
        """The trial's case; `value` None = the sender at full speed (measuring the ceiling)."""
        base = dataclasses.replace(self.case, loops=1, duration_s=duration_s, samples=())
        if value is None:
            return dataclasses.replace(base, rate=Rate(kind="topspeed"))
        if self.name == "rate":
            return dataclasses.replace(base, rate=Rate(kind="pps", value=value / self.case.replayers))
        if self.name == "replayers":
            return dataclasses.replace(base, replayers=int(value))
        return dataclasses.replace(base, cpus=value)

    def offered_pps(self, value: float | None) -> float | None:
        if value is None:
            return None
        if self.name == "rate":
            return value
        if self.per_replayer_pps is None:
            return None
        replayers = int(value) if self.name == "replayers" else self.case.replayers
        return self.per_replayer_pps * replayers

    def pps_of(self, value: float) -> float | None:
        return self.offered_pps(value)

def axis_for(ctx: CampaignContext, case: Case, available: Sequence[int]) -> Axis:
    """The case's search axis on a host whose usable CPUs are `available` (the cpus axis starts at the
    sensor's allocation: its quota, else the CPUs it is pinned to — run/facts.py)."""
    cfg = ctx.settings.search
    trace = ctx.traces[case.trace]
    avg = trace.bytes / trace.packets if trace.packets else 0.0
    per_replayer = requested_pps(case.rate, trace.packets, trace.duration_s, trace.bytes)
    if cfg.axis == "rate":
        if per_replayer is None:  # topspeed: the first trial measures the ceiling
            return Axis("rate", "pps", case, 1.0, 2.0, avg_frame=avg, needs_ceiling=True)
        high = per_replayer * case.replayers
        return Axis("rate", "pps", case, high * LOW_FRACTION, high, avg_frame=avg, per_replayer_pps=per_replayer)
    if cfg.axis == "replayers":
        if cfg.max_replayers < 2:
            raise SpecError("search.axis = \"replayers\" needs search.max_replayers >= 2.",
                            fix="raise search.max_replayers (e.g. 16).")
        return Axis("replayers", "replayers", case, 1, cfg.max_replayers, integer=True, avg_frame=avg,
                    per_replayer_pps=per_replayer)
    high = case_facts(ctx, case, available).allocation
    if not cfg.min_cpus < high:
        raise SpecError(f"search.min_cpus = {cfg.min_cpus} is not below the largest allocation {high}.",
                        fix="lower search.min_cpus, or give the case more CPUs (setup.cpus).")
    return Axis("cpus", "cpus", case, cfg.min_cpus, high, direction="min", avg_frame=avg, per_replayer_pps=per_replayer)
