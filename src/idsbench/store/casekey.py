"""A case's identity across campaigns: which measurement a case result is, so that campaigns from
any date join on it (the result index's `key_id`/`series_id`, `idsbench trend`).

The key's parts, each a short string computed from what the campaign stored:
engine + build (version and a digest of its build info), rules digest and count, config digest
(the sensor.config overlay) and `sensor.set` digest, setup and limits, trace sha256, load (rate,
replayers, loops, duration, flows, sender) and host digest (the machine: probe.json's CPU, NUMA,
memory and hypervisor, plus the hostname). A part a campaign did not store is `unknown@<campaign>`:
unique to that campaign, so it never joins another campaign (never a wrong join).

`key_id` digests every part (the exact same measurement). `series_id` leaves out the sensor's
software — build, rules, config, sensor.set — because those are what a trend follows over time and
explains at each change (analysis.trend); everything else (trace, load, setup, limits, host) stays.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from pydantic import JsonValue

from idsbench.probemodel import HostProbe
from idsbench.spec import DEFAULT_RULESET, Spec
from idsbench.store.campaigndoc import CampaignDoc, Environment, Inputs, rule_load_key
from idsbench.store.schema import CaseParams, CaseResult

SOFTWARE_PARTS = ("build", "rules_digest", "rules_count", "config_digest", "set_digest")


@dataclass(frozen=True)
class CaseKey:
    engine: str
    build: str            # "<version>/<digest of build info>"
    rules_digest: str
    rules_count: str
    config_digest: str    # "<config name>/<overlay sha256 prefix>" ("default" without an overlay)
    set_digest: str       # digest of the engine's sensor.set overrides ("none" when empty)
    setup: str
    cpus: str
    memory: str
    trace_sha256: str
    load: str             # "<rate> x<replayers> loops=<n> duration=<s> flows=<mode> sender=<name>"
    host_digest: str

    def fields(self) -> dict[str, str]:
        return asdict(self)

    @property
    def key_id(self) -> str:
        return _digest(self.fields())

    @property
    def series_fields(self) -> dict[str, str]:
        return {k: v for k, v in self.fields().items() if k not in SOFTWARE_PARTS}

    @property
    def series_id(self) -> str:
        return _digest(self.series_fields)


def _digest(value: object, n: int = 16) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:n]


def _unknown(campaign: str) -> str:
    return f"unknown@{campaign}"


def _build(doc: CampaignDoc, engine: str, campaign: str) -> str:
    info = doc.environment.engines.get(engine)
    if info is None or not info.version:
        return _unknown(campaign)
    return f"{info.version}/{_digest(info.record(), 8)}"


def _rules(doc: CampaignDoc, engine: str, ruleset: str, campaign: str) -> tuple[str, str]:
    """(digest of the rule files, rules in them) of the case's ruleset: every rule file of a campaign with
    one ruleset; a named ruleset's own files (those its `inputs.rule_load` entry names), digested with its name."""
    files = doc.inputs.rules
    if files is None or not all(f.sha256 for f in files):
        return _unknown(campaign), _unknown(campaign)
    load = doc.inputs.rule_load.get(rule_load_key(engine, ruleset))
    if ruleset == DEFAULT_RULESET:
        digest = _digest(sorted(f.sha256 for f in files))
    else:
        mine = {s.path for s in load.sets} if load is not None else set()
        digest = _digest([ruleset, sorted(f.sha256 for f in files if f.path in mine)])
    return digest, str(load.rules) if load is not None else _unknown(campaign)


def _config(doc: CampaignDoc, name: str, campaign: str) -> str:
    if name == "default":
        return "default"
    overlay = doc.inputs.configs.get(name)
    if overlay is None or not overlay.sha256:
        return _unknown(campaign)
    return f"{name}/{overlay.sha256[:16]}"


def _set_digest(doc: CampaignDoc, engine: str, campaign: str) -> str:
    if doc.spec_problem:  # the spec was read with some keys at their defaults: its sensor.set is not known
        return _unknown(campaign)
    overrides = doc.spec.sensor.set
    if not overrides:
        return "none"
    mine: dict[str, JsonValue] = {k: v for k, v in overrides.items() if not isinstance(v, dict)}  # every engine's
    own = overrides.get(engine)
    if isinstance(own, dict):
        mine.update(own)
    return _digest(mine) if mine else "none"


def _trace(doc: CampaignDoc, ref: str, campaign: str) -> str:
    info = doc.inputs.traces.get(ref)
    return info.sha256 if info is not None and info.sha256 else _unknown(campaign)


def host_digest(doc: CampaignDoc, probe: HostProbe | None, campaign: str) -> str:
    """The machine: hostname + the probe's hardware (or, without a probe, the environment's CPU
    model/count and memory, marked `env:` so the two kinds never join by accident)."""
    env = doc.environment
    if probe is not None:
        cpu = probe.cpu
        facts: dict[str, JsonValue] = {
            "hostname": env.hostname, "model": cpu.model, "count": cpu.count, "sockets": cpu.sockets,
            "threads_per_core": cpu.threads_per_core, "numa_nodes": len(probe.numa_nodes),
            "memory_gib": round((probe.memory_bytes or 0) / 2**30), "hypervisor": probe.hypervisor}
        return _digest(facts)
    if not env.hostname and not env.cpu_model:
        return _unknown(campaign)
    facts = {"hostname": env.hostname, "model": env.cpu_model, "count": env.cpus,
             "memory_gib": round((env.mem_total_bytes or 0) / 2**30)}
    return "env:" + _digest(facts)


def case_key(doc: CampaignDoc, params: CaseParams, probe: HostProbe | None, campaign: str) -> CaseKey:
    """The key of one case of a campaign (`campaign`: its id, used only for unknown parts)."""
    engine = params.engine
    rules_digest, rules_count = _rules(doc, engine, params.rules, campaign)
    load = (f"{params.rate} x{params.replayers} loops={params.loops} duration={params.duration_s} "
            f"flows={params.flows} sender={params.sender}")
    return CaseKey(
        engine=engine, build=_build(doc, engine, campaign), rules_digest=rules_digest, rules_count=rules_count,
        config_digest=_config(doc, params.config, campaign), set_digest=_set_digest(doc, engine, campaign),
        setup=params.setup, memory=str(params.memory),
        # an explicit worker count changes what is measured: it keys with the CPUs (index columns unchanged)
        cpus=str(params.cpus) + (f" threads={params.threads}" if params.threads is not None else ""),
        trace_sha256=_trace(doc, params.trace, campaign), load=load,
        host_digest=host_digest(doc, probe, campaign))


@dataclass(frozen=True)
class CampaignFacts:
    """What a trend's "what changed" compares between two campaigns (campaign.json parts, probe.json)."""

    spec: Spec
    environment: Environment
    inputs: Inputs
    probe: HostProbe | None
    spec_problem: str | None = None   # the stored spec did not validate (CampaignDoc.spec_problem)


@dataclass(frozen=True)
class KeyedCase:
    """One case result of one campaign with its key: a point of a trend."""

    campaign_id: str
    created_unix: float | None
    key: CaseKey
    result: CaseResult


def key_from_fields(fields: dict[str, str]) -> CaseKey:
    return CaseKey(**{k: str(fields.get(k, "unknown")) for k in CaseKey.__dataclass_fields__})
