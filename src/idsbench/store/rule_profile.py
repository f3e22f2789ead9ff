"""A sample's rule profile (`rule_profile.csv`): per rule, what the engine's profiler counted in that sample
(sensors/ruleprofile.py writes it; the reader reads it back)."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

RULE_PROFILE_FILE = "rule_profile.csv"


@dataclass(frozen=True)
class RuleCost:
    """One rule's profile in one sample."""

    gid: int
    sid: int
    rev: int
    checks: int
    matches: int
    ticks_total: int
    ticks_avg: float
    ticks_max: int


COLUMNS = tuple(f.name for f in fields(RuleCost))



def write_profile(path: Path, costs: Sequence[RuleCost]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for c in sorted(costs, key=lambda c: -c.ticks_total):
            w.writerow([getattr(c, name) for name in COLUMNS])


def read_profile(path: Path) -> list[RuleCost]:
    with path.open(newline="") as f:
        return [RuleCost(gid=int(r["gid"]), sid=int(r["sid"]), rev=int(r["rev"]), checks=int(r["checks"]),
                         matches=int(r["matches"]), ticks_total=int(r["ticks_total"]),
                         ticks_avg=float(r["ticks_avg"]), ticks_max=int(r["ticks_max"]))
                for r in csv.DictReader(f)]
