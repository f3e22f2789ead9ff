"""What differs between two probes (or two campaigns: their stored probes and their spec's
`sensor.set` overrides), as dotted paths old -> new, ignoring values that move on their own."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from idsbench.probemodel import HostProbe
from idsbench.store.reader import read_probe, read_spec_doc

# Paths that change without anything relevant changing (time, current frequency, IRQ numbers, ...).
VOLATILE = (
    "created_unix", "notes", "notes.*", "hypervisor_evidence", "cpufreq.cur_khz", "timers.rounds",
    "timers.error", "cpu.topology", "cpu.topology.*", "interfaces.*.irqs.*.number", "interfaces.*.operstate",
    "tsc.rounds", "tsc.round_ms", "tsc.spread_ppm", "tsc.error",
    # the cache's sensor builds: a build added beside the one a campaign uses is no change of the host
    # (campaign.json's environment records the build each engine ran)
    "builds", "builds.*",
    # the quietness probe: how busy the host was at that moment, not what it is
    "noise", "noise.*",
)
# Relative changes below these are noise: timer costs (median of a few rounds), memory sizes
# (MemTotal moves by a few MB between kernels) and the TSC rate (measured over ~150 ms).
TOLERANCE = (("timers.*_ns", 0.20), ("memory_bytes", 0.01), ("numa_nodes.*.memory_bytes", 0.01), ("tsc.hz", 0.001))
# Lists of objects are compared item by item under a natural key instead of by position.
ITEM_KEYS = {"numa_nodes": "id", "irqs": "name"}


@dataclass(frozen=True)
class Difference:
    path: str
    old: JsonValue
    new: JsonValue

    def __str__(self) -> str:
        old, new = self.old, self.new
        if isinstance(old, list) and isinstance(new, list) and len(old) + len(new) > 16:
            removed = [str(v) for v in old if v not in new]
            added = [str(v) for v in new if v not in old]
            changes = [f"-{v}" for v in removed] + [f"+{v}" for v in added]
            return f"{self.path}: {' '.join(changes) if changes else '(order changed)'}"
        return f"{self.path}: {_fmt(old)} → {_fmt(new)}"


def _fmt(value: JsonValue) -> str:
    return "(absent)" if value is None else json.dumps(value, ensure_ascii=False)


def _flatten(value: JsonValue, prefix: str, out: dict[str, JsonValue]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        key_name = ITEM_KEYS.get(prefix.rsplit(".", 1)[-1])
        for index, item in enumerate(value):
            assert isinstance(item, dict)
            label = item.get(key_name) if key_name else None
            _flatten(item, f"{prefix}.{label if label is not None else index}", out)
    else:
        out[prefix] = value


def flatten(probe: HostProbe) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {}
    _flatten(probe.model_dump(mode="json", by_alias=True), "", out)
    return out


def _volatile(path: str) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in VOLATILE)


def _within_tolerance(path: str, old: JsonValue, new: JsonValue) -> bool:
    if not isinstance(old, (int, float)) or not isinstance(new, (int, float)):
        return False
    for pattern, tolerance in TOLERANCE:
        if fnmatch.fnmatchcase(path, pattern):
            base = max(abs(float(old)), abs(float(new)))
            return base == 0 or abs(float(new) - float(old)) / base < tolerance
    return False


def diff(a: HostProbe, b: HostProbe) -> list[Difference]:
    """Relevant differences from `a` to `b`, sorted by path."""
    flat_a, flat_b = flatten(a), flatten(b)
    out: list[Difference] = []
    for path in sorted(set(flat_a) | set(flat_b)):
        old, new = flat_a.get(path), flat_b.get(path)
        if old == new or _volatile(path) or _within_tolerance(path, old, new):
            continue
        out.append(Difference(path, old, new))
    return out


def load(path: Path) -> HostProbe:
    """A probe from a probe file or a campaign directory: the store's one probe reader."""
    return read_probe(Path(path))


def spec_overrides(campaign: Path) -> dict[str, JsonValue] | None:
    """The campaign spec's `sensor.set`, or None when `campaign` is not a campaign directory."""
    spec = read_spec_doc(campaign) if campaign.is_dir() else None
    if spec is None:
        return None
    sensor = spec.get("sensor")
    overrides = sensor.get("set") if isinstance(sensor, dict) else None
    return dict(overrides) if isinstance(overrides, dict) else {}


def diff_paths(a: Path, b: Path) -> list[Difference]:
    """Probe differences of two files/campaigns, plus `spec.sensor.set.<key>` when both are campaigns."""
    out = diff(load(a), load(b))
    set_a, set_b = spec_overrides(Path(a)), spec_overrides(Path(b))
    if set_a is not None and set_b is not None:
        for key in sorted(set(set_a) | set(set_b)):
            if set_a.get(key) != set_b.get(key):
                out.append(Difference(f"spec.sensor.set.{key}", set_a.get(key), set_b.get(key)))
    return out
