"""Everything checked before the first sample starts: one clear error instead of N failed samples.

`prepare_campaign` is where the spec is read: it plans the cases (`plan.plan`) and resolves the
campaign's settings (`campaign_settings`) once; what it checks and resolves after that (traces, rules,
overlays, engines) comes from those two, and the spec itself goes only to campaign.json (and the
resume check, which compares its dump)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from idsbench import bypass, capture
from idsbench.campaign_settings import CampaignSettings, campaign_settings
from idsbench.errors import EnvironmentMissing, InputError, SpecError
from idsbench.plan import Case, axis_values, plan
from idsbench.probemodel import NoiseProbe
from idsbench.proc import require_program
from idsbench.run.context import CampaignContext, options_key
from idsbench.run.facts import engine_options, place_cpus
from idsbench.run.hostprobe import quietness, record_probe, trial_seconds
from idsbench.run.order import decide_order
from idsbench.run.truth import ground_truths
from idsbench.sensors import registry, rulesets
from idsbench.sensors.base import SensorEngine, SensorOptions
from idsbench.setups.registry import preflight as setup_preflight
from idsbench.spec import DEFAULT_CONFIG, DEFAULT_RULESET, Spec
from idsbench.store.campaigndoc import (
    CampaignDoc,
    ConfigInput,
    EngineBuild,
    Environment,
    Inputs,
    RuleFileInput,
    RuleLoadInput,
    RuleSetInput,
    TraceInput,
)
from idsbench.store.environment import fingerprint, sha256_file
from idsbench.store.layout import PREFLIGHT_DIR, CampaignDir
from idsbench.store.reader import read_campaign_doc
from idsbench.store.schema import PerSecond, PlannedCase, RunOrderRecord, TraceRecord
from idsbench.store.writers import write_campaign_doc
from idsbench.traffic.pcap import read_info
from idsbench.traffic.resolve import resolve_trace, synth_metadata
from idsbench.wire.netns import mtu_for


def check_host() -> None:
    if os.geteuid() != 0:
        raise EnvironmentMissing(
            "idsbench run needs root: it creates network namespaces, veth links and cgroups.",
            fix="run it as root (e.g. `sudo .venv/bin/idsbench run ...`).",
        )
    for program in ("ip", "ethtool", "tcpreplay", "sysctl"):
        require_program(program)


def resolve_traces(settings: CampaignSettings, cases: Sequence[Case], cache_dir: Path) -> dict[str, TraceRecord]:
    """Each trace the cases replay (by its reference in the spec) as found, read and checked."""
    traces = {}
    for ref in axis_values(cases, "trace"):
        source = ref if ref.startswith("builtin:") else str(settings.resolve_path(ref))
        path = resolve_trace(source, cache_dir)
        info = read_info(path, cache_dir=cache_dir)
        if info.packets == 0:
            raise SpecError(f"trace {ref} ({path}) holds no packets.", fix="give a capture with packets.")
        meta = synth_metadata(path)
        traces[ref] = TraceRecord(
            ref=ref, path=str(path), sha256=info.sha256, packets=info.packets, bytes=info.bytes,
            duration_s=info.duration_s, max_frame=info.max_frame,
            per_second=tuple(PerSecond.model_validate(p) for p in (info.per_second or ())),
            markers=meta.markers if meta else None,
        )
    return traces


def check_frames(settings: CampaignSettings, cases: Sequence[Case], traces: dict[str, TraceRecord], *,
                 local_wire: bool = True) -> None:
    """SpecError before any sample for a case whose capture method or bypass cannot carry its trace's largest
    frame at the wire MTU that frame needs (TSO/GRO super-frames: AF_XDP's 4 KiB frames, XDP in a veth's
    driver): the sample would fail inside the sensor, lose those frames at any load, or bypass nothing.
    `local_wire`: the setups capture on this machine's veth wire (on real hosts a NIC, whose driver's XDP
    limit is its own: only the methods' own frame limits apply)."""
    seen: set[tuple[str, str | None, str | None, str, str]] = set()
    for case in cases:
        key = (case.engine, case.capture, case.bypass, case.setup, case.trace)
        if key in seen:
            continue
        seen.add(key)
        trace = traces[case.trace]
        mtu = mtu_for(trace.max_frame)
        catalogue = registry.capture_methods(case.engine)
        method = catalogue.method(case.capture)
        effective = capture.effective_options(catalogue.engine, method,
                                              capture.options_for(method.name, settings.sensor.capture_options))
        kind = case.setup if local_wire else "host"
        problem = capture.frame_problem(method, effective, kind, trace.max_frame, mtu)
        fixes = [f"use sensor.capture = \"{catalogue.default}\""] if problem else []
        if problem is None:
            problem = bypass.frame_problem(case.bypass, kind, trace.max_frame, mtu)
            fixes = ["use sensor.bypass = \"ebpf\" (a socket filter: any MTU) or \"local\""] if problem else []
        if problem is None:
            continue
        split = f"{Path(trace.path).stem}-mtu1500.pcap"  # in the current directory: the input's may be read-only
        raise SpecError(f"trace {case.trace} on setup {case.setup!r}: {problem}. Frames that large are TSO/GRO "
                        "super-frames the capture's host merged; the wire's MTU follows the trace.",
                        fix=f"re-segment the trace to a standard MTU (`idsbench trace resegment {trace.path} --mtu 1500 "
                            f"--out {split}`, then replay that file), or {fixes[0]}.")


def config_overlays(settings: CampaignSettings, cases: Sequence[Case]) -> dict[str, Path]:
    """The cases' sensor.config names -> overlay files (each must exist)."""
    out = {}
    for name in axis_values(cases, "config"):
        if name == DEFAULT_CONFIG:
            continue
        path = settings.resolve_path(name)
        if not path.is_file():
            raise InputError(f"sensor.config {name!r} ({path}) does not exist.",
                             fix='give the path of a config overlay file (relative to the spec), or "default".')
        out[name] = path
    return out


def rule_sources(settings: CampaignSettings, engine: SensorEngine, refs: Sequence[str]) -> dict[Path, str]:
    """Each rule file the engine loads -> the spec's reference it came from (e.g. builtin:events);
    `refs`: one ruleset's references."""
    out: dict[Path, str] = {}
    for ref in refs:
        resolved = ref if ref.startswith("builtin:") else str(settings.resolve_path(ref))
        for path in engine.resolve_rules([resolved]):
            out.setdefault(path, ref)
    return out


def prepare_campaign(spec: Spec, out_dir: Path, *, resume: bool, state_dir: Path,
                     cache_dir: Path, require_quiet: bool = False,
                     search: bool = False, noise: NoiseProbe | None = None) -> tuple[CampaignContext, list[Case]]:
    """Validate inputs, test the sensor config, create/verify the campaign directory. The host's
    quietness is probed once the traces are known, at the time scale of the trials (`search`: a
    search's trial length, search.trial_s; else the shortest replay), before any sensor starts
    (`require_quiet`: a noisy host is refused; `noise`: the caller's probe of moments before, reused)."""
    cases = plan(spec)
    settings = campaign_settings(spec)
    check_host()
    setup_preflight(spec)  # e.g. vm-vfio: IOMMU, vfio-pci, SR-IOV, a NIC wire
    layout = CampaignDir(out_dir.resolve())  # absolute: containers and VMs mount sample directories
    check_resume(layout, out_dir, spec.model_dump(mode="json"), resume, [c.case_id for c in cases])
    order = decide_order(settings.order, cases, read_campaign_doc(out_dir) if layout.campaign_file.exists() else None)
    engines: dict[str, SensorEngine] = {}
    options: dict[str, SensorOptions] = {}
    overlays = config_overlays(settings, cases)
    traces = resolve_traces(settings, cases, cache_dir)
    check_frames(settings, cases, traces)
    sensor_cpus = place_cpus(sorted(os.sched_getaffinity(0)), settings.setup.cpuset).sensor
    noise, noise_warnings = quietness(settings.search.precision, list(sensor_cpus), require_quiet=require_quiet,
                                      trial_s=settings.search.trial_s if search else trial_seconds(cases, traces),
                                      measured=noise)
    rule_loads: dict[str, tuple[rulesets.RuleSetLoad, ...]] = {}
    for name in axis_values(cases, "engine"):
        engine = registry.engine(name)
        engine.require()
        for method in axis_values(cases, "capture"):  # e.g. AF_XDP on a build without it: refused before any sample
            engine.check_capture(method)
        check_bypass = getattr(engine, "check_bypass", None)  # engines with a flow bypass (idsbench.bypass)
        if callable(check_bypass):
            for mode in axis_values(cases, "bypass"):
                check_bypass(mode)  # e.g. eBPF on a build without it; builds the programs before any sample
        engines[name] = engine
        options.update(engine_options(settings.sensor, name, engine, lambda ref: str(settings.resolve_path(ref))))
        for ruleset, refs in settings.sensor.rulesets.items():  # the rules axis and every trace's own rules
            key = options_key(name, ruleset)
            rule_loads[key] = rulesets.rule_loads(options[key].rules, rule_sources(settings, engine, refs))
            for config in axis_values(cases, "config"):  # every configuration the campaign runs must load
                check_dir = out_dir / PREFLIGHT_DIR / name
                check_dir.mkdir(parents=True, exist_ok=True)
                engine.config_test(dataclasses.replace(options[key], config_overlay=overlays.get(config)),
                                   check_dir)
                shutil.rmtree(check_dir, ignore_errors=True)
    ctx = CampaignContext(
        settings=settings, layout=layout, state_dir=state_dir, cache_dir=cache_dir, engines=engines,
        engine_versions={n: e.version() for n, e in engines.items()}, options=options, traces=traces,
        rule_loads=rule_loads,
        overlays=overlays,
    )
    if not layout.campaign_file.exists():
        write_campaign_doc(layout.root, campaign_doc(ctx, spec, cases, order))
    ctx.warnings.extend(noise_warnings)
    ctx.warnings.extend(record_probe(layout, probe_suricata="suricata" in engines, noise=noise))
    ground_truths(ctx, cases)
    shutil.rmtree(out_dir / PREFLIGHT_DIR, ignore_errors=True)
    return ctx, cases


def check_resume(layout: CampaignDir, out_dir: Path, spec_doc: dict[str, object], resume: bool,
                 case_ids: Sequence[str] = ()) -> None:
    """A directory that holds a campaign is only continued with --resume, the same spec and the same case ids
    (`case_ids`: the plan's; an older idsbench named some cases otherwise, e.g. the engine "capture")."""
    if not layout.campaign_file.exists():
        return
    previous = read_campaign_doc(out_dir)
    if not resume:
        raise SpecError(f"{out_dir} already holds a campaign.",
                        fix="pass --resume to complete it, or choose another --out directory.")
    if previous.spec_problem:
        raise SpecError(f"{out_dir} holds campaign {previous.name!r}: {previous.spec_problem}.",
                        fix="complete it with the idsbench version that started it, or choose another --out "
                            "directory.")
    # the stored spec as this version writes it (new keys with their defaults)
    if previous.spec.model_dump(mode="json") != spec_doc:
        raise SpecError(f"{out_dir} holds campaign {previous.name!r} with a different spec.",
                        fix="resume with the same spec file, or choose another --out directory.")
    planned = [c.case_id for c in previous.cases]
    if case_ids and planned and planned != list(case_ids):
        renamed = sorted(set(planned) - set(case_ids))
        raise SpecError(f"{out_dir} holds campaign {previous.name!r} whose cases this idsbench names otherwise "
                        f"({', '.join(renamed[:3])}{' …' if len(renamed) > 3 else ''}: made by an older version).",
                        fix="complete it with the idsbench version that started it, or choose another --out "
                            "directory.")


def campaign_doc(ctx: CampaignContext, spec: Spec, cases: list[Case], order: RunOrderRecord | None = None) -> CampaignDoc:
    """campaign.json: the spec as written, the host's environment, every input's digest, the cases."""
    env = Environment(**fingerprint().model_dump(),
                      engines={name: EngineBuild.model_validate(engine.build_info()) for name, engine in ctx.engines.items()})
    rules = {str(p): sha256_file(p) for opts in ctx.options.values() for p in opts.rules}
    named = {name: refs for name, refs in ctx.settings.sensor.rulesets.items() if name != DEFAULT_RULESET}
    return CampaignDoc(
        created_unix=time.time(), spec=spec, environment=env,
        inputs=Inputs(traces={ref: TraceInput.model_validate(t.model_dump()) for ref, t in ctx.traces.items()},
                      rules=tuple(RuleFileInput(path=p, sha256=h) for p, h in rules.items()),
                      rule_load={name: rule_load_doc(loads) for name, loads in ctx.rule_loads.items()},
                      configs={name: ConfigInput(path=str(p), sha256=sha256_file(p)) for name, p in ctx.overlays.items()},
                      rulesets=named),
        cases=tuple(PlannedCase.model_validate({"case_id": c.case_id, **c.params(), "samples": len(c.samples)})
                    for c in cases),
        order=order,
    )


def rule_load_doc(loads: tuple[rulesets.RuleSetLoad, ...]) -> RuleLoadInput:
    """The campaign file's `inputs.rule_load.<engine>`: each set's share, the totals, the text-rule ids
    loaded (analysis compares alerts between engines on the ids every engine loaded)."""
    rules, loaded = rulesets.totals(loads)
    sids = sorted({sid for load in loads for sid in load.sids})
    return RuleLoadInput(sets=tuple(RuleSetInput.model_validate(load.summary()) for load in loads), rules=rules,
                         loaded=loaded, sids=tuple(sids))
