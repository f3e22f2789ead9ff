"""Duet mode, the spec's side: which axes may differ side by side (`SIDE_AXES`, the one place they are
declared), which make the matrix of duets (`CELL_AXES`), and the check that refuses a duet spec that
cannot run (at load: `spec.load`). How the cases pair into sides is the plan's (`plan.duet_pairs`). See
docs/duet.md.

A duet runs two sensors at the same time on the same packets (one replay mirrored to both) and judges
their cost ratio b/a. At most one axis of `SIDE_AXES` has several values — its first value is the
reference (side a), and every other value runs against it as side b (k values: k − 1 pairs) — or none
has (an A/A duet: both sides the same case, which measures the method's own asymmetry). Every other axis
(`CELL_AXES`: traces, rate, replayers, limits …) may have several values: each combination is one cell,
and each cell holds its own pairs; both sides of a pair always share the cell's values (one replay).
A later axis that may differ side by side joins `SIDE_AXES` with one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idsbench.errors import SpecError
from idsbench.spec.model import Spec

SIDES = ("a", "b")


@dataclass(frozen=True)
class SideAxis:
    """An axis whose two values can run side by side: `key` as the spec names it, `field` the
    `plan.Case` attribute holding a side's value, `values` the axis's values as the spec wrote them."""

    key: str
    field: str
    values: Callable[[Spec], Sequence[Any]]


# The axes that may differ between the two sides (one line per axis; threads, bypass join here).
SIDE_AXES: tuple[SideAxis, ...] = (
    SideAxis("sensor.engine", "engine", lambda s: s.sensor.engine),
    SideAxis("sensor.rules", "rules", lambda s: [name for name, _ in s.sensor.ruleset_axis()]),
    SideAxis("sensor.config", "config", lambda s: s.sensor.config),
    SideAxis("sensor.capture", "capture", lambda s: s.sensor.capture),  # capture settings (issue 29)
    SideAxis("setup.kinds", "setup", lambda s: s.setup.kinds),  # the isolation levels (issue 42)
)


@dataclass(frozen=True)
class CellAxis:
    """An axis of the matrix of duets: both sides of a pair share its value (`field`, a `plan.Case`
    attribute); each combination of these axes' values is one cell (`duet_cell` names it by `key`)."""

    key: str
    field: str
    values: Callable[[Spec], Sequence[Any]]


CELL_AXES: tuple[CellAxis, ...] = (
    CellAxis("traffic.traces", "trace", lambda s: s.traffic.trace_refs()),
    CellAxis("traffic.rate", "rate", lambda s: s.traffic.rate),
    CellAxis("traffic.replayers", "replayers", lambda s: s.traffic.replayers),
    CellAxis("traffic.sender", "sender", lambda s: s.traffic.sender),
    CellAxis("setup.cpus", "cpus", lambda s: s.setup.cpus),
    CellAxis("setup.memory", "memory", lambda s: s.setup.memory),
    CellAxis("sensor.threads", "threads", lambda s: s.sensor.threads),
    CellAxis("sensor.bypass", "bypass", lambda s: s.sensor.bypass),
)

# Setup kinds a duet side runs in: each side gets its own sensor namespace on the mirror. `vm`: the whole
# guest (vCPUs, emulator, vhost) is the side's cgroup; under TCG its figures are labelled `emulated`.
DUET_SETUPS = ("baremetal", "container", "container-vtap", "vm")
_SETUP_REFUSED = {
    "vm-vfio": "its sensor owns a PCI function of a NIC, which the duet's mirror (two veth copies in this "
               "host's namespaces) cannot feed",
}


def side_axes_of(spec: Spec) -> list[tuple[SideAxis, list[Any]]]:
    """The side axes that have more than one value in `spec`."""
    return [(axis, list(axis.values(spec))) for axis in SIDE_AXES if len(axis.values(spec)) > 1]


def check_duet(spec: Spec) -> None:
    """SpecError naming the fix when a `mode = "duet"` spec cannot run as one; for a single one, only that
    it has no `[duet]` settings."""
    if spec.mode != "duet":
        if spec.duet.precision is not None or spec.duet.budget_s is not None:
            raise SpecError("[duet] precision and budget_s apply to mode = \"duet\" campaigns; the spec is "
                            "mode = \"single\".", fix="add mode = \"duet\", or remove the [duet] table.")
        return
    if spec.hosts is not None:
        raise SpecError("mode = \"duet\" runs on this machine only (its mirror is a hub in a local namespace); "
                        "the spec has [hosts].", fix="remove [hosts], or run the cases with mode = \"single\".")
    for kind in spec.setup.kinds:
        if kind not in DUET_SETUPS:
            why = _SETUP_REFUSED.get(kind, "it has no duet support")
            raise SpecError(f"mode = \"duet\" does not run in setup kind {kind!r}: {why}.",
                            fix=f"use setup.kinds among {', '.join(map(repr, DUET_SETUPS))}.")
    varying = side_axes_of(spec)
    if len(varying) > 1:
        listed = " and ".join(f"{a.key} ({len(v)} values)" for a, v in varying)
        raise SpecError(f"mode = \"duet\": {listed} both have several values: which are the sides? The sides "
                        "of a duet differ on one axis only.",
                        fix="keep several values on one of them (its first value is the reference, side a) and "
                            "one value on the others (one campaign per comparison), or run the matrix with "
                            "mode = \"single\".")
    for axis, values in varying:
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            raise SpecError(f"mode = \"duet\": the side axis {axis.key} lists {', '.join(repeated)} more than once; "
                            "each value is one side.",
                            fix=f"list each value of {axis.key} once (the first is the reference; for an A/A duet "
                                "give one value).")
    empty = [name for name, refs in spec.sensor.ruleset_axis() if not refs]
    if empty and any(axis.key == "sensor.rules" for axis, _ in varying) and not spec.duet.allow_empty:
        raise SpecError(f"mode = \"duet\": the ruleset side {empty[0]!r} has no rule files: that side would run "
                        "the engine without rules.",
                        fix=f"give {empty[0]} its rule files (rules = {{ base = [\"a.rules\"], more = [\"a.rules\", "
                            "\"b.rules\"] }}), or set [duet] allow_empty = true to measure the engine without rules.")
    if spec.profile.perf:
        raise SpecError("mode = \"duet\" does not run [profile] perf yet (its profiler follows one sensor).",
                        fix="set profile.perf = false, or profile the sides with mode = \"single\".")


def aa_announcement(spec: Spec) -> str | None:
    """What an A/A duet (no side axis with several values) says at its start; None for an A/B duet. A flat
    `rules = ["a.rules", "b.rules"]` is one ruleset of both files on each side, which a user who meant
    a.rules against a.rules + b.rules needs to hear before the samples run."""
    if spec.mode != "duet" or side_axes_of(spec):
        return None
    refs = spec.sensor.ruleset_axis()[0][1]
    rules = ", ".join(Path(r).name for r in refs) or "no rules"
    line = (f"A/A duet: both sides run the same case ({', '.join(spec.sensor.engine)}, {rules}, "
            f"{', '.join(spec.setup.kinds)}): the ratio measures the method's own noise, not a difference.")
    if len(refs) > 1:
        line += (f" rules = [{', '.join(map(repr, refs))}] is ONE ruleset on each side; to compare rulesets "
                 "name them: rules = { base = [\"a.rules\"], more = [\"a.rules\", \"b.rules\"] }.")
    return line


def axis_field(key: str | None) -> str | None:
    """The Case attribute of a side axis key ("sensor.engine" -> "engine")."""
    return next((a.field for a in SIDE_AXES if a.key == key), None)
