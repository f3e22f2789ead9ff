"""The rule files a Snort run loads, made from what the spec names (docs/snort.md, "Rules").

- a path: Snort takes the file as it is when it validates whole (a Snort-flavoured set); otherwise
  both the file as it is and its conversion (snort.rules) are cut down to what `snort -T` accepts
  (snort.ruleload) and the one with more rules wins — for a Suricata-flavoured set, the conversion;
- `builtin:markers`: idsbench's marker rules (Suricata flavour) converted: all of them load;
- `builtin:events`: Suricata's event rules use decode-event / stream-event / app-layer-event, which
  Snort has no rule option for (0 of its 367 convert); Snort's own equivalent are its built-in
  decoder and inspector rules (`snort --dump-builtin-rules`: 647 stubs, gid 105-175), so that is
  what the name means for Snort.
Each result is written once per (source content, Snort build, rule variables, converter) under
`<cache>/snort/rules/<key>/`, with a sidecar (sensors.rulesets) recording the share loaded.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from idsbench.errors import InputError
from idsbench.sensors import rulesets
from idsbench.sensors.rulesets import RuleSetLoad
from idsbench.sensors.snort import log as snort_log
from idsbench.sensors.snort import rules as snort_rules
from idsbench.sensors.snort.config import SnortInstall
from idsbench.sensors.snort.ruleload import RuleLoad, make_loadable
from idsbench.sensors.snort.rules import EventFilter
from idsbench.sensors.snort.variables import Variables

ConfigTest = Callable[[Path], str]  # a rule file -> the output of `snort -T` with it
EVENTS_NOTE = ("Suricata's event rules (decode-event, stream-event, app-layer-event) have no Snort 3 "
               "equivalent; Snort's built-in decoder and inspector rules stand in")


def _converter_digest() -> str:
    h = hashlib.sha256()
    for module in (snort_rules, rulesets):
        h.update(Path(str(module.__file__)).read_bytes())
    return h.hexdigest()[:12]


def cache_key(content: bytes, install: SnortInstall, variables: Variables) -> str:
    h = hashlib.sha256(content)
    h.update(f"{install.build.digest}\0{variables!r}\0{_converter_digest()}".encode())
    return h.hexdigest()[:16]


def _reasons(*counts: dict[str, int]) -> tuple[tuple[str, int], ...]:
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c)
    return tuple(total.most_common())


def _to_set(source: str, load: RuleLoad, method: str) -> RuleSetLoad:
    lines = rulesets.active_rules(load.path.read_text(errors="replace"))
    return RuleSetLoad(source=source, path=load.path, rules=load.rules, loaded=load.loaded, method=method,
                       sids=rulesets.text_rule_sids(lines), reasons=_reasons(load.not_converted, load.rejected),
                       event_filters=tuple(asdict(f) for f in load.event_filters))


def _locked_build(out_dir: Path, target: Path, build: Callable[[Path], RuleSetLoad]) -> Path:
    """Build `target` (and its sidecar) in a scratch dir under a lock, once."""
    if target.is_file() and rulesets.read_sidecar(target) is not None:
        return target
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file() and rulesets.read_sidecar(target) is not None:
            return target
        scratch = out_dir.with_name(out_dir.name + ".tmp")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        try:
            load = build(scratch)
            out_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(load.path, target)
            rulesets.write_sidecar(replace(load, path=target))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target


def loadable(source_ref: str, source: Path, install: SnortInstall, variables: Variables, cache_dir: Path,
             config_test: ConfigTest) -> Path:
    """The file Snort loads for rule file `source` (named `source_ref` in the spec)."""
    try:
        content = source.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read the rule file {source}: {exc}.", fix="fix sensor.rules in the spec.") from exc
    out_dir = cache_dir / "snort" / "rules" / cache_key(content, install, variables)
    target = out_dir / (source.stem + ".rules")

    def build(scratch: Path) -> RuleSetLoad:
        as_is = make_loadable(source, scratch / "as-is.rules", config_test, convert=False)
        if as_is.loaded == as_is.rules:
            return _to_set(source_ref, as_is, "as-is")
        converted = make_loadable(source, scratch / "converted.rules", config_test, convert=True)
        if converted.loaded >= as_is.loaded:
            return _to_set(source_ref, converted, "converted")
        return _to_set(source_ref, as_is, "as-is")

    return _locked_build(out_dir, target, build)


def builtin_events(install: SnortInstall, cache_dir: Path, dump: Callable[[], str]) -> Path:
    """Snort's built-in rules (`snort --dump-builtin-rules`, passed in as `dump`) as a rule file."""
    out_dir = cache_dir / "snort" / "rules" / f"builtin-{install.build.digest}"
    target = out_dir / "builtin-events.rules"

    def build(scratch: Path) -> RuleSetLoad:
        path = scratch / "builtin.rules"
        path.write_text(dump())
        stubs = len(rulesets.active_rules(path.read_text()))
        if stubs == 0:
            raise InputError("`snort --dump-builtin-rules` printed no rules.",
                             fix="check the Snort build (`make snort`).")
        return RuleSetLoad(source="builtin:events", path=path, rules=stubs, loaded=stubs, method="builtin")

    return _locked_build(out_dir, target, build)


def rule_error_message(log_text: str, sources: dict[str, str]) -> str:
    """Snort's own rule errors, each naming its file and line (and the spec's source of a cache file)."""
    out = []
    for err in snort_log.rule_errors(log_text):
        origin = sources.get(err.file)
        where = f"{err.file}:{err.line}" + (f" (converted from {origin})" if origin else "")
        out.append(f"ERROR: {where} {err.reason}")
    return "\n  ".join(out)


def event_filters(load: RuleSetLoad) -> list[EventFilter]:
    """The thresholds of a converted set as Snort event filters (kept in its sidecar)."""
    out = []
    for f in load.event_filters:
        try:
            out.append(EventFilter(gid=int(f["gid"]), sid=int(f["sid"]), type=str(f["type"]),
                                   track=str(f["track"]), count=int(f["count"]), seconds=int(f["seconds"])))
        except (KeyError, ValueError):
            continue
    return out
