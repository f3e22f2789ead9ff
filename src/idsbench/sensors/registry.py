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
    """`suricata@8.0.6`, `suricata+profiling`, `snort+profiling`: a source build or a run option."""
    return name not in _ENGINES and ("@" in name or "+" in name)


def _base(name: str) -> str:
    return name.split("+", 1)[0].split("@", 1)[0]


def _build(name: str) -> SensorEngine:
    if _base(name) == "snort":
        from idsbench.sensors.snort import Snort
        from idsbench.sensors.snort.config import parse_engine_options

        return Snort(profiling="profiling" in parse_engine_options(name))
    from idsbench.sensors.suricata.build import parse_engine
    from idsbench.sensors.suricata.built import BuiltSuricata

    return BuiltSuricata(parse_engine(name))


def check_name(name: str) -> str:
    if _is_build(name) and _base(name) in _ENGINES:
        base = _base(name)
        if base == "snort":
            from idsbench.sensors.snort.config import parse_engine_options

            parse_engine_options(name)  # SpecError for a version or an unknown option
            return name
        if base != "suricata":
            raise SpecError(f"sensor.engine {name!r}: the {base} engine takes no build or option.",
                            fix=f"write {base!r}; rule profiling is 'snort+profiling' or 'suricata@8.0.6+profiling'.")
        from idsbench.sensors.suricata.build import parse_engine

        parse_engine(name)  # SpecError for an unknown base or option
        return name
    if name not in _ENGINES:
        raise SpecError(f"sensor.engine {name!r} is not a known engine.",
                        fix=f"use one of {', '.join(names())}, a Suricata build such as 'suricata@8.0.6' "
                            "or 'suricata@8.0.6+profiling', or 'snort+profiling'.")
    return name


def engine(name: str) -> SensorEngine:
    """A new adapter for engine `name` (SpecError naming the choices when unknown)."""
    if _is_build(check_name(name)):
        return _build(name)
    return _ENGINES[name]()
