"""Per-case run facts: what one case runs with on this host — the sender's and the sensor's CPUs, the
sensor's allocation in cores, its worker threads, its options (the case's ruleset and config overlay,
the spec's settings) and the paths a container or VM must see.

One builder (`case_facts`) for the local runner (run/session.py, run/sample.py), the search
(search/run.py, search/axis.py) and the sensor side of a `[hosts]` campaign, so "the sensor's cores"
means the same everywhere:
- **placement** (`place_cpus`): the sender on the first available CPU, the sensor pinned to the rest
  (or to `setup.cpuset`); with a single CPU both share it (the sensor is then not pinned);
- **allocation** (`allocation_cores`): the case's CPU quota (`setup.cpus`), at most the CPUs the
  sensor is pinned to; without a quota, those CPUs — never the host's CPU count;
- **workers** (`worker_threads`): `sensor.threads` when it is a count; None when it is "auto" (the
  engine's own choice: Suricata one worker per online CPU, Snort one packet thread per CPU); otherwise
  the allocation rounded up (the ceiling of a fractional quota), at least 1 — as many workers as CPUs
  the sensor is given.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench import capture
from idsbench.campaign_settings import CampaignSettings, SensorSettings
from idsbench.capture import CaptureMethod
from idsbench.plan import Case
from idsbench.run.context import CampaignContext, options_key
from idsbench.sensors import registry
from idsbench.sensors.base import SensorEngine, SensorOptions
from idsbench.sensors.rulesets import RuleSetLoad
from idsbench.spec import AUTO_THREADS, DEFAULT_CONFIG


@dataclass(frozen=True)
class CpuPlacement:
    """Where the replayers and the sensor run."""

    sender: tuple[int, ...]
    sensor: tuple[int, ...]   # the CPUs the sensor runs on
    pinned: bool              # False: too few CPUs to split; the sensor shares them with the sender

    @property
    def sensor_affinity(self) -> list[int] | None:
        """What the setup pins the sensor to (None: not pinned)."""
        return list(self.sensor) if self.pinned else None


def place_cpus(available: Sequence[int], cpuset: Sequence[int] | None, *, sender_here: bool = True) -> CpuPlacement:
    """Sender and sensor on different CPUs where there are enough (`cpuset`: the sensor's), else shared.
    `sender_here` False (the sensor host of a `[hosts]` pair: the replayers run on another host): the
    sensor has every available CPU (or its cpuset)."""
    avail = tuple(available) or (0,)
    if not sender_here:
        return CpuPlacement((), tuple(cpuset) if cpuset else avail, True)
    if cpuset:
        rest = tuple(c for c in avail if c not in cpuset)
        return CpuPlacement(rest or avail, tuple(cpuset), True)
    if len(avail) >= 2:
        return CpuPlacement(avail[:1], avail[1:], True)
    return CpuPlacement(avail, avail, False)


def allocation_cores(quota: float | None, sensor_cpus: int) -> float:
    """The cores the sensor can use: its CPU quota, at most the CPUs it runs on; without a quota, those."""
    cpus = float(max(1, sensor_cpus))
    return cpus if quota is None else min(quota, cpus)


def worker_threads(threads: int | str | None, quota: float | None, sensor_cpus: int) -> int | None:
    """The sensor's worker threads: `threads` when it is a count, None for "auto" (the engine decides),
    else the allocation rounded up, at least 1."""
    if threads == AUTO_THREADS:
        return None
    if isinstance(threads, int):
        return threads
    return max(1, math.ceil(allocation_cores(quota, sensor_cpus) - 1e-9))


@dataclass(frozen=True)
class RunFacts:
    """What one case runs with here."""

    cpus: CpuPlacement
    quota: float | None           # the CPU quota in cores (the case's `cpus`), None: no limit
    allocation: float             # cores the sensor can use (allocation_cores)
    workers: int | None           # worker threads asked of the engine (None: its own choice)
    options: SensorOptions        # the case's ruleset, overlay and settings, `threads` = workers
    read_only_paths: tuple[Path, ...]  # what the sensor must see inside a container or VM (same path)
    rule_loads: tuple[RuleSetLoad, ...]  # the share of each rule set the engine loads


def case_options(ctx: CampaignContext, case: Case) -> SensorOptions:
    """The engine's options for the case's ruleset with the case's config overlay (`sensor.config`
    axis), no worker count (an offline read, e.g. the ground truth, runs one thread anyway)."""
    opts = ctx.options[options_key(case.engine, case.rules)]
    if case.config == DEFAULT_CONFIG:
        return dataclasses.replace(opts, config_overlay=None)
    return dataclasses.replace(opts, config_overlay=ctx.overlays.get(case.config, opts.config_overlay))


def case_capture(case: Case) -> CaptureMethod:
    """The capture method `case` runs (its axis value, else its engine's default), as its engine declares it."""
    return registry.capture_method(case.engine, case.capture)


def with_capture(options: SensorOptions, settings: CampaignSettings, case: Case) -> SensorOptions:
    """`options` with the case's capture method (`capture`; None: the engine's default) and the campaign's
    `capture_options` that apply to it (idsbench.capture)."""
    opts = capture.options_for(case_capture(case).name, settings.sensor.capture_options)
    return dataclasses.replace(options, capture=case.capture, capture_options=tuple(sorted(opts.items())),
                               bypass=case.bypass)


def case_facts(ctx: CampaignContext, case: Case, available: Sequence[int]) -> RunFacts:
    """The run facts of `case` on a host whose usable CPUs are `available` (`SampleDeps.available_cpus`)."""
    cpus = place_cpus(available, ctx.settings.setup.cpuset, sender_here=ctx.sender_here)
    workers = worker_threads(case.threads, case.cpus, len(cpus.sensor))
    options = with_capture(dataclasses.replace(case_options(ctx, case), threads=workers), ctx.settings, case)
    paths = [*options.rules, *ctx.engine(case).host_paths()]
    if options.config_overlay is not None:
        paths.append(options.config_overlay)
    return RunFacts(cpus=cpus, quota=case.cpus, allocation=allocation_cores(case.cpus, len(cpus.sensor)),
                    workers=workers, options=options, read_only_paths=tuple(dict.fromkeys(paths)),
                    rule_loads=ctx.rule_loads.get(options_key(case.engine, case.rules), ()))


def engine_options(sensor: SensorSettings, name: str, engine: SensorEngine,
                   locate: Callable[[str], str]) -> dict[str, SensorOptions]:
    """The options of engine `name` (as the spec names it) for every ruleset of the campaign (`options_key`
    -> options, no overlay and no worker count: each case adds its own). `locate`: where a spec's rule
    reference is on this host (`builtin:` names pass through)."""
    out: dict[str, SensorOptions] = {}
    for ruleset, refs in sensor.rulesets.items():  # the rules axis and every trace's own rules
        found = [r if r.startswith("builtin:") else locate(r) for r in refs]
        out[options_key(name, ruleset)] = SensorOptions(
            rules=tuple(engine.resolve_rules(found)), overrides=tuple(sensor.overrides(engine.name).items()),
            stats_interval_s=sensor.stats_interval_s)
    return out
