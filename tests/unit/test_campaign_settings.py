"""The spec read once: `campaign_settings` resolves what the stages after the plan read, and the runner's
and the search's modules take no spec beyond their entry points and preflight."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import idsbench
from idsbench.campaign_settings import campaign_settings
from idsbench.spec import spec_from_dict

ROOT = Path(idsbench.__file__).parent


def test_the_settings_hold_what_the_stages_read():
    spec = spec_from_dict({
        "name": "s", "samples": 3, "order": "cases",
        "traffic": {"traces": ["a.pcap", {"path": "b.pcap", "rules": ["b.rules"]}]},
        "sensor": {"rules": ["builtin:markers", "x.rules"], "set": {"k": True, "snort": {"k": 2}},
                   "stats_interval_s": 2, "ground_truth": False},
        "setup": {"kinds": ["vm-vfio"], "sriov_pf": "ens2f0", "cpuset": [2, 3]},
        "wire": {"sender_interface": "ens1f0", "impair": {"loss": 0.01}},
        "timing": {"drain_timeout_s": 7}, "search": {"trial_s": 3}, "profile": {"top": 5},
    }, base_dir=Path("/specs"))
    s = campaign_settings(spec)
    assert (s.name, s.samples, s.order, s.base_dir) == ("s", 3, "cases", Path("/specs"))
    assert s.setup.cpuset == (2, 3) and s.setup.sriov_pf == "ens2f0"
    assert s.wire.sensor_interface == "ens2f0" and s.wire.sender_interface == "ens1f0" and s.wire.impaired
    assert s.sensor.rulesets == {"default": ("builtin:markers", "x.rules"), "b": ("b.rules",)}
    assert s.sensor.overrides("suricata") == {"k": "yes"} and s.sensor.overrides("snort") == {"k": "2"}
    assert s.sensor.overrides("snort") == spec.sensor.overrides("snort")
    assert s.sensor.counts_markers and not s.sensor.ground_truth and s.sensor.stats_interval_s == 2
    assert (s.timing.drain_timeout_s, s.search.trial_s, s.profile.top) == (7, 3, 5)
    assert s.resolve_path("r.rules") == spec.resolve_path("r.rules") == Path("/specs/r.rules")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.samples = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.sensor.rulesets["new"] = ()  # type: ignore[index]


def test_a_spec_without_markers_or_a_nic_wire():
    s = campaign_settings(spec_from_dict({"name": "p"}))
    assert not s.sensor.counts_markers and s.wire.sensor_interface is None and not s.wire.impaired
    assert s.setup.cpuset is None and s.order is None


# The modules of the runner and the search that may take a Spec: the campaign entry points (they hand it
# to preflight) and preflight (which plans it and resolves the settings once). Every other stage reads
# the cases and CampaignSettings.
SPEC_TAKERS = {"run/campaign.py", "run/preflight.py", "run/duet/campaign.py", "search/campaign.py", "search/duet.py"}


def _names_spec(path: Path) -> bool:
    return any(isinstance(node, ast.ImportFrom) and (node.module or "").startswith("idsbench.spec")
               and any(a.name == "Spec" for a in node.names) for node in ast.walk(ast.parse(path.read_text())))


def test_after_the_plan_no_stage_takes_the_spec():
    takers = {p.relative_to(ROOT).as_posix() for pkg in ("run", "search") for p in (ROOT / pkg).rglob("*.py")
              if _names_spec(p)}
    assert takers == SPEC_TAKERS


def test_the_reader_sees_a_spec_import(tmp_path: Path):
    (tmp_path / "m.py").write_text("from idsbench.spec.model import Rate, Spec\n")
    (tmp_path / "n.py").write_text("from idsbench.spec import Rate\n")
    assert _names_spec(tmp_path / "m.py") and not _names_spec(tmp_path / "n.py")
