"""Duet mode, the spec's side: which axes may differ side by side (`SIDE_AXES`, the one place they are
declared), which may not, and the check that refuses a duet spec that cannot run (at load:
`spec.load`). How the cases pair into sides a and b is the plan's (`plan.duet_pairs`). See
docs/duet.md.

A duet runs two sensors at the same time on the same packets (one replay mirrored to both) and judges
their cost ratio b/a. Exactly one axis of `SIDE_AXES` has two values — its values are sides a and b, in
the order written — or none has (an A/A duet: both sides the same case, which measures the method's
own asymmetry). A later axis that may differ side by side joins `SIDE_AXES` with one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


# The axes that may differ between the two sides (one line per axis; threads, capture, bypass join here).
SIDE_AXES: tuple[SideAxis, ...] = (
    SideAxis("sensor.engine", "engine", lambda s: s.sensor.engine),
    SideAxis("sensor.rules", "rules", lambda s: [name for name, _ in s.sensor.ruleset_axis()]),
    SideAxis("sensor.config", "config", lambda s: s.sensor.config),
    SideAxis("sensor.capture", "capture", lambda s: s.sensor.capture),  # capture settings (issue 29)
)


@dataclass(frozen=True)
class FixedAxis:
    """An axis that must have one value in a duet, and why."""

    key: str
    values: Callable[[Spec], Sequence[Any]]
    why: str


_ONE_REPLAY = "both sides see the one replay's packets"
FIXED_AXES: tuple[FixedAxis, ...] = (
    FixedAxis("traffic.traces", lambda s: s.traffic.traces, _ONE_REPLAY),
    FixedAxis("traffic.rate", lambda s: s.traffic.rate, _ONE_REPLAY),
    FixedAxis("traffic.replayers", lambda s: s.traffic.replayers, _ONE_REPLAY),
    FixedAxis("traffic.sender", lambda s: s.traffic.sender, _ONE_REPLAY),
    FixedAxis("setup.kinds", lambda s: s.setup.kinds, "both sensors run in the same kind of setup"),
    FixedAxis("setup.cpus", lambda s: s.setup.cpus, "both sides get identical limits"),
    FixedAxis("setup.memory", lambda s: s.setup.memory, "both sides get identical limits"),
    FixedAxis("sensor.threads", lambda s: s.sensor.threads, "both sides run as many workers on as many CPUs"),
)

# Setup kinds a duet runs in: each side gets its own sensor namespace on the mirror.
DUET_SETUPS = ("baremetal", "container", "container-vtap")
_SETUP_REFUSED = {
    "vm": "a VM pair would need two guests whose vCPUs, vhost workers and emulator threads the host "
          "schedules apart from the sensors, and the guests' virtio paths are invisible to the host's "
          "accounting: their costs would not be the sensors' alone",
}


def side_axes_of(spec: Spec) -> list[tuple[SideAxis, list[Any]]]:
    """The side axes that have more than one value in `spec`."""
    return [(axis, list(axis.values(spec))) for axis in SIDE_AXES if len(axis.values(spec)) > 1]


def check_duet(spec: Spec) -> None:
    """SpecError naming the fix when a `mode = "duet"` spec cannot run as one; nothing for a single one."""
    if spec.mode != "duet":
        return
    names = ", ".join(a.key for a in SIDE_AXES)
    if spec.hosts is not None:
        raise SpecError("mode = \"duet\" runs on this machine only (its mirror is a hub in a local namespace); "
                        "the spec has [hosts].", fix="remove [hosts], or run the cases with mode = \"single\".")
    for fixed in FIXED_AXES:
        values = list(fixed.values(spec))
        if len(values) > 1:
            raise SpecError(
                f"mode = \"duet\": {fixed.key} has {len(values)} values; it cannot differ side by side ({fixed.why}).",
                fix=f"give {fixed.key} one value (run one duet per value); the sides of a duet may differ "
                    f"only in one of {names}.")
    for kind in spec.setup.kinds:
        if kind not in DUET_SETUPS:
            why = _SETUP_REFUSED.get(kind, "it has no duet support")
            raise SpecError(f"mode = \"duet\" does not run in setup kind {kind!r}: {why}.",
                            fix=f"use setup.kinds = one of {', '.join(map(repr, DUET_SETUPS))}.")
    varying = side_axes_of(spec)
    if len(varying) > 1:
        listed = " and ".join(f"{a.key} ({len(v)} values)" for a, v in varying)
        raise SpecError(f"mode = \"duet\": {listed} both have several values; the two sides of a duet differ "
                        "on one axis only.",
                        fix="keep two values on one of them and one value on the others (one duet per "
                            "comparison), or run the matrix with mode = \"single\".")
    for axis, values in varying:
        if len(values) != 2:
            raise SpecError(f"mode = \"duet\": {axis.key} has {len(values)} values ({', '.join(map(str, values))}); "
                            "a duet has two sides, a and b.",
                            fix=f"give {axis.key} exactly two values (a first, b second), or one for an A/A duet.")
    if spec.profile.perf:
        raise SpecError("mode = \"duet\" does not run [profile] perf yet (its profiler follows one sensor).",
                        fix="set profile.perf = false, or profile the sides with mode = \"single\".")


def axis_field(key: str | None) -> str | None:
    """The Case attribute of a side axis key ("sensor.engine" -> "engine")."""
    return next((a.field for a in SIDE_AXES if a.key == key), None)
