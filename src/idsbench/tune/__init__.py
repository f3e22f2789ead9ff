"""Tuning plans: a Suricata overlay, host steps and self-explaining knobs for a probed topology.

- `make_plan(probe, PlanOptions(cpus=, iface=, memory_bytes=, rate_pps=, flows=)) -> TuningPlan`
- `TuningPlan.contract()` is `idsbench tune plan --format json`; `render.overlay_yaml(plan.suricata)`
  is the overlay as a Suricata include / idsbench `sensor.config` file.
"""

from __future__ import annotations

from idsbench.tune.model import Knob, PlanOptions, TuningPlan
from idsbench.tune.plan import make_plan

__all__ = ["Knob", "PlanOptions", "TuningPlan", "make_plan"]
