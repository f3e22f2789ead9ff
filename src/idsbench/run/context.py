"""What every sample of a campaign shares: its settings (`CampaignSettings`, resolved from the spec once;
the context holds no spec), the resolved inputs, the sensor engines and their options per ruleset. What
one case runs with on this host (CPUs, allocation, workers, its options) is built from it by
`run/facts.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from idsbench import settings as env_settings
from idsbench.campaign_settings import CampaignSettings
from idsbench.plan import Case
from idsbench.sensors.base import SensorEngine, SensorOptions
from idsbench.sensors.rulesets import RuleSetLoad
from idsbench.store.campaigndoc import rule_load_key
from idsbench.store.layout import CampaignDir
from idsbench.store.schema import TraceRecord
from idsbench.traffic.rewrite import distinct_copy


def options_key(engine: str, ruleset: str) -> str:
    """`options`/`rule_loads` key: the engine name, or `engine ruleset` on a ruleset axis (the campaign
    file's `inputs.rule_load` key, store.campaigndoc.rule_load_key)."""
    return rule_load_key(engine, ruleset)


@dataclass
class CampaignContext:
    settings: CampaignSettings
    layout: CampaignDir
    state_dir: Path
    cache_dir: Path
    engines: dict[str, SensorEngine]             # by name: every engine the plan uses
    engine_versions: dict[str, str]
    options: dict[str, SensorOptions]             # per options_key (engine, ruleset): rules, overrides…
    traces: dict[str, TraceRecord] = field(default_factory=dict)
    rule_loads: dict[str, tuple[RuleSetLoad, ...]] = field(default_factory=dict)  # per engine: the share loaded
    name_prefix: str = field(default_factory=env_settings.name_prefix)
    warnings: list[str] = field(default_factory=list)  # found before the first sample (host traps…)
    overlays: dict[str, Path] = field(default_factory=dict)  # sensor.config name -> overlay file
    sender_here: bool = True  # the replayers run on this host (False: a [hosts] sensor host)

    def engine(self, case: Case) -> SensorEngine:
        return self.engines[case.engine]

    def replay_paths(self, case: Case) -> list[Path]:
        """The capture each replayer sends: its own rewritten copy (distinct flows), or the same."""
        original = Path(self.traces[case.trace].path)
        if case.flows == "identical" or case.replayers == 1:
            return [original] * case.replayers
        return [distinct_copy(original, i, self.cache_dir) for i in range(case.replayers)]
