"""gate.json, typed: the contract keys of issue 43 (`verdict`, `threshold_pct`, `noise_floor_pct`, `base`,
`head`, `traces`, `alerts_diff`, `counters_diff`) and the details beside them. docs/gate.schema.json is
this model's JSON schema (`schema()`; a unit test keeps the file and the model equal)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

GATE_SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SideDoc(_Model):
    kind: Literal["tree", "git", "engine"]
    id: str = Field(description="commit sha (git, or a git work tree), tree=<sha256> of a tree's files, "
                                "archive=<sha256> of a release archive, else the engine and its version")
    flags: str = Field(description="configure flags of the build ('' for the installed engine)")
    name: str = Field(description="the side as given on the command line")
    engine: str = Field(description="the engine name the campaigns ran (sensor.engine)")
    version: str
    build_s: int | None = None
    make_s: int | None = None
    ccache: str | None = None


class TraceDoc(_Model):
    trace: str
    ratio: float | None = Field(description="median of the per-sample cost ratios head/base (CPU per packet)")
    ratio_ci: list[float] | None = Field(description="[low, high] order-statistic CI of that median")
    ci_level: float
    verdict: Literal["regression", "improvement", "same", "unknown"]
    samples: int = Field(description="duet samples with both sides ok")
    samples_needed: int | None = Field(None, description="unknown: the samples in all that would settle it")
    effect_pct: float | None = None
    reason: str = ""
    rate_pps: float | None = None
    exact: int = 0


class AlertDoc(_Model):
    sid: int
    base: int
    head: int
    trace: str


class CounterDoc(_Model):
    counter: str
    base: float
    head: float
    ratio: float | None
    trace: str
    aa_spread: float = Field(description="the largest relative A/A difference of this counter")


class EventDoc(_Model):
    event_type: str
    base: int
    head: int
    trace: str


class ResourceDoc(_Model):
    metric: Literal["rule_load_s", "peak_rss_bytes"]
    base: float | None
    head: float | None
    ratio: float | None
    trace: str


class AADoc(_Model):
    ratio: float | None
    ratio_ci: list[float] | None
    ci_level: float
    verdict: Literal["regression", "improvement", "same", "unknown"]
    samples: int


class GateDoc(_Model):
    schema_version: int = GATE_SCHEMA_VERSION
    verdict: Literal["regression", "improvement", "same", "unknown"]
    exit_status: int = Field(description="0 same/improvement, 1 regression or an alert difference, 2 unknown")
    reason: str
    threshold_pct: float
    noise_floor_pct: float | None = Field(description="the A/A arm's CI half-width, in percent")
    base: SideDoc
    head: SideDoc
    traces: list[TraceDoc]
    alerts_diff: list[AlertDoc]
    counters_diff: list[CounterDoc]
    events_diff: list[EventDoc] = Field(default_factory=list)
    resources: list[ResourceDoc] = Field(default_factory=list)
    aa: AADoc | None = None
    rounds: int = 0
    wall_s: float = Field(0.0, description="the whole gate: builds, offline pass, probe, rounds")
    measure_s: float = Field(0.0, description="the probe and the rounds (what --budget-s bounds)")
    budget_s: float = 0.0
    allow_alert_changes: bool = False
    campaigns: list[str] = Field(default_factory=list, description="the campaign directories (relative to DIR)")
    notes: list[str] = Field(default_factory=list)


def schema() -> dict[str, object]:
    doc = GateDoc.model_json_schema()
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = "idsbench gate.json"
    return doc
