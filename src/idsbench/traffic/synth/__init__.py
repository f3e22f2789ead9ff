"""Deterministic traffic synthesizer: named profiles of complete, checksum-valid conversations.

`synthesize(profile, out, packets=..., duration_s=..., flows=..., rate_pps=..., seed=...,
marker_rate=..., client_net=..., server_net=...) -> SynthResult`. Markers embedded in a share of
the flows are detected by `sensors/rules/markers.rules`; `SynthResult.markers` is the exact number
of alerts those rules raise on the capture. The generator (and numpy) is imported on first use, so
`PROFILES` is cheap to import (the CLI's argument choices).
"""

from typing import TYPE_CHECKING, Any

from idsbench.traffic.synth.profiles import PROFILES, Profile

if TYPE_CHECKING:  # the type checker sees the real names; at run time they load on first use
    from idsbench.traffic.synth.generate import (
        GENERATOR_VERSION,
        SynthParams,
        SynthResult,
        make_params,
        synthesize,
    )

_GENERATE = {"GENERATOR_VERSION", "SynthParams", "SynthResult", "make_params", "synthesize"}


def __getattr__(name: str) -> Any:
    if name in _GENERATE:
        from idsbench.traffic.synth import generate

        return getattr(generate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["GENERATOR_VERSION", "PROFILES", "Profile", "SynthParams", "SynthResult", "make_params", "synthesize"]
