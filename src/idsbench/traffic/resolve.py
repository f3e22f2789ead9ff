"""Turn a trace reference from a spec or the CLI into a capture file on disk.

`builtin:<profile>` is synthesized with the profile's defaults and cached under
`<cache_dir>/synth/` (keyed by profile + parameters + generator version); anything else is a path
to an existing, readable pcap/pcapng file.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

from idsbench.errors import InputError, SpecError
from idsbench.traffic.pcapfmt import detect_format
from idsbench.traffic.synth import PROFILES, make_params, synthesize

BUILTIN_PREFIX = "builtin:"
BUILTIN_SEED = 1


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


def builtin_path(profile: str, cache_dir: Path | str) -> Path:
    """Where the builtin trace of `profile` is (or will be) cached."""
    try:
        params = make_params(profile, seed=BUILTIN_SEED)
    except SpecError as exc:
        raise InputError(f"unknown generated trace {BUILTIN_PREFIX}{profile}.",
                         fix=f"use one of: {', '.join(BUILTIN_PREFIX + p for p in PROFILES)}.") from exc
    return Path(cache_dir) / "synth" / f"{profile}-{params.key()}.pcap"


def _builtin(profile: str, cache_dir: Path) -> Path:
    out = builtin_path(profile, cache_dir)
    meta = out.with_name(out.name + ".json")
    if out.exists() and meta.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent campaigns generate it once
        if not (out.exists() and meta.exists()):
            synthesize(profile, out, params=make_params(profile, seed=BUILTIN_SEED))
    return out


def synth_metadata(path: Path | str) -> dict | None:
    """The generator's record for a synthesized capture (packets, flows, expected marker alerts)."""
    meta = Path(str(path) + ".json")
    try:
        return json.loads(meta.read_text())
    except (OSError, ValueError):
        return None
