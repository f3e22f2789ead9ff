"""The figures later analyses add to a case result (`CaseResult`): a search's results, the engines'
rule shares (and `SearchGoals`, which search.json holds too). Each is a model whose `row()` gives its
keys of the results contract (DESIGN.md), in the order `idsbench results --format json` has always
printed them; a part a case does not have is None on the CaseResult and absent from its row.
"""

from __future__ import annotations

from pydantic import Field, JsonValue

from idsbench.store.record import Record

Row = dict[str, JsonValue]   # a part of one results row (the JSON object of the results contract)
Number = int | float         # counts stay integers in the JSON, as they were computed


class SearchGoals(Record):
    """The goal parameters a search ran with (one MLRsearch goal per tolerance): in search.json and the row."""

    tolerances: tuple[float, ...]
    exceed_ratio: float
    relative_width: float
    initial_trial_s: float
    final_trial_s: float
    duration_sum_s: float
    controller: str = ""


class GoalBounds(Record):
    """One search goal (tolerance): its conditional throughput and relevant bounds in pps (medians over repeats)."""

    conditional_pps: float | None = None
    lower_pps: float | None = None
    upper_pps: float | None = None


class RepeatFigures(Record):
    """A rate or replayers search over its repeats (analysis.search.repeat_fields)."""

    search_repeats: int
    ndr_repeats: tuple[float | None, ...] = ()           # each repeat's NDR (pps)
    ndr_ci: tuple[float, float] | None = None            # of their median
    ndr_ci_level: float | None = None
    goals: dict[str, GoalBounds] = Field(default_factory=dict)   # by tolerance ("0", "0.005")
    search_goals: SearchGoals | None = None              # the goal parameters the search ran with
    ndr_conditional_pps: float | None = None
    ndr_capacity_pps: float | None = None                # the allocation over the CPU per packet near the NDR


class NdrFigures(Record):
    """A rate or replayers search's tolerance-0 result."""

    ndr_pps: float | None = None
    ndr_mbps: float | None = None
    ndr_bracket: tuple[float | None, float | None] | None = None   # [highest pass, lowest fail] in pps
    search_verified: bool | None = None
    ndr_sensor_us_per_pkt: float | None = None
    ndr_replayers: float | None = None                   # a replayers search: the count


class MinCpusFigures(Record):
    """A cpus search's result: the fewest CPUs that stay lossless."""

    min_cpus: float | None = None
    min_cpus_bracket: tuple[float, float] | None = None
    search_verified: bool | None = None


class SearchFigures(Record):
    """A searched case's fields of the results row (the contract of `idsbench search`)."""

    search_axis: str
    search_mode: str
    search_trials: int
    sender_ceiling_pps: float | None = None
    sender_limited: bool = False
    min_cpus: MinCpusFigures | None = None   # a cpus search
    repeats: RepeatFigures | None = None     # a rate or replayers search
    ndr: NdrFigures | None = None            # … with a tolerance-0 goal
    pdr: dict[str, float | None] = Field(default_factory=dict)   # … the other tolerances: pps

    def row(self) -> Row:
        out: Row = self.model_dump(mode="json", include={"search_axis", "search_mode", "search_trials",
                                                         "sender_ceiling_pps", "sender_limited"})
        if self.min_cpus is not None:
            return {**out, **self.min_cpus.model_dump(mode="json")}
        if self.repeats is not None:
            out.update(self.repeats.model_dump(mode="json"))
        if self.ndr is not None:
            out.update(self.ndr.model_dump(mode="json", exclude=None if self.search_axis == "replayers"
                                           else {"ndr_replayers"}))
        out["pdr"] = dict(self.pdr)
        return out


class CommonRules(Record):
    """With two or more rule-loading engines: the alerts on the rules all of them loaded."""

    common_rules: int
    alerts_common_rules: float | None = None             # median over the ok samples
    alerts_common_rules_ci: tuple[float, float] | None = None


class EngineFigures(Record):
    """The case's engine: the share of the rules it loaded (analysis.engines.case_engine_figures)."""

    rules_total: int = 0
    rules_loaded: int = 0
    rules_loaded_share: float | None = None
    common: CommonRules | None = None

    def row(self) -> Row:
        out: Row = self.model_dump(mode="json", exclude={"common"})
        if self.common is not None:
            out.update(self.common.model_dump(mode="json"))
        return out


class HostSideFigures(Record):
    """The host's side of a VM or container (analysis.hostside.host_side_fields): medians over the samples
    with a host-side profile."""

    host_side_of: str                       # qemu | runtime
    host_side_cpu_s: float                  # its CPU seconds over the profiled window
    shares: dict[str, float] = Field(default_factory=dict)   # per category (HOST_SIDE_CATEGORIES): share 0..1
    host_side_gap: float | None = None      # the largest relative gap to the monitor's figure

    def row(self) -> Row:
        out: Row = {"host_side_of": self.host_side_of, "host_side_cpu_s": self.host_side_cpu_s}
        out.update({f"host_side_{name}_share": share for name, share in self.shares.items()})
        out["host_side_gap"] = self.host_side_gap
        return out
