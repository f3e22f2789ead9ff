"""The common counter schema every engine maps its own counters onto: a leaf module (standard
library only), so both the results schema (`store.schema`) and the sensors use it without either
importing the other. `idsbench.sensors.base` re-exports `Counters`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class Counters:
    """Cumulative sensor counters. Every field is an int; a counter the engine omits is 0.

    `captured_pkts` INCLUDES `dropped_pkts` (Suricata's capture.kernel_packets semantics): what
    the capture socket received; `decoded_pkts` what the engine then processed.
    """

    captured_pkts: int = 0
    dropped_pkts: int = 0
    decoded_pkts: int = 0
    decoded_bytes: int = 0
    alerts: int = 0
    flows: int = 0
    invalid_pkts: int = 0
    decoder_events: int = 0
    # of dropped_pkts, those the sensor interface counted as its rx_dropped too (AF_XDP in native XDP mode:
    # a redirect that finds the socket's ring full); the waterfall books them once, at the capture
    dropped_at_nic_pkts: int = 0
    # packets of bypassed flows (idsbench.bypass) the sensor did not inspect: dropped by design before the
    # capture (the XDP or eBPF filter), plus those captured and decoded, then skipped (bypassed_local_pkts)
    bypassed_pkts: int = 0
    bypassed_local_pkts: int = 0

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> Counters:
        """Build from a dict of field -> number; unknown keys are ignored, missing ones are 0."""
        return cls(**{n: _as_int(values.get(n, 0)) for n in cls.field_names()})

    def max_with(self, other: Counters) -> Counters:
        """Field-wise maximum (cumulative counters from two sources of the same run)."""
        return Counters(**{n: max(getattr(self, n), getattr(other, n)) for n in self.field_names()})

    def minus(self, earlier: Counters) -> Counters:
        """Field-wise difference: what happened between two readings of one running sensor."""
        return Counters(**{n: getattr(self, n) - getattr(earlier, n) for n in self.field_names()})

    @property
    def unprocessed_pkts(self) -> int:
        """Captured but neither processed nor counted as dropped (still in the capture ring)."""
        return self.captured_pkts - self.decoded_pkts - self.dropped_pkts


def _as_int(value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return 0
