"""Engine-neutral sensor contract: the adapter protocol (the common counter schema, `Counters`, is
`idsbench.counters`, re-exported here).

The runner, preflight and setups talk to a `SensorEngine` only (picked by name from
`sensors.registry`); nothing outside an engine's own package knows its binary, config or logs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from idsbench.capture import CaptureCatalogue, Scalar
from idsbench.counters import Counters as Counters  # re-exported: the schema lives in the leaf idsbench.counters
from idsbench.errors import EnvironmentMissing


@dataclass(frozen=True)
class CounterPoint:
    """One stats snapshot: wall-clock time, sensor uptime and the counters at that time."""

    t_unix: float
    uptime_s: float
    counters: Counters


@dataclass(frozen=True)
class EventLogIntegrity:
    """How whole the engine's event log was when read (a cut file may hold short counters)."""

    path: Path
    lines: int = 0
    corrupt_lines: int = 0
    truncated_tail: bool = False
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class SensorOptions:
    """What a campaign asks of any engine: rules (resolved paths), the user's config overrides
    (`sensor.set`, engine-specific keys), an optional config overlay file, the stats interval, how
    many worker threads to run (`threads`; None: the engine's own choice — run/facts.py sets it to
    the sensor's CPUs; an engine setting in `overrides` that names its threads wins), how it reads the
    wire (`capture`, `capture_options`) and its flow bypass (`bypass`)."""

    rules: tuple[Path, ...] = ()
    overrides: tuple[tuple[str, str], ...] = ()
    stats_interval_s: int = 1
    config_overlay: Path | None = None
    threads: int | None = None
    capture: str | None = None  # sensor.capture: the method (idsbench.capture); None: the engine's default
    capture_options: tuple[tuple[str, Scalar], ...] = ()  # the spec's options that apply to that method
    bypass: str | None = None  # sensor.bypass: the flow bypass mode (idsbench.bypass); None: off

    @property
    def override_map(self) -> dict[str, str]:
        return dict(self.overrides)


Poll = Callable[[], "int | None"]


def requirement_met(require: Callable[[], None]) -> bool:
    """`available()` of an engine whose `require()` raises EnvironmentMissing when it cannot run."""
    try:
        require()
    except EnvironmentMissing:
        return False
    return True


class SensorRun(Protocol):
    """One prepared sensor process (config rendered, argv ready) and its artifacts, all in `log_dir`."""

    argv: list[str]
    log_dir: Path

    def wait_ready(self, poll: Poll, timeout_s: float) -> float:
        """Block until the engine is capturing; seconds waited. SensorFailed (quoting its log) if
        it exits first or the timeout passes."""
        ...

    def live_counters(self) -> CounterPoint | None:
        """The newest counters the running engine has published (None before the first)."""
        ...

    def final_counters(self) -> Counters:
        """Counters after the engine exited (SensorFailed when it left none)."""
        ...

    def counter_series(self) -> list[CounterPoint]: ...

    def degraded(self) -> dict[str, int]:
        """Counters that mean the engine degraded without losing packets (memcaps, emergency
        modes, reassembly gaps), by name; from its last stats record."""
        ...

    def alerts_by_signature(self) -> dict[int, int]:
        """Alert count per signature id (sid) from the event log."""
        ...

    def errors(self) -> list[str]:
        """Error and warning lines of its log worth surfacing."""
        ...

    def integrity(self) -> EventLogIntegrity | None:
        """How whole the event log was at the last read (None when there is none)."""
        ...

    def worker_threads(self) -> int | None:
        """The packet-processing threads the engine ran, read back from its own output (None when
        it did not say: not started, or an engine that cannot tell)."""
        ...

    def capture_info(self) -> tuple[str, dict[str, Scalar], dict[str, int]]:
        """How it read the wire: the capture method (idsbench.capture), its effective options (the
        engine's defaults written out) and the method's own drop points (`<method>.<point>` -> packets)."""
        ...


class SensorEngine(Protocol):
    """What an engine adapter (Suricata, Snort, nodetect…) provides to runner and setups."""

    name: str
    # how it reads the wire: its capture methods, their options and defaults, the flow bypass it has
    # (idsbench.capture; declared in the engine's package, e.g. sensors/suricata/capture.py)
    capture_methods: CaptureCatalogue

    def available(self) -> bool: ...

    def require(self) -> None:
        """EnvironmentMissing naming what to install when the engine cannot run here."""
        ...

    def version(self) -> str: ...

    def build_info(self) -> dict[str, object]: ...

    def resolve_rules(self, refs: Sequence[str]) -> list[Path]:
        """`builtin:…` names and paths (already absolute) to rule files; InputError/SpecError."""
        ...

    def check_capture(self, method: str | None) -> None:
        """SpecError (or EnvironmentMissing) when this engine, as installed, cannot capture with `method`
        (idsbench.capture; None: its default): checked for every value of sensor.capture before any sample."""
        ...

    def config_test(self, options: SensorOptions, workdir: Path) -> None:
        """Test the config a run would use; InputError (rules), SpecError (overrides) or
        SensorFailed (anything else), each quoting the engine's own messages."""
        ...

    def prepare(self, run_dir: Path, interface: str, options: SensorOptions, *,
                mtu: int | None = None) -> SensorRun:
        """Render the run's config into run_dir; the argv is started by the setup."""
        ...

    def offline_alerts(self, pcap: Path, options: SensorOptions, workdir: Path) -> dict[int, int] | None:
        """Alerts per signature id when the engine reads `pcap` offline with these rules and config:
        the ground truth of detection. None: the engine raises no alerts (nodetect)."""
        ...

    def image_packages(self) -> tuple[str, ...]:
        """Debian packages a container/VM root filesystem needs for this engine."""
        ...

    def host_paths(self) -> tuple[Path, ...]:
        """Host paths the engine needs (read-only, same path) inside a container or VM."""
        ...
