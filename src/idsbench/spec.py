"""The experiment spec: typed, frozen, loaded from TOML and validated before anything starts.

List-valued axes (traces, replayers, rate, setup kinds, cpus, memory) expand to their cartesian
product in `plan.py`. Unknown keys are errors (a typo must not silently fall back to a default).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from idsbench.errors import InputError, SpecError

SETUP_KINDS = ("baremetal", "container", "container-vtap", "vm")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """'512m', '2g', '1.5GiB', 1048576 -> bytes."""
    if isinstance(text, int):
        return text
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"{text!r} is not a size; write e.g. '512m' or '2g'")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** " kmgt".index(unit or " "))


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Rate(_Frozen):
    """How fast each replayer sends: as recorded, as fast as possible, or a fixed rate."""

    kind: Literal["recorded", "topspeed", "multiplier", "mbps", "pps"]
    value: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_toml(cls, data: Any) -> Any:
        if isinstance(data, str):
            if data not in ("recorded", "topspeed"):
                raise ValueError(
                    f"{data!r} is not a rate; use \"recorded\", \"topspeed\", {{ multiplier = 2.0 }}, "
                    "{ mbps = 100 } or { pps = 20000 }"
                )
            return {"kind": data}
        if isinstance(data, dict) and "kind" not in data:
            if len(data) != 1 or next(iter(data)) not in ("multiplier", "mbps", "pps"):
                raise ValueError(
                    f"{data!r} is not a rate; a fixed rate is one of {{ multiplier = X }}, "
                    "{ mbps = X } or { pps = X }"
                )
            (kind, value), = data.items()
            return {"kind": kind, "value": value}
        return data

    @model_validator(mode="after")
    def _positive(self) -> "Rate":
        if self.kind in ("multiplier", "mbps", "pps") and (self.value is None or self.value <= 0):
            raise ValueError(f"rate {self.kind} must be a positive number, got {self.value!r}")
        return self

    @property
    def label(self) -> str:
        if self.value is None:
            return self.kind
        return f"{self.kind}={self.value:g}"


class Traffic(_Frozen):
    traces: list[str] = Field(default_factory=lambda: ["builtin:mixed"], min_length=1)
    replayers: list[Annotated[int, Field(ge=1, le=64)]] = Field(default_factory=lambda: [1], min_length=1)
    rate: list[Rate] = Field(default_factory=lambda: [Rate(kind="recorded")], min_length=1)
    loops: int = Field(1, ge=1)
    duration_s: float | None = Field(None, gt=0)  # loop the trace until this many seconds passed
    flows: Literal["distinct", "identical"] = "distinct"  # each replayer its own flows, or copies

    @model_validator(mode="after")
    def _loops_or_duration(self) -> "Traffic":
        if self.duration_s is not None and self.loops != 1:
            raise ValueError("give either loops or duration_s, not both")
        return self

    @field_validator("traces", "replayers", "rate", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]


class Sensor(_Frozen):
    engine: Literal["suricata"] = "suricata"
    rules: list[str] = Field(default_factory=lambda: ["builtin:events"])
    set: dict[str, Union[str, int, float, bool]] = Field(default_factory=dict)
    stats_interval_s: int = Field(1, ge=1, le=60)
    ready_timeout_s: float = Field(120.0, gt=0)

    @field_validator("rules", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    def overrides(self) -> dict[str, str]:
        """`set` as suricata --set strings (booleans as yes/no)."""
        out = {}
        for key, value in self.set.items():
            out[key] = ("yes" if value else "no") if isinstance(value, bool) else str(value)
        return out


class Setup(_Frozen):
    kinds: list[Literal[SETUP_KINDS]] = Field(default_factory=lambda: ["baremetal"], min_length=1)  # type: ignore[valid-type]
    cpus: list[float | None] = Field(default_factory=lambda: [None])
    memory: list[str | None] = Field(default_factory=lambda: [None])
    cpuset: list[int] | None = None
    runtime: Literal["auto", "podman", "docker"] = "auto"  # container setups; auto: podman if usable
    swappiness: int | None = Field(None, ge=0, le=100)  # the sensor cgroup's memory.swappiness
    vcpus: int | None = Field(None, ge=1, le=256)  # vm: guest vCPUs (default: cpus rounded up)
    accel: Literal["auto", "kvm", "tcg"] = "auto"  # vm: auto = KVM if it boots the guest, else TCG

    @field_validator("kinds", "cpus", "memory", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @field_validator("cpus")
    @classmethod
    def _cpus_positive(cls, v: list[float | None]) -> list[float | None]:
        for cpus in v:
            if cpus is not None and cpus <= 0:
                raise ValueError(f"cpus must be > 0 (a fraction of one core, e.g. 0.5), got {cpus}")
        return v

    @field_validator("memory")
    @classmethod
    def _memory_size(cls, v: list[str | None]) -> list[str | None]:
        for mem in v:
            if mem is not None and parse_size(mem) < 16 * 1024**2:
                raise ValueError(f"memory {mem!r} is below 16 MiB; write e.g. '512m' or '2g'")
        return v


class Timing(_Frozen):
    settle_s: float = Field(3.0, ge=0)
    replay_timeout_s: float = Field(3600.0, gt=0)
    stop_timeout_s: float = Field(60.0, gt=0)


class Spec(_Frozen):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    samples: int = Field(3, ge=1, le=1000)
    traffic: Traffic = Field(default_factory=Traffic)
    sensor: Sensor = Field(default_factory=Sensor)
    setup: Setup = Field(default_factory=Setup)
    timing: Timing = Field(default_factory=Timing)
    base_dir: Path = Field(default=Path("."), exclude=True)

    def resolve_path(self, ref: str) -> Path:
        """A file reference from the spec, relative to the spec file's directory."""
        path = Path(ref).expanduser()
        return path if path.is_absolute() else (self.base_dir / path)


def _location(err: dict) -> str:
    return ".".join(str(p) for p in err["loc"] if not str(p).startswith(("function-", "list[")))


def spec_from_dict(data: dict, *, source: str = "spec", base_dir: Path = Path(".")) -> Spec:
    try:
        return Spec.model_validate({**data, "base_dir": base_dir})
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = _location(err) or "(top level)"
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key (check the spelling; see examples/quick.toml for the keys)"
            lines.append(f"{where}: {msg}")
        raise SpecError(
            f"{source} is not a valid idsbench spec: " + "; ".join(lines) + ".",
            fix="correct those keys; examples/quick.toml shows every section.",
        ) from exc


def load_spec(path: str | Path) -> Spec:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError as exc:
        raise InputError(f"spec file {path} does not exist.", fix="give the path of a TOML spec, "
                         "e.g. examples/quick.toml.") from exc
    except OSError as exc:
        raise InputError(f"spec file {path} cannot be read: {exc}.") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path} is not valid TOML: {exc}.", fix="fix the syntax at that line.") from exc
    return spec_from_dict(data, source=str(path), base_dir=path.resolve().parent)
