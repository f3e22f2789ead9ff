"""campaign.json, typed: the spec as resolved (`Spec`), the environment (the host's fingerprint and each
engine's build), the inputs (traces, rule files, what each engine loaded, config overlays) and the plan.

Written by the runners' preflight (run/preflight.py, hosts/campaign.py); read only through
`store.reader.read_campaign_doc`, which migrates older schemas first (`migrate_campaign`).

The stored spec is validated by the current `Spec`. A spec that no longer validates (written by another
idsbench version) still reads: the keys the validation names are read as their defaults and
`spec_problem` says which; the campaign's results and report work, and only what needs the spec as it
ran (`--resume`, the case key's `sensor.set` digest, a trend's "what changed") refuses or says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from idsbench.spec import DEFAULT_RULESET, Spec
from idsbench.store.record import Record
from idsbench.store.schema import PerSecond, PlannedCase, RunOrderRecord, TraceRecord

CAMPAIGN_SCHEMA = 3  # 3: environment.engines (each engine's build), inputs typed; 2 had the builds at the top
JsonObject = dict[str, JsonValue]


class HostFingerprint(Record):
    """The machine and its tools when the campaign started (store.environment.fingerprint); None: not recorded."""

    hostname: str | None = None
    cpu_model: str | None = None
    cpus: int | None = None
    mem_total_bytes: int | None = None
    kernel: str | None = None
    os: str | None = None
    cgroup: str | None = None
    python: str | None = None
    idsbench: str | None = None
    tcpreplay: str | None = None


class EngineBuild(BaseModel):
    """One engine's build as its adapter reports it (`SensorEngine.build_info`): its version and the
    engine's own facts (features, configure flags, build digest, rule variables …), all kept as given."""

    model_config = ConfigDict(frozen=True, extra="allow")

    version: str = ""

    @property
    def tsc_hz(self) -> float | None:
        """A profiling Suricata's TSC rate (what turns its rule ticks into seconds); None when not measured."""
        value = (self.model_extra or {}).get("tsc_hz")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def profiler_clock(self) -> str:
        """How a profiling Suricata reads its clock: "lfence-rdtsc" (idsbench's builds since the patch) or
        "cpuid-rdtsc-cpuid" (upstream: Debian's, older builds, which recorded nothing)."""
        value = (self.model_extra or {}).get("profiler_clock")
        return value if isinstance(value, str) and value else "cpuid-rdtsc-cpuid"

    def record(self) -> JsonObject:
        """The build info exactly as stored (what the case key digests and a trend compares)."""
        return self.model_dump(mode="json", exclude_unset=True)


class Environment(HostFingerprint):
    """`environment`: the fingerprint of the host that ran the campaign (the controller's on hosts), the
    build of every engine it ran and, for a campaign on hosts, each host's hello and the pairs."""

    engines: dict[str, EngineBuild] = Field(default_factory=dict)
    controller: bool = False                 # on hosts: the fingerprint is the controller's
    hosts: dict[str, JsonObject] = Field(default_factory=dict)   # on hosts: each host's hello, as the agent sent it
    pairs: dict[str, str] = Field(default_factory=dict)          # on hosts: pair -> "sender/sensor"

    @model_serializer(mode="wrap")
    def _without_hosts_parts(self, handler: SerializerFunctionWrapHandler) -> JsonObject:
        """A local campaign's environment has no hosts parts (as written before they were typed)."""
        data: JsonObject = handler(self)
        for key in ("controller", "hosts", "pairs"):
            if not data.get(key):
                data.pop(key, None)
        return data


class TraceInput(TraceRecord):
    """`inputs.traces[ref]`: a trace as resolved (its per-second profile is left out of the campaign file)."""

    per_second: tuple[PerSecond, ...] = Field((), exclude=True)


class RuleFileInput(Record):
    path: str
    sha256: str


class RuleSetInput(Record):
    """One rule file as an engine loaded it (sensors.rulesets.RuleSetLoad.summary)."""

    source: str
    path: str = ""
    rules: int = 0
    loaded: int = 0
    share: float = 1.0
    method: str = "as-is"
    reasons: tuple[tuple[str, int], ...] = ()   # why rules were not loaded (the most frequent 20)


def rule_load_key(engine: str, ruleset: str = DEFAULT_RULESET) -> str:
    """`inputs.rule_load`'s key for an engine and a ruleset: the engine's name, or `engine ruleset` for a
    named ruleset (a ruleset axis, a duet's two rule files, a trace's own rules)."""
    return engine if ruleset == DEFAULT_RULESET else f"{engine} {ruleset}"


def split_rule_load_key(key: str) -> tuple[str, str]:
    """(engine, ruleset) of an `inputs.rule_load` key (engine names hold no space)."""
    engine, _, ruleset = key.partition(" ")
    return engine, ruleset or DEFAULT_RULESET


class RuleLoadInput(Record):
    """`inputs.rule_load[<engine>]` (or `[<engine> <ruleset>]`): what the engine loaded of a ruleset."""

    sets: tuple[RuleSetInput, ...] = ()
    rules: int = 0
    loaded: int = 0
    sids: tuple[int, ...] = ()   # the text-rule ids (gid 1) loaded: engines are compared on the common ones


class ConfigInput(Record):
    path: str
    sha256: str


class Inputs(Record):
    """`inputs`: every file a result depends on, with its sha256."""

    traces: dict[str, TraceInput] = Field(default_factory=dict)          # by the spec's reference
    rules: tuple[RuleFileInput, ...] | None = None                      # None: not recorded (never a wrong join)
    rule_load: dict[str, RuleLoadInput] = Field(default_factory=dict)    # by run.context.options_key
    configs: dict[str, ConfigInput] = Field(default_factory=dict)        # sensor.config name -> overlay
    # every named ruleset a case ran with (a ruleset axis, a trace's own rules): name -> rule references
    rulesets: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    rules_on_hosts: dict[str, dict[str, JsonObject]] = Field(default_factory=dict)  # on hosts: host -> engine -> what it reported
    assignment: dict[str, str] = Field(default_factory=dict)             # on hosts: case id -> pair

    @model_serializer(mode="wrap")
    def _without_empty_parts(self, handler: SerializerFunctionWrapHandler) -> JsonObject:
        """Parts a campaign does not have are left out (a local campaign's inputs read as before)."""
        data: JsonObject = handler(self)
        for key in ("rulesets", "rules_on_hosts", "assignment"):
            if not data.get(key):
                data.pop(key, None)
        return data


class CampaignDoc(Record):
    """campaign.json: the spec as resolved, the environment, the inputs, the plan."""

    schema_version: int = Field(CAMPAIGN_SCHEMA, alias="schema")
    created_unix: float | None = None
    spec: Spec
    spec_problem: str | None = Field(None, exclude=True)   # set when reading: why the stored spec did not validate
    environment: Environment = Field(default_factory=Environment)
    inputs: Inputs = Field(default_factory=Inputs)
    cases: tuple[PlannedCase, ...] = ()
    order: RunOrderRecord | None = None  # None: written before the order was recorded (see run_order)

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _stored_spec(cls, data: Any) -> Any:
        if isinstance(data, dict) and not isinstance(data.get("spec"), Spec):
            raw = data.get("spec")
            spec, problem = stored_spec(raw if isinstance(raw, dict) else {})
            return {**data, "spec": spec, "spec_problem": problem}
        return data

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def run_order(self) -> RunOrderRecord:
        """The order the campaign's samples run in; an older campaign's from its spec (no `order`: "cases")."""
        if self.order is not None:
            return self.order
        return RunOrderRecord(order="interleaved" if self.spec.order == "interleaved" else "cases")

    @property
    def stats_interval_s(self) -> float:
        return float(self.spec.sensor.stats_interval_s)

    @property
    def settle_s(self) -> float:
        return self.spec.timing.settle_s

    def to_json(self) -> JsonObject:
        return self.model_dump(mode="json", by_alias=True)


MAX_DROPS = 50


def stored_spec(raw: Mapping[str, object]) -> tuple[Spec, str | None]:
    """A stored spec as the current `Spec`, and None; or, when it does not validate, the spec with every
    key the validation names read as its default, and the problem in one line."""
    try:
        return Spec.model_validate(raw), None
    except ValidationError as exc:
        first = exc
    data = {k: _copy(v) for k, v in raw.items()}
    dropped: list[str] = []
    for _ in range(MAX_DROPS):
        try:
            spec = Spec.model_validate(data)
            break
        except ValidationError as exc:
            dropped.append(_drop(data, exc))
    else:
        spec = Spec(name="campaign")
    problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in first.errors()[:3])
    return spec, (f"its spec does not validate with this idsbench ({problems}); "
                  f"{', '.join(dict.fromkeys(dropped))} read as the defaults")


def _copy(value: object) -> object:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _drop(data: dict[str, object], exc: ValidationError) -> str:
    """Remove the key the first error points into (a whole list when the error is inside one); a
    missing or bad `name` becomes "campaign". Returns the dotted key removed."""
    loc = exc.errors()[0]["loc"]
    path: list[tuple[dict[str, object], str]] = []
    node: object = data
    for part in loc:
        if not isinstance(node, dict) or not isinstance(part, str) or part not in node:
            break
        path.append((node, part))
        node = node[part]
        if isinstance(node, list):
            break
    if [k for _, k in path] in ([], ["name"]):
        data["name"] = "campaign"
        return "name"
    parent, key = path[-1]
    parent.pop(key)
    return ".".join(k for _, k in path)
