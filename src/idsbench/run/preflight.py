"""Everything checked before the first sample starts: one clear error instead of N failed samples."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.plan import Case, plan
from idsbench.proc import require_program
from idsbench.run.context import CampaignContext, TraceEntry
from idsbench.sensors.suricata import Suricata
from idsbench.spec import Spec
from idsbench.store import atomic
from idsbench.store.environment import fingerprint, sha256_file
from idsbench.store.layout import CampaignDir
from idsbench.traffic.pcap import read_info
from idsbench.traffic.resolve import resolve_trace, synth_metadata


def check_host() -> None:
    if os.geteuid() != 0:
        raise EnvironmentMissing(
            "idsbench run needs root: it creates network namespaces, veth links and cgroups.",
            fix="run it as root (e.g. `sudo .venv/bin/idsbench run ...`).",
        )
    for program in ("ip", "ethtool", "tcpreplay", "suricata", "sysctl"):
        require_program(program)


def resolve_traces(spec: Spec, cache_dir: Path) -> dict[str, TraceEntry]:
    traces = {}
    for ref in spec.traffic.traces:
        source = ref if ref.startswith("builtin:") else str(spec.resolve_path(ref))
        path = resolve_trace(source, cache_dir)
        info = read_info(path, cache_dir=cache_dir)
        if info.packets == 0:
            raise SpecError(f"trace {ref} ({path}) holds no packets.", fix="give a capture with packets.")
        meta = synth_metadata(path) or {}
        traces[ref] = TraceEntry(
            ref=ref, path=Path(path), sha256=info.sha256, packets=info.packets, bytes=info.bytes,
            duration_s=info.duration_s, max_frame=info.max_frame,
            per_second=tuple(dict(p) for p in (info.per_second or ())),
            markers=meta.get("markers"),
        )
    return traces


def prepare_campaign(spec: Spec, out_dir: Path, *, resume: bool, state_dir: Path,
                     cache_dir: Path) -> tuple[CampaignContext, list[Case]]:
    """Validate inputs, test the sensor config, create/verify the campaign directory."""
    cases = plan(spec)
    check_host()
    layout = CampaignDir(out_dir)
    spec_doc = spec.model_dump(mode="json")
    if layout.campaign_file.exists():
        previous = json.loads(layout.campaign_file.read_text())
        if not resume:
            raise SpecError(
                f"{out_dir} already holds a campaign.",
                fix="pass --resume to complete it, or choose another --out directory.",
            )
        if previous.get("spec") != spec_doc:
            raise SpecError(
                f"{out_dir} holds campaign {previous.get('spec', {}).get('name')!r} with a different spec.",
                fix="resume with the same spec file, or choose another --out directory.",
            )
    sensor = Suricata()
    if not sensor.available():
        require_program("suricata")
    traces = resolve_traces(spec, cache_dir)
    rules = sensor.resolve_rules([r if r.startswith("builtin:") else str(spec.resolve_path(r))
                                  for r in spec.sensor.rules])
    overrides = spec.sensor.overrides()
    check_dir = out_dir / "preflight"
    check_dir.mkdir(parents=True, exist_ok=True)
    sensor.config_test(rules, overrides, check_dir)
    shutil.rmtree(check_dir, ignore_errors=True)
    ctx = CampaignContext(
        spec=spec, layout=layout, state_dir=state_dir, cache_dir=cache_dir, sensor=sensor,
        sensor_version=sensor.version(), rules=rules, overrides=overrides, traces=traces,
    )
    if not layout.campaign_file.exists():
        atomic.write_json(layout.campaign_file, campaign_doc(ctx, cases, spec_doc))
    return ctx, cases


def campaign_doc(ctx: CampaignContext, cases: list[Case], spec_doc: dict) -> dict:
    env = fingerprint()
    env["suricata"] = ctx.sensor.build_info()
    return {
        "schema": 1,
        "created_unix": time.time(),
        "spec": spec_doc,
        "environment": env,
        "inputs": {
            "traces": {ref: {k: v for k, v in t.summary().items() if k != "per_second"}
                       for ref, t in ctx.traces.items()},
            "rules": [{"path": str(p), "sha256": sha256_file(p)} for p in ctx.rules],
        },
        "cases": [{"case_id": c.case_id, **c.params(), "samples": len(c.samples)} for c in cases],
    }
