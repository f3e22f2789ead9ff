"""Names an older idsbench wrote, and what they are now: one table, read wherever a name comes in from a spec
or a stored file (the spec's `[sensor]` table, campaign.json, summary.json), so old specs still load and old
campaign directories still read and join newer ones (store.casekey keys the engine by its name now).

- the engine `capture` (the capture path without detection) is `nodetect` (issue 40: "capture" also named
  the capture axis and its key): `sensor.engine`, `[sensor.set.capture]`, stored case parameters, each
  engine's build (`environment.engines`) and rule load (`inputs.rule_load`);
- `sensor.capture_method` (alias `method`: that engine's reader) folded into the capture axis,
  `sensor.capture`: "libpcap" becomes `capture = "libpcap"`; "afpacket", the reader by default, is left out.
Case ids made before a rename keep their old names on disk (a campaign that ran them reads as it ran).

A leaf: imports nothing of idsbench.
"""

from __future__ import annotations

from collections.abc import Mapping

ENGINES = {"capture": "nodetect"}  # old engine name -> the name now
READERS = ("afpacket", "libpcap")  # what `sensor.capture_method` took (the nodetect engine's readers)
DEFAULT_READER = "afpacket"
CAPTURE_METHOD_KEYS = ("capture_method", "method")


def engine(name: str) -> str:
    """The engine's name now (`capture` -> `nodetect`); any other name as it is."""
    return ENGINES.get(name, name)


def _engine_key(key: str) -> str:
    """A key naming an engine, alone or as `engine ruleset` (run.context.options_key)."""
    head, sep, rest = key.partition(" ")
    return engine(head) + sep + rest


def _rekeyed(table: object) -> object:
    return {_engine_key(k): v for k, v in table.items()} if isinstance(table, dict) else table


def _listed(value: object) -> list[object]:
    return value if isinstance(value, list) else [value]


def sensor_doc(data: Mapping[str, object]) -> dict[str, object]:
    """A spec's `[sensor]` table with today's names; ValueError (the spec's error) when `capture_method`
    cannot become the capture axis: it contradicts `sensor.capture`, names no reader, or is "libpcap" in a
    campaign with engines that have no such method."""
    out = dict(data)
    if "engine" in out:
        out["engine"] = [engine(e) if isinstance(e, str) else e for e in _listed(out["engine"])]
    sets = out.get("set")
    if isinstance(sets, dict):
        out["set"] = {engine(k) if isinstance(v, dict) else k: v for k, v in sets.items()}
    given = [k for k in CAPTURE_METHOD_KEYS if k in out]
    if not given:
        return out
    if len(given) > 1:
        raise ValueError("capture_method and method are the same key (now sensor.capture): give one")
    reader = out.pop(given[0])
    if reader not in READERS:
        raise ValueError(f"{given[0]} = {reader!r} is not a reader of the nodetect engine ({', '.join(READERS)}); "
                         "the key is now sensor.capture")
    captures = [c for c in _listed(out.get("capture")) if c is not None]
    if captures:
        if captures != [reader]:
            raise ValueError(f"{given[0]} = {reader!r} contradicts capture = {out['capture']!r}: {given[0]} is now "
                             "sensor.capture; keep capture only")
        return out
    if reader == DEFAULT_READER:
        return out  # the reader by default: nothing to carry over
    others = [e for e in _listed(out.get("engine", ["suricata"])) if e != "nodetect"]
    if others:
        raise ValueError(f"{given[0]} = {reader!r} is now sensor.capture = {reader!r}, which applies to every engine, "
                         f"and {', '.join(map(str, others))} have no {reader!r} capture: run the nodetect engine with "
                         f"capture = {reader!r} in a campaign of its own")
    out["capture"] = [reader]
    return out


def notes(data: object) -> list[str]:
    """What `sensor_doc` renamed in a spec's `[sensor]` table, for the user (load_spec prints them)."""
    if not isinstance(data, Mapping):
        return []
    out = [f"sensor.engine {old!r} is now {new!r} (the capture path without detection); read as {new!r}, "
           "rename it in the spec." for old, new in ENGINES.items()
           if old in _listed(data.get("engine", []))]
    sets = data.get("set")
    out += [f"[sensor.set.{old}] is now [sensor.set.{new}]; read as such, rename it in the spec."
            for old, new in ENGINES.items() if isinstance(sets, Mapping) and isinstance(sets.get(old), Mapping)]
    for key in CAPTURE_METHOD_KEYS:
        if key in data:
            reader = data[key]
            out.append(f"sensor.{key} = {reader!r} is now sensor.capture = {reader!r} (the capture axis); "
                       + ("it is the nodetect engine's default reader, so it was left out; remove the key."
                          if reader == DEFAULT_READER else "read as such, write capture instead."))
    return out


def campaign_doc(doc: dict[str, object]) -> dict[str, object]:
    """campaign.json with today's engine names (its spec is renamed when the `Spec` reads it): each engine's
    build, its rule loads (and on hosts, each host's), the planned cases; `doc` itself when none is old."""
    out = dict(doc)
    env = out.get("environment")
    if isinstance(env, dict) and "engines" in env:
        out["environment"] = {**env, "engines": _rekeyed(env["engines"])}
    inputs = out.get("inputs")
    if isinstance(inputs, dict):
        inputs = {**inputs, **({"rule_load": _rekeyed(inputs["rule_load"])} if "rule_load" in inputs else {})}
        hosts = inputs.get("rules_on_hosts")
        if isinstance(hosts, dict):
            inputs["rules_on_hosts"] = {h: _rekeyed(v) for h, v in hosts.items()}
        out["inputs"] = inputs
    cases = out.get("cases")
    if isinstance(cases, list):
        out["cases"] = [_with_engine(c) for c in cases]
    return doc if out == doc else out  # the same object when nothing was renamed


def summary_doc(doc: dict[str, object]) -> dict[str, object]:
    """A sample's summary.json with today's engine names (its case's and its sensor's)."""
    return {**doc, **{k: _with_engine(doc[k]) for k in ("case", "sensor") if k in doc}}


def _with_engine(part: object) -> object:
    if isinstance(part, dict):
        name = part.get("engine")
        if isinstance(name, str):
            return {**part, "engine": engine(name)}
    return part
