"""The short path (issue 41 item 7): `idsbench run --trace my.pcap [--rules my.rules …] [--engine E] [--rate R]
[--duet-rules A.rules B.rules]` makes the spec a file would hold — the same document, as TOML, written into the
campaign (`spec.toml`) and printed by `--print-spec`, so a user can keep it and edit it. A spec file stays the
main way; this module only turns flags into its document.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the tomli package
    import tomli as tomllib

from idsbench.errors import SpecError

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(x|pps|mbps)\s*$", re.IGNORECASE)
_KIND = {"x": "multiplier", "pps": "pps", "mbps": "mbps"}
RATE_FIX = ('give --rate recorded (the capture\'s own timing), topspeed, a multiple of it (2x), packets per second '
            '(20000pps) or megabits per second (100mbps).')
TomlValue = str | int | float | bool | list["TomlValue"] | dict[str, "TomlValue"]


@dataclass(frozen=True)
class QuickFlags:
    """The short path's flags as given (paths as typed; made absolute in the spec)."""

    traces: tuple[str, ...]
    rules: tuple[str, ...] = ()
    engines: tuple[str, ...] = ()
    rate: str | None = None
    duet_rules: tuple[str, str] | None = None
    samples: int | None = None


def parse_rate(text: str) -> str | dict[str, TomlValue]:
    """--rate as the spec writes it: "recorded", "topspeed", { multiplier = 2.0 }, { pps = 20000.0 } …"""
    word = text.strip().lower()
    if word in ("recorded", "topspeed"):
        return word
    kind, _, value = word.partition("=")  # the results' label form: pps=20000, multiplier=2
    if value and kind in ("multiplier", "pps", "mbps"):
        try:
            return {kind: float(value)}
        except ValueError:
            pass
    match = _RATE.match(word)
    if match is None or float(match.group(1)) <= 0:
        raise SpecError(f"--rate {text!r} is not a rate.", fix=RATE_FIX)
    return {_KIND[match.group(2).lower()]: float(match.group(1))}


def _name(traces: Sequence[str]) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(traces[0]).stem).strip("-._") or "trace"
    return stem if len(traces) == 1 else f"{stem}-and-{len(traces) - 1}-more"


def _absolute(ref: str, cwd: Path) -> str:
    if ref.startswith("builtin:"):
        return ref
    path = Path(ref).expanduser()
    return str(path if path.is_absolute() else (cwd / path).resolve())


def _ruleset_names(a: str, b: str) -> tuple[str, str]:
    """The two sides' ruleset names: their files' stems (a and b when the stems are the same)."""
    na, nb = Path(a).stem or "a", Path(b).stem or "b"
    return (na, nb) if na != nb else (f"a-{na}", f"b-{nb}")


def spec_doc(flags: QuickFlags, cwd: Path) -> dict[str, TomlValue]:
    """The spec document the flags make (validated by `spec.spec_from_dict` like any spec file's)."""
    if not flags.traces:
        raise SpecError("the short path needs a capture: --trace PCAP.", fix="give --trace my.pcap, or a spec file.")
    if flags.duet_rules is not None and flags.rules:
        raise SpecError("--duet-rules gives each side of a duet its rules; --rules gives one ruleset to every case: "
                        "give one of them.",
                        fix="drop --rules (put the common rules in both --duet-rules files), or drop --duet-rules.")
    doc: dict[str, TomlValue] = {"name": _name(flags.traces)}
    if flags.samples is not None:
        doc["samples"] = flags.samples
    traffic: dict[str, TomlValue] = {"traces": [_absolute(t, cwd) for t in flags.traces]}
    if flags.rate is not None:
        traffic["rate"] = parse_rate(flags.rate)
    sensor: dict[str, TomlValue] = {}
    if flags.engines:
        sensor["engine"] = list(flags.engines)
    if flags.duet_rules is not None:
        doc["mode"] = "duet"
        a, b = (_absolute(r, cwd) for r in flags.duet_rules)
        na, nb = _ruleset_names(a, b)
        sensor["rules"] = {na: [a], nb: [b]}
    else:
        sensor["rules"] = [_absolute(r, cwd) for r in flags.rules] if flags.rules else ["builtin:events"]
    doc["traffic"] = traffic
    doc["sensor"] = sensor
    return doc


def _scalar(value: TomlValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    return "{ " + ", ".join(f"{_key(k)} = {_scalar(v)}" for k, v in value.items()) + " }"


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _scalar(key)


def to_toml(doc: Mapping[str, TomlValue], comment: str = "") -> str:
    """The document as TOML (top-level tables as sections, anything deeper inline); parsed back to check."""
    head = "".join(f"# {line}\n" for line in comment.splitlines())
    plain = [f"{_key(k)} = {_scalar(v)}\n" for k, v in doc.items() if not isinstance(v, dict)]
    sections = [f"\n[{_key(k)}]\n" + "".join(f"{_key(kk)} = {_scalar(vv)}\n" for kk, vv in v.items())
                for k, v in doc.items() if isinstance(v, dict)]
    text = head + "".join(plain) + "".join(sections)
    if tomllib.loads(text) != doc:
        raise AssertionError(f"the spec's TOML does not read back as the spec:\n{text}")
    return text
