"""Engine-neutral sensor contract: the counter schema and the adapter protocol."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence


@dataclass(frozen=True)
class Counters:
    """Cumulative sensor counters. Every field is an int; a counter the engine omits is 0.

    `captured_pkts` INCLUDES `dropped_pkts` (Suricata's capture.kernel_packets semantics).
    """

    captured_pkts: int = 0
    dropped_pkts: int = 0
    decoded_pkts: int = 0
    decoded_bytes: int = 0
    alerts: int = 0
    flows: int = 0
    invalid_pkts: int = 0
    decoder_events: int = 0

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> "Counters":
        """Build from a dict of field -> number; unknown keys are ignored, missing ones are 0."""
        return cls(**{n: int(values.get(n, 0) or 0) for n in cls.field_names()})  # type: ignore[arg-type]

    def max_with(self, other: "Counters") -> "Counters":
        """Field-wise maximum (cumulative counters from two sources of the same run)."""
        return Counters(**{n: max(getattr(self, n), getattr(other, n)) for n in self.field_names()})


@dataclass(frozen=True)
class CounterPoint:
    """One stats snapshot: wall-clock time, sensor uptime and the counters at that time."""

    t_unix: float
    uptime_s: float
    counters: Counters


class SensorRun(Protocol):
    """One prepared sensor process (config rendered, argv ready) and its artifacts."""

    argv: list[str]
    log_dir: Path
    eve_path: Path
    log_path: Path

    def wait_ready(self, poll: Callable[[], int | None], timeout_s: float) -> float: ...

    def errors(self) -> list[str]: ...

    def counter_series(self) -> list[CounterPoint]: ...

    def final_counters(self) -> Counters: ...

    def alert_count(self) -> int: ...


class SensorAdapter(Protocol):
    """What an engine adapter (Suricata, later Snort/Zeek) provides to the runner."""

    name: str

    def available(self) -> bool: ...

    def version(self) -> str: ...

    def build_info(self) -> dict[str, object]: ...

    def resolve_rules(self, refs: Sequence[str]) -> list[Path]: ...

    def config_test(
        self, rules: Sequence[Path], overrides: Mapping[str, str], workdir: Path
    ) -> None: ...

    def prepare(
        self,
        run_dir: Path,
        interface: str,
        rules: Sequence[Path],
        overrides: Mapping[str, str],
        stats_interval_s: int,
        threads: int | None = None,
        mtu: int | None = None,
    ) -> SensorRun: ...
