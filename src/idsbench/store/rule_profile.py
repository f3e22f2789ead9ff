"""A sample's rule profile (`rule_profile.csv`): per rule, what the engine's profiler counted in that sample
(sensors/ruleprofile.py writes it; the reader reads it back).

`unit` says what the time columns count: "ticks" (Suricata: CPU time-stamp counter ticks, rdtsc) or "us"
(Snort 3: microseconds). A file written before the column existed is Suricata's: it reads as "ticks".
`ticks_max` is None (an empty cell) where the profiler reports no per-rule maximum (Snort 3).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Literal

from idsbench.store.atomic import write_csv
from idsbench.store.layout import RULE_PROFILE_FILE

Unit = Literal["ticks", "us"]
UNITS: tuple[Unit, ...] = ("ticks", "us")
LEGACY_UNIT: Unit = "ticks"  # files without a unit column came from Suricata's profiler


@dataclass(frozen=True)
class RuleCost:
    """One rule's profile in one sample; the time columns in `unit`."""

    gid: int
    sid: int
    rev: int
    checks: int
    # None: the profiler's figure is no count. Suricata 8 adds the -1 of a transaction rule's "cannot match"
    # check to it (detect.c DetectRunTx -> SCProfilingRuleUpdateCounter), so such rules can go negative.
    matches: int | None
    ticks_total: int
    ticks_avg: float
    ticks_max: int | None  # None: the profiler reports no maximum (Snort 3)
    unit: Unit = LEGACY_UNIT


COLUMNS = tuple(f.name for f in fields(RuleCost))


def write_profile(sample_dir: Path, costs: Sequence[RuleCost]) -> Path:
    """rule_profile.csv, the costliest rule first."""
    path = sample_dir / RULE_PROFILE_FILE
    write_csv(path, COLUMNS, (["" if getattr(c, name) is None else getattr(c, name) for name in COLUMNS]
                              for c in sorted(costs, key=lambda c: -c.ticks_total)))
    return path


def _unit(value: str | None, path: Path) -> Unit:
    if value is None or value == "":
        return LEGACY_UNIT
    for unit in UNITS:
        if value == unit:
            return unit
    raise ValueError(f"{path}: unknown unit {value!r} (expected one of {', '.join(UNITS)})")


def match_count(value: object) -> int | None:
    """A profiler's `matches`, or None where it is no count: Suricata 8 adds -1 for a transaction rule's
    "cannot match" check (detect.c DetectRunTx), so its figure is matches minus such checks, maybe negative."""
    if value is None or value == "":
        return None
    count = int(str(value))
    return count if count >= 0 else None


def read_profile(path: Path) -> list[RuleCost]:
    """The rows of a rule_profile.csv; ValueError naming the file when a value is not what it should be."""
    with path.open(newline="") as f:
        return [RuleCost(gid=int(r["gid"]), sid=int(r["sid"]), rev=int(r["rev"]), checks=int(r["checks"]),
                         matches=match_count(r["matches"]), ticks_total=int(r["ticks_total"]),
                         ticks_avg=float(r["ticks_avg"]),
                         ticks_max=int(r["ticks_max"]) if r.get("ticks_max") not in (None, "") else None,
                         unit=_unit(r.get("unit"), path))
                for r in csv.DictReader(f)]
