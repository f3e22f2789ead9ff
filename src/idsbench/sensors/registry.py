"""Sensor engines by name: `spec.sensor.engine` picks one. A new engine registers its adapter class here
(or from its own module with `register`) — runner, preflight and setups need no change.

An adapter class declares how its engine reads the wire (`capture_methods`, idsbench.capture), read here
by name without making an adapter (`capture_methods`, `capture_method`): a build (`suricata@8.0.6`,
`snort+profiling`) has its engine's methods.
"""

from __future__ import annotations

from collections.abc import Callable

from idsbench.capture import CaptureCatalogue, CaptureMethod
from idsbench.errors import SpecError
from idsbench.sensors.base import SensorEngine

EngineClass = Callable[[], type[SensorEngine]]  # imports the adapter's package when called


def _suricata() -> type[SensorEngine]:
    from idsbench.sensors.suricata import Suricata

    return Suricata


def _snort() -> type[SensorEngine]:
    from idsbench.sensors.snort import Snort

    return Snort


def _nodetect() -> type[SensorEngine]:
    from idsbench.sensors.nodetect import NoDetect

    return NoDetect


_ENGINES: dict[str, EngineClass] = {"suricata": _suricata, "snort": _snort, "nodetect": _nodetect}


def register(name: str, adapter: EngineClass) -> None:
    _ENGINES[name] = adapter


def names() -> list[str]:
    return sorted(_ENGINES)


def family(name: str) -> str:
    """The engine a name runs: `suricata@8.0.6+profiling` -> `suricata`, `snort+profiling` -> `snort`."""
    return name.split("+", 1)[0].split("@", 1)[0]


def _is_build(name: str) -> bool:
    """`suricata@8.0.6`, `suricata+profiling`, `snort+profiling`: a source build or a run option."""
    return name not in _ENGINES and ("@" in name or "+" in name)


def _build(name: str) -> SensorEngine:
    if family(name) == "snort":
        from idsbench.sensors.snort import Snort
        from idsbench.sensors.snort.config import parse_engine_options

        return Snort(profiling="profiling" in parse_engine_options(name))
    from idsbench.sensors.suricata.build import parse_engine
    from idsbench.sensors.suricata.built import BuiltSuricata

    return BuiltSuricata(parse_engine(name))


def check_name(name: str) -> str:
    if _is_build(name) and family(name) in _ENGINES:
        base = family(name)
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
    return _ENGINES[name]()()


def capture_methods(name: str) -> CaptureCatalogue:
    """How engine `name` (or a build of it) reads the wire, as its adapter declares it; SpecError when unknown."""
    check_name(name)
    return _ENGINES[family(name)]().capture_methods


def capture_method(name: str, capture: str | None) -> CaptureMethod:
    """The method a case of engine `name` runs: `capture` (its `sensor.capture`), None: the engine's default."""
    return capture_methods(name).method(capture)
