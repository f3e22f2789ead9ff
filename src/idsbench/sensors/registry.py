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


def _is_build(name: str) -> bool:
    """`suricata@8.0.6`, `suricata+profiling`: a source build or a run option (sensors/suricata/build.py)."""
    return name not in _ENGINES and ("@" in name or "+" in name)


def _build(name: str) -> SensorEngine:
    from idsbench.sensors.suricata.build import parse_engine
    from idsbench.sensors.suricata.built import BuiltSuricata

    return BuiltSuricata(parse_engine(name))


def check_name(name: str) -> str:
    if _is_build(name):
        from idsbench.sensors.suricata.build import parse_engine

        parse_engine(name)  # SpecError for an unknown base or option
        return name
    if name not in _ENGINES:
        raise SpecError(f"sensor.engine {name!r} is not a known engine.",
                        fix=f"use one of {', '.join(names())}, or a Suricata build such as 'suricata@8.0.6' "
                            "or 'suricata@8.0.6+profiling'.")
    return name


def engine(name: str) -> SensorEngine:
    """A new adapter for engine `name` (SpecError naming the choices when unknown)."""
    if _is_build(check_name(name)):
        return _build(name)
    return _ENGINES[name]()
