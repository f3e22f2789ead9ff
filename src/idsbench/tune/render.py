"""Plan outputs: the JSON contract, the YAML overlay, the host shell script."""

from __future__ import annotations

import json

import yaml
from pydantic import JsonValue

from idsbench.tune.model import TuningPlan
from idsbench.tune.overlay import complete_sections


def to_json(plan: TuningPlan) -> str:
    return json.dumps(plan.contract(), indent=2)


def overlay_yaml(overlay: dict[str, JsonValue], base: dict[str, JsonValue] | None = None) -> str:
    """The overlay as a Suricata YAML include (the %YAML 1.1 header; sections completed from `base`)."""
    body = yaml.safe_dump(complete_sections(overlay, base), sort_keys=False, default_flow_style=False)
    return f"%YAML 1.1\n---\n{body}"


def to_yaml(plan: TuningPlan, base: dict[str, JsonValue] | None = None) -> str:
    """The overlay file with the knobs and warnings as comments."""
    workers, management = ",".join(map(str, plan.layout.workers)), ",".join(map(str, plan.layout.management))
    head = [f"# idsbench tune plan: {plan.interface or 'no interface'}, workers {workers}, management {management}"]
    head += [f"# {k.name} = {k.value}: {k.why}" for k in plan.knobs]
    head += [f"# WARNING: {w}" for w in plan.warnings]
    if base:
        head.append("# Sections below are complete (Suricata's --include replaces whole top-level sections):")
        head.append("# keys the plan does not set come from the planning host's suricata.yaml.")
    return overlay_yaml(plan.suricata, base).replace("---\n", "---\n" + "\n".join(head) + "\n", 1)


def to_shell(plan: TuningPlan) -> str:
    lines = ["#!/bin/sh", f"# idsbench tune plan: host steps for {plan.interface or '(no interface)'}.",
             "# Run as root. The boot-line step is commented out: uncomment it to change the next boot.",
             "# Undo, in this order:"]
    undo = [s.undo for s in reversed(plan.host) if s.undo]
    lines += [f"#   {u}" for u in undo] or ["#   (nothing to undo)"]
    no_undo = [s.command for s in plan.host if not s.undo]
    lines += [f"# (no undo recorded for: {c})" for c in no_undo]
    lines += [f"# WARNING: {w}" for w in plan.warnings]
    lines += ["set -e", ""]
    for step in plan.host:
        lines.append(f"# {step.why}")
        lines.append(f"# {step.command}" if step.kind == "boot" else step.command)
    if not plan.host:
        lines.append("# nothing to change on this host")
    return "\n".join(lines) + "\n"
