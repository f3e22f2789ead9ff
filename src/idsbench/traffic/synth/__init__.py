"""Deterministic traffic synthesizer: named profiles of complete, checksum-valid conversations.

`synthesize(profile, out, packets=..., duration_s=..., flows=..., rate_pps=..., seed=...,
marker_rate=..., client_net=..., server_net=...) -> SynthResult`. Markers embedded in a share of
the flows are detected by `sensors/rules/markers.rules`; `SynthResult.markers` is the exact number
of alerts those rules raise on the capture.
"""

from idsbench.traffic.synth.generate import (
    GENERATOR_VERSION,
    SynthParams,
    SynthResult,
    make_params,
    synthesize,
)
from idsbench.traffic.synth.profiles import PROFILES, Profile

__all__ = ["GENERATOR_VERSION", "PROFILES", "Profile", "SynthParams", "SynthResult", "make_params", "synthesize"]
