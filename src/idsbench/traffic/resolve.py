"""Turn a trace reference from a spec or the CLI into a capture file on disk.

`builtin:<profile>` is synthesized with the profile's defaults, `builtin:<profile>?packets=5000&
rate_pps=1000` with some of them changed (keys: packets, duration_s, rate_pps, flows, seed,
marker_rate), and cached under `<cache_dir>/synth/` (keyed by profile + parameters + generator
version); anything else is a path to an existing, readable pcap/pcapng file.
"""

from __future__ import annotations

import fcntl
from pathlib import Path
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict

from idsbench.errors import InputError, SpecError
from idsbench.traffic.protocols import detect_format
from idsbench.traffic.synth import PROFILES, SynthParams, make_params, synthesize

BUILTIN_PREFIX = "builtin:"
BUILTIN_SEED = 1
BUILTIN_KEYS: dict[str, type[int] | type[float]] = {
    "packets": int, "duration_s": float, "rate_pps": float, "flows": int, "seed": int, "marker_rate": float}


def resolve_trace(ref: str, cache_dir: Path | str) -> Path:
    """Path of the capture `ref` names; builtin traces are generated on first use."""
    if ref.startswith(BUILTIN_PREFIX):
        return _builtin(ref[len(BUILTIN_PREFIX):], Path(cache_dir))
    return check_capture(ref)


def check_capture(ref: str | Path) -> Path:
    path = Path(ref).expanduser()
    fix = (f"give an existing pcap/pcapng file, or one of the generated traces: "
           f"{', '.join(BUILTIN_PREFIX + p for p in PROFILES)}.")
    if not path.exists():
        raise InputError(f"trace {ref} does not exist.", fix=fix)
    if not path.is_file():
        raise InputError(f"trace {ref} is not a regular file.", fix=fix)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InputError(f"trace {ref} cannot be read ({exc.strerror}).", fix="fix its permissions.") from exc
    if detect_format(head) is None:
        raise InputError(f"trace {ref} is not a pcap or pcapng capture (magic {head.hex() or 'empty'}).",
                         fix="convert it with `editcap -F pcap IN OUT`, or " + fix)
    return path


def builtin_params(name: str) -> SynthParams:
    """`profile` or `profile?key=value&...` -> SynthParams (InputError naming the reference)."""
    profile, _, query = name.partition("?")
    ref = BUILTIN_PREFIX + name
    if profile not in PROFILES:
        raise InputError(f"unknown generated trace {ref}.",
                         fix=f"use one of: {', '.join(BUILTIN_PREFIX + p for p in PROFILES)}.")
    ints: dict[str, int] = {"seed": BUILTIN_SEED}
    floats: dict[str, float] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
        if key not in BUILTIN_KEYS:
            raise InputError(f"{ref}: unknown parameter {key!r}.",
                             fix=f"use some of: {', '.join(BUILTIN_KEYS)}.")
        try:
            if BUILTIN_KEYS[key] is int:
                ints[key] = int(value)
            else:
                floats[key] = float(value)
        except ValueError:
            raise InputError(f"{ref}: {key}={value!r} is not a number.", fix="give a number.") from None
    try:
        return make_params(profile, packets=ints.get("packets"), duration_s=floats.get("duration_s"),
                           flows=ints.get("flows"), rate_pps=floats.get("rate_pps"), seed=ints["seed"],
                           marker_rate=floats.get("marker_rate"))
    except SpecError as exc:
        raise InputError(f"{ref}: {exc.message}", fix=exc.fix) from exc


def builtin_path(profile: str, cache_dir: Path | str) -> Path:
    """Where the builtin trace `profile` (optionally `profile?key=value&...`) is cached."""
    params = builtin_params(profile)
    return Path(cache_dir) / "synth" / f"{params.profile}-{params.key()}.pcap"


def _builtin(profile: str, cache_dir: Path) -> Path:
    params = builtin_params(profile)
    out = builtin_path(profile, cache_dir)
    meta = out.with_name(out.name + ".json")
    if out.exists() and meta.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent campaigns generate it once
        if not (out.exists() and meta.exists()):
            synthesize(params.profile, out, params=params)
    return out


class SynthMetadata(BaseModel):
    """The generator's record beside a synthesized capture (`SynthResult.to_dict`): what readers use of it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    packets: int = 0
    flows: int = 0
    sha256: str = ""
    markers: int | None = None   # marker alerts builtin:markers raises on one copy


def synth_metadata(path: Path | str) -> SynthMetadata | None:
    """The generator's record for a synthesized capture (packets, flows, expected marker alerts)."""
    meta = Path(str(path) + ".json")
    try:
        return SynthMetadata.model_validate_json(meta.read_text())
    except (OSError, ValueError):  # none, or not the generator's (a ValidationError is a ValueError)
        return None
