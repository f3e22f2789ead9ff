"""The capture axis (`sensor.capture`, `sensor.capture_options`): how an engine reads the wire.

Each engine declares its capture methods in its own package (a `CaptureCatalogue` of `CaptureMethod`s:
sensors/suricata/capture.py, sensors/snort/capture.py, sensors/nodetect/capture.py), reachable by name
through `sensors.registry.capture_methods(engine)`. What is here is generic and reads those declarations:
the types, which spec options apply to a method (`options_for`), an option's value as the engine takes it,
the effective options with the engine's defaults written out (so that a version comparison compares like
with like: Suricata 8 changed its AF_PACKET defaults), and the spec check over the engines of a campaign.

A leaf (imports only errors): the plan checks a spec's methods and options with it before anything
starts, the engine adapters render their config from `effective_options`.

`sensor.capture_options`: a plain key applies to every method of the axis (and must belong to each);
a table named after a method (`[sensor.capture_options.af-xdp]`) to that method only, winning over a
plain key of the same name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from idsbench.errors import SpecError

Scalar = str | int | float | bool

# XDP in a veth's driver (native XDP) takes a wire MTU up to one page less XDP's 256-byte headroom, the
# packet buffer's shared info (320 bytes on x86-64) and the Ethernet header: 3506 with 4 KiB pages. Above it
# the kernel refuses the program ("veth: Peer MTU is too large to set XDP", ERANGE; measured on 6.18: 3506
# attaches, 3507 does not). Suricata then fails to start (af-xdp: "Failed to create socket: Numerical result
# out of range") or goes on without it (its XDP bypass: "Unable to set XDP ... (-34)", nothing bypassed).
VETH_NATIVE_XDP_MAX_MTU = os.sysconf("SC_PAGE_SIZE") - 256 - 320 - 14
# the setup kinds whose sensor captures on a veth of this machine (the macvtap and VM setups do not)
VETH_SETUPS = ("baremetal", "container")


@dataclass(frozen=True)
class Option:
    """One option of a method: its kind, the accepted choices (and the spellings that mean one of them,
    `aliases`: written out as the choice they mean), the least whole number."""

    kind: Literal["int", "bool", "choice"]
    choices: tuple[str, ...] = ()
    minimum: int = 1
    aliases: tuple[tuple[str, str], ...] = ()  # (spelling, the choice it means)

    def accepted(self) -> tuple[str, ...]:
        return (*self.choices, *(alias for alias, _ in self.aliases))


@dataclass(frozen=True)
class CaptureMethod:
    """One way an engine reads the wire, as the engine declares it."""

    name: str
    options: Mapping[str, Option] = field(default_factory=dict)  # the `sensor.capture_options` it takes
    defaults: Mapping[str, Scalar] = field(default_factory=dict)  # the engine's defaults, written out
    # how long a sensor must look quiet before the drain lets it go (run/drain.QuietWatch); None: the drain's own
    quiet_window_s: float | None = None
    # why a search's warm trials cannot rely on its live counters (it then runs cold trials); None: they can
    cold_trials: str | None = None
    # Linux capabilities it needs inside a container beyond the container setups' own
    container_capabilities: tuple[str, ...] = ()
    # why it cannot run a sample here yet (a SpecError before anything starts); None: it runs
    refused: str | None = None
    # (option, value): the method attaches an XDP program in the driver when its effective option has that
    # value — a device without driver XDP cannot run it, and the socket's drops are the interface's too
    native_xdp_when: tuple[str, Scalar] | None = None
    native_xdp_fix: str = ""  # how to run it on a device without driver XDP
    # the kernel-side flow bypass modes (idsbench.bypass) the engine can load with this method
    kernel_bypass: tuple[str, ...] = ()
    # the largest frame (bytes, Ethernet header included) the method's capture takes, and why; None: any
    # frame the wire carries
    max_frame: int | None = None
    max_frame_why: str = ""


@dataclass(frozen=True)
class CaptureCatalogue:
    """An engine's capture methods (its default first among equals) and the flow bypass it has."""

    engine: str
    default: str
    methods: tuple[CaptureMethod, ...]
    bypass: tuple[str, ...] = ()  # flow bypass modes besides "off" (idsbench.bypass)
    no_bypass: str = "it has no flow bypass"  # why it has none, when `bypass` is empty

    def __post_init__(self) -> None:
        if self.default not in self.names():
            raise ValueError(f"{self.engine}'s default capture method {self.default!r} is not one of its methods")

    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.methods)

    def method(self, name: str | None) -> CaptureMethod:
        """The method `name` (None: the default); SpecError naming the engine's methods."""
        wanted = self.default if name is None else name
        for m in self.methods:
            if m.name == wanted:
                return m
        raise SpecError(f"sensor.capture = {name!r}: {self.engine} has no such capture method.",
                        fix=f"{self.engine} captures with {', '.join(self.names())}.")


def options_for(method: str, options: Mapping[str, Scalar | Mapping[str, Scalar]]) -> dict[str, Scalar]:
    """The `sensor.capture_options` that apply to `method`: the plain keys, then its own table."""
    out: dict[str, Scalar] = {k: v for k, v in options.items() if not isinstance(v, Mapping)}
    own = options.get(method)
    if isinstance(own, Mapping):
        out.update(own)
    return out


def _bool(value: Scalar) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in ("yes", "true", "on") else False if text in ("no", "false", "off") else None


def check_value(engine: str, method: CaptureMethod, key: str, value: Scalar) -> Scalar:
    """The option's value as the engine takes it; SpecError naming the fix."""
    if key not in method.options:
        accepted = ", ".join(sorted(method.options)) or "none"
        raise SpecError(f"sensor.capture_options: {key!r} is not an option of {engine}'s {method.name!r} capture.",
                        fix=f"{method.name} takes {accepted}; put a method's own option in "
                            f"[sensor.capture_options.{method.name}] when the capture axis has several methods.")
    opt = method.options[key]
    if opt.kind == "bool":
        flag = _bool(value)
        if flag is None:
            raise SpecError(f"sensor.capture_options: {key} = {value!r} is not a yes/no value.",
                            fix=f"write {key} = true or false.")
        return flag
    if opt.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < opt.minimum:
            raise SpecError(f"sensor.capture_options: {key} = {value!r} is not a whole number >= {opt.minimum}.",
                            fix=f"write {key} as an integer (e.g. {max(opt.minimum, 2048)}).")
        return value
    text = str(value)
    if text not in opt.accepted():
        raise SpecError(f"sensor.capture_options: {key} = {value!r} is not one of {', '.join(opt.accepted())}.",
                        fix=f"use {key} = \"{opt.choices[0]}\" or another of those.")
    return dict(opt.aliases).get(text, text)


def effective_options(engine: str, method: CaptureMethod, options: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """The options a run uses, the engine's defaults written out (what results and the report record).
    What depends on the run (Suricata's AF_PACKET block size and threads: MTU, CPUs) the config renderer
    completes."""
    given = {k: check_value(engine, method, k, v) for k, v in options.items()}
    return {**method.defaults, **given}


def native_xdp(method: CaptureMethod, effective: Mapping[str, Scalar]) -> bool:
    """Whether the method runs with an XDP program in the driver (its effective options say so). Then the
    socket's drops are also the interface's rx_dropped: a redirect that finds the socket's ring full is
    counted by the driver too (veth: measured, 26728 of 26728); the waterfall books them once, at the capture."""
    if method.native_xdp_when is None:
        return False
    key, value = method.native_xdp_when
    return effective.get(key, method.defaults.get(key)) == value


# Setups whose sensor captures on a device without native (driver) XDP: a method that attaches XDP in the
# driver cannot run there.
NO_NATIVE_XDP: dict[str, str] = {
    "container-vtap": "a macvtap's device has no native XDP (measured: Suricata 7.0.10 exits with \"af-xdp: "
                      "Failed to create socket: Operation not supported\"; in skb mode exact, 572 of 572)",
}


def check(catalogues: Mapping[str, CaptureCatalogue], captures: Sequence[str | None],
          options: Mapping[str, Scalar | Mapping[str, Scalar]], kinds: Sequence[str] = ()) -> None:
    """SpecError for a method an engine does not have (or cannot run yet), an unknown option, an option that
    does not belong to a method it applies to (the spec's `sensor.capture`, `sensor.capture_options`), or
    native XDP on a setup whose capture device has none. `catalogues`: each engine of the spec by name (a
    build, `suricata@8.0.6`, has its engine's), `kinds`: the spec's setup kinds."""
    all_methods = {m for cat in catalogues.values() for m in cat.names()}
    for name, value in options.items():
        if isinstance(value, Mapping) and name not in all_methods:
            raise SpecError(f"[sensor.capture_options.{name}] names no capture method of the campaign's engines "
                            f"({', '.join(sorted(catalogues))}).", fix=f"use one of {', '.join(sorted(all_methods))}.")
    for catalogue in catalogues.values():
        for capture in captures:
            method = catalogue.method(capture)
            if method.refused is not None:
                usable = [m.name for m in catalogue.methods if m.refused is None]
                raise SpecError(f"sensor.capture = {capture!r}: {catalogue.engine}'s {method.name!r} does not run "
                                f"here yet: {method.refused}.", fix=f"use {', '.join(usable)} for {catalogue.engine}.")
            effective = effective_options(catalogue.engine, method, options_for(method.name, options))
            if native_xdp(method, effective):
                _check_native_xdp(method, kinds)


def _check_native_xdp(method: CaptureMethod, kinds: Sequence[str]) -> None:
    key, value = method.native_xdp_when or ("", "")
    for kind in kinds:
        if kind in NO_NATIVE_XDP:
            raise SpecError(f"sensor.capture = \"{method.name}\" in {key} {value} (XDP in the driver; the default) "
                            f"on setup {kind!r}: {NO_NATIVE_XDP[kind]}.",
                            fix=f"{method.native_xdp_fix or 'use another capture method'}, or run "
                                f"{method.name} on another setup kind.")


def frame_problem(method: CaptureMethod, effective: Mapping[str, Scalar], kind: str, max_frame: int,
                  mtu: int) -> str | None:
    """Why `method` (with its effective options, on setup `kind`) cannot carry a trace whose largest frame is
    `max_frame` bytes on a wire of `mtu`; None when it can."""
    if method.max_frame is not None and max_frame > method.max_frame:
        return (f"{method.name} takes frames of at most {method.max_frame:,} bytes ({method.max_frame_why}), and "
                f"the trace's largest is {max_frame:,}")
    if native_xdp(method, effective) and kind in VETH_SETUPS and mtu > VETH_NATIVE_XDP_MAX_MTU:
        key, value = method.native_xdp_when or ("", "")
        return (f"{method.name} in {key} {value} attaches XDP in the veth's driver, which takes an MTU of at most "
                f"{VETH_NATIVE_XDP_MAX_MTU:,} (the kernel refuses it above: \"Peer MTU is too large to set XDP\"), "
                f"and the trace's largest frame ({max_frame:,} bytes) needs a wire MTU of {mtu:,}")
    return None
