"""Sensor engines by name: `spec.sensor.engine` picks one. A new engine registers a factory here
(or from its own module with `register`) — runner, preflight and setups need no change."""

from __future__ import annotations

from collections.abc import Callable

from idsbench.errors import SpecError
from idsbench.sensors.base import SensorEngine

EngineFactory = Callable[[], SensorEngine]


def _suricata() -> SensorEngine:
    from idsbench.sensors.suricata import Suricata

    return Suricata()


def _snort() -> SensorEngine:
    from idsbench.sensors.snort import Snort

    return Snort()


def _capture() -> SensorEngine:
    from idsbench.sensors.capture import Capture

    return Capture()


_ENGINES: dict[str, EngineFactory] = {"suricata": _suricata, "snort": _snort, "capture": _capture}


def register(name: str, factory: EngineFactory) -> None:
    _ENGINES[name] = factory


def unregister(name: str) -> None:
    _ENGINES.pop(name, None)


def names() -> list[str]:
    return sorted(_ENGINES)


def check_name(name: str) -> str:
    if name not in _ENGINES:
        raise SpecError(f"sensor.engine {name!r} is not a known engine.",
                        fix=f"use one of {', '.join(names())}.")
    return name


def engine(name: str) -> SensorEngine:
    """A new adapter for engine `name` (SpecError naming the choices when unknown)."""
    return _ENGINES[check_name(name)]()
