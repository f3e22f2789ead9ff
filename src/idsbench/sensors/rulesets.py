"""Which rules an engine loads: the share of each rule set, and the rule ids, engine-neutral.

An engine that cannot take a rule file as it is (Snort 3 and a Suricata-flavoured file) writes the
file it does load beside a sidecar `<file>.load.json` (`write_sidecar`): where it came from, how many
rules the source had and how many were loaded, and why the others were not. A file without a
sidecar is loaded as it is, whole: Suricata's `-T` refuses a config in which any rule fails, so a
campaign never runs with part of a file. `rule_loads(paths)` reads either, so preflight records the
share per engine (the campaign file's `inputs.rule_load`, the sample summary) and analysis can compare
alerts between engines on the rules both loaded (`analysis.engines`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from idsbench.errors import InputError, SpecError
from idsbench.store.atomic import write_json

SIDECAR_SUFFIX = ".load.json"
_SID = re.compile(r"(?:^|[;(\s])sid\s*:\s*(\d+)\s*;")
_GID = re.compile(r"(?:^|[;(\s])gid\s*:\s*(\d+)\s*;")


@dataclass(frozen=True)
class RuleSetLoad:
    """One rule file as an engine loads it."""

    source: str                 # what the spec named: a path or builtin:…
    path: Path                  # the file the engine reads
    rules: int                  # active rules in the source
    loaded: int                 # rules the engine loads
    method: str                 # "as-is" | "converted" | "builtin"
    sids: frozenset[int] = frozenset()       # text-rule ids (gid 1) loaded
    reasons: tuple[tuple[str, int], ...] = ()  # why rules were not loaded, most frequent first
    event_filters: tuple[dict[str, int | str], ...] = field(default=(), repr=False)  # Snort thresholds

    @property
    def share(self) -> float:
        return self.loaded / self.rules if self.rules else 1.0

    def summary(self) -> dict[str, object]:
        """The record kept in the campaign file and the sample summaries (without the ids)."""
        return {"source": self.source, "path": str(self.path), "rules": self.rules, "loaded": self.loaded,
                "share": round(self.share, 6), "method": self.method,
                "reasons": [[r, n] for r, n in self.reasons[:20]]}


def markers_rules() -> Path:
    """The packaged marker rules (builtin:markers): one rule per marker of the generated traces."""
    path = Path(__file__).resolve().parent / "rules" / "markers.rules"
    if not path.is_file():
        raise InputError(f"The packaged marker rules {path} are missing.", fix="Reinstall idsbench (pip install -e .).")
    return path


def rule_files(ref: str) -> list[Path]:
    """The files of a rule reference every engine reads alike: builtin:markers, a rule file, or a
    directory of *.rules (sorted). builtin:events is each engine's own and not handled here."""
    if ref == "builtin:markers":
        return [markers_rules()]
    if ref.startswith("builtin:"):
        raise SpecError(f"Unknown rule set {ref!r}.",
                        fix="Use builtin:events, builtin:markers or a path to a .rules file.")
    path = Path(ref).expanduser()
    if path.is_dir():
        found = sorted(path.glob("*.rules"))
        if not found:
            raise InputError(f"Rule directory {path} contains no *.rules files.")
        return [f.resolve() for f in found]
    if path.is_file():
        return [path.resolve()]
    raise InputError(f"Rule file {path} does not exist.", fix="Fix the path in the spec's rules list.")


def active_rules(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def text_rule_sids(lines: Iterable[str]) -> frozenset[int]:
    """sids of the rules of generator 1 (text rules) among `lines`."""
    out: set[int] = set()
    for line in lines:
        gid = _GID.search(line)
        if gid is not None and int(gid.group(1)) != 1:
            continue
        sid = _SID.search(line)
        if sid is not None:
            out.add(int(sid.group(1)))
    return frozenset(out)


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def write_sidecar(load: RuleSetLoad) -> None:
    doc = {**load.summary(), "reasons": [[r, n] for r, n in load.reasons], "sids": sorted(load.sids),
           "event_filters": list(load.event_filters)}
    write_json(sidecar_path(load.path), doc)


def _reasons(value: object) -> tuple[tuple[str, int], ...]:
    out = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], int):
            out.append((item[0], item[1]))
    return tuple(out)


def read_sidecar(path: Path) -> RuleSetLoad | None:
    """The sidecar of `path`, or None when there is none (or it is unreadable: then as-is)."""
    try:
        doc = json.loads(sidecar_path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    try:
        return RuleSetLoad(
            source=str(doc["source"]), path=path, rules=int(doc["rules"]), loaded=int(doc["loaded"]),
            method=str(doc["method"]), sids=frozenset(int(s) for s in doc.get("sids", [])),
            reasons=_reasons(doc.get("reasons")),
            event_filters=tuple(f for f in doc.get("event_filters", []) if isinstance(f, dict)))
    except (KeyError, TypeError, ValueError):
        return None


def as_is(path: Path, source: str | None = None, method: str = "as-is") -> RuleSetLoad:
    """A rule file the engine loads whole."""
    lines = active_rules(path.read_text(errors="replace"))
    return RuleSetLoad(source or str(path), path, len(lines), len(lines), method, text_rule_sids(lines))


def rule_loads(paths: Iterable[Path], sources: Mapping[Path, str] | None = None) -> tuple[RuleSetLoad, ...]:
    """Every rule file an engine was given: its sidecar, else the file as it is."""
    out = []
    for path in paths:
        load = read_sidecar(path)
        out.append(load if load is not None else as_is(path, (sources or {}).get(path)))
    return tuple(out)


def totals(loads: Iterable[RuleSetLoad]) -> tuple[int, int]:
    """(active rules in the sources, rules loaded) over every set."""
    rules = loaded = 0
    for load in loads:
        rules, loaded = rules + load.rules, loaded + load.loaded
    return rules, loaded
