"""Expands a spec's matrix into cases × samples with stable, readable ids; in a duet, its cases as
sides a and b and their pairs (`duet_pairs`)."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from idsbench import bypass, capture
from idsbench.errors import SpecError
from idsbench.sensors import registry
from idsbench.spec import Rate, Spec, parse_size
from idsbench.spec.duet import CELL_AXES, SIDE_AXES, SIDES, axis_field, side_axes_of

# Parameters left out of a case id's digest when they have these values (ids of campaigns made
# before the parameter existed stay the same).
DIGEST_DEFAULTS: dict[str, object] = {"engine": "suricata", "sender": "tcpreplay", "config": "default",
                                      "rules": "default", "threads": None, "duet_side": None,
                                      "capture": None, "bypass": None, "duet_versus": None}


@dataclass(frozen=True)
class Sample:
    case_id: str
    index: int

    @property
    def sample_id(self) -> str:
        return f"{self.case_id}/s{self.index}"


@dataclass(frozen=True)
class Case:
    trace: str
    replayers: int
    rate: Rate
    loops: int
    setup: str
    cpus: float | None
    memory: str | None
    flows: str = "distinct"
    duration_s: float | None = None
    engine: str = "suricata"
    sender: str = "tcpreplay"
    config: str = "default"      # sensor.config: "default" or an overlay file
    rules: str = "default"       # the ruleset's name (sensor.rulesets or the trace's own rules; Spec.trace_rulesets),
                                 # "default" without a ruleset axis
    threads: int | str | None = None  # sensor.threads: a worker count, "auto", None = one per allocated CPU
    duet_side: str | None = None  # mode = "duet": "a" or "b" (`duet_pairs`), None otherwise
    capture: str | None = None   # sensor.capture: the capture method (idsbench.capture); None: the engine's default
    bypass: str | None = None    # sensor.bypass: the flow bypass mode (idsbench.bypass); None: off
    # mode = "duet", a side axis with k > 2 values: the reference case (side a) runs once per other value,
    # beside it; this is that value (so each pair's reference has its own samples); None otherwise
    duet_versus: str | None = None
    samples: tuple[Sample, ...] = field(default=(), compare=False)

    @property
    def memory_bytes(self) -> int | None:
        return None if self.memory is None else parse_size(self.memory)

    def params(self) -> dict[str, object]:
        """The case's parameters as plain JSON values (what the sample summary records as `case`)."""
        return {
            "trace": self.trace,
            "replayers": self.replayers,
            "rate": self.rate.label,
            "loops": self.loops,
            "setup": self.setup,
            "cpus": self.cpus,
            "memory": self.memory,
            "flows": self.flows,
            "duration_s": self.duration_s,
            "engine": self.engine,
            "sender": self.sender,
            "config": self.config,
            "rules": self.rules,
            "threads": self.threads,
            "duet_side": self.duet_side,
            "capture": self.capture,
            "bypass": self.bypass,
            "duet_versus": self.duet_versus,
        }

    @property
    def case_id(self) -> str:
        keyed = {k: v for k, v in self.params().items() if DIGEST_DEFAULTS.get(k, object()) != v}
        digest = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:6]
        parts = [_slug(trace_label(self.trace)), self.setup, f"r{self.replayers}", _slug(self.rate.label)]
        if self.engine != DIGEST_DEFAULTS["engine"]:
            parts.insert(1, _slug(self.engine))
        if self.sender != DIGEST_DEFAULTS["sender"]:
            parts.append(_slug(self.sender))
        if self.config != DIGEST_DEFAULTS["config"]:
            parts.append("cfg_" + _slug(Path(self.config).stem))
        if self.rules != DIGEST_DEFAULTS["rules"]:
            parts.append("rs_" + _slug(self.rules))
        if self.cpus is not None:
            parts.append(f"c{self.cpus:g}")
        if self.memory is not None:
            parts.append(f"m{_slug(self.memory)}")
        if self.threads is not None:
            parts.append(f"t{_slug(str(self.threads))}")
        if self.capture is not None:
            parts.append(f"cap_{_slug(self.capture)}")
        if self.bypass is not None:
            parts.append(f"byp_{_slug(self.bypass)}")
        if self.duet_side is not None:
            parts.append(f"duet_{self.duet_side}")
        if self.duet_versus is not None:
            parts.append(f"vs_{_slug(self.duet_versus)}")
        return "-".join(parts) + f"-{digest}"


def trace_label(ref: str) -> str:
    """Short name of a trace reference: 'builtin:mixed' -> 'mixed', '/x/y.pcap' -> 'y'."""
    if ref.startswith("builtin:"):
        return ref.split(":", 1)[1]
    return Path(ref).stem


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", text).strip("_")[:40] or "x"


def check_names(spec: Spec) -> None:
    """SpecError for names the registries do not know: engines, setup kinds, `[sensor.set.<engine>]`
    tables (the spec is a leaf and cannot check them itself)."""
    from idsbench.setups.registry import KINDS  # light: setup modules load when a setup is made

    for name in spec.sensor.engine:
        registry.check_name(name)
    unknown = [k for k in spec.setup.kinds if k not in KINDS]
    if unknown:
        raise SpecError(f"setup.kinds: unknown setup kind(s) {', '.join(map(repr, unknown))}.",
                        fix=f"use {', '.join(KINDS)}.")
    catalogues = {name: registry.capture_methods(name) for name in spec.sensor.engine}  # as each engine declares
    capture.check(catalogues, spec.sensor.capture, spec.sensor.capture_options, kinds=spec.setup.kinds)
    bypass.check(catalogues, spec.sensor.bypass, spec.sensor.capture, spec.setup.kinds)
    tables = [k for k, value in spec.sensor.set.items() if isinstance(value, dict) and k not in registry.names()]
    if tables:
        raise SpecError(f"[sensor.set.{tables[0]}] names no engine; a table under sensor.set holds one engine's "
                        "settings.", fix=f"use one of {', '.join(registry.names())}.")


def plan(spec: Spec) -> list[Case]:
    """Cartesian product of the spec's axes, in a stable order: engine outermost, then config, sender,
    setup, cpus, memory, trace, rate, replayers, rules, threads, capture, and bypass innermost (a trace that names its own
    rules has that one ruleset instead of the sensor.rules axis)."""
    check_names(spec)
    cases = []
    axes = itertools.product(
        spec.sensor.engine, spec.sensor.config, spec.traffic.sender, spec.setup.kinds, spec.setup.cpus,
        spec.setup.memory, spec.trace_rulesets(), spec.traffic.rate, spec.traffic.replayers,
    )
    for engine, config, sender, setup, cpus, memory, (trace, rulesets), rate, replayers in axes:
        for (rules, _), threads, method, byp in itertools.product(rulesets, spec.sensor.threads, spec.sensor.capture,
                                                                   spec.sensor.bypass):
            case = Case(trace=trace, replayers=replayers, rate=rate, loops=spec.traffic.loops,
                        setup=setup, cpus=cpus, memory=memory, flows=spec.traffic.flows,
                        duration_s=spec.traffic.duration_s, engine=engine, sender=sender, config=config,
                        rules=rules, threads=threads, capture=method, bypass=byp)
            samples = tuple(Sample(case.case_id, k) for k in range(spec.samples))
            cases.append(dataclasses.replace(case, samples=samples))
    if spec.mode == "duet":
        cases = _duet_sides(cases, spec)
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):  # only when the spec repeats a value within an axis
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise SpecError(f"the spec lists the same case twice ({', '.join(dup)}).",
                        fix="remove the repeated value from its axis.")
    return cases


def _duet_sides(cases: list[Case], spec: Spec) -> list[Case]:
    """A duet's cases as sides: in each cell (the cases that share every value but the side axis's), the
    side axis's first value is the reference, side a, and every other value a side b beside it (with k > 2
    values the reference case once per other value, `duet_versus`); without a side axis, each case twice
    (A/A). `spec.duet.check_duet` ruled out every other shape when the spec was read."""
    varying = side_axes_of(spec)
    if not varying:
        return [_tagged(c, side, None, spec.samples) for c in cases for side in SIDES]
    axis, values = varying[0]
    cells: dict[str, list[Case]] = {}
    for case in cases:
        key = json.dumps({k: v for k, v in case.params().items() if k != axis.field}, sort_keys=True)
        cells.setdefault(key, []).append(case)
    out = []
    for members in cells.values():
        if len(members) != len(values):  # e.g. a trace with its own rules against a sensor.rules side axis
            raise SpecError(f"mode = \"duet\": the cases of {trace_label(members[0].trace)} take "
                            f"{len(members)} of the {len(values)} values of the side axis {axis.key}, so they "
                            "cannot pair.",
                            fix=f"give every trace the {axis.key} axis (a trace with its own rules has one "
                                "ruleset), or run that trace in its own campaign.")
        ref, *others = members  # the product iterates the side axis in the order written
        for other in others:
            versus = str(getattr(other, axis.field)) if len(others) > 1 else None
            out += [_tagged(ref, "a", versus, spec.samples), _tagged(other, "b", None, spec.samples)]
    return out


def _tagged(case: Case, side: str, versus: str | None, samples: int) -> Case:
    tagged = dataclasses.replace(case, duet_side=side, duet_versus=versus)
    return dataclasses.replace(tagged, samples=tuple(Sample(tagged.case_id, k) for k in range(samples)))


def differing_axis(a: Case, b: Case) -> str | None:
    """The side axis whose value differs between the two cases; None for an A/A pair."""
    for axis in SIDE_AXES:
        if getattr(a, axis.field) != getattr(b, axis.field):
            return axis.key
    return None


def cell_value(case: Case, field: str) -> JsonValue:
    """A cell axis's value of `case` as JSON (a rate as its label)."""
    value = getattr(case, field)
    return value.label if isinstance(value, Rate) else value


@dataclass(frozen=True)
class DuetPair:
    """Side a (the reference) and side b of a duet; `axis` is the side axis that differs (None: an A/A
    duet); `cell` the values of the matrix's axes this pair runs at (`{"traffic.replayers": 2}`; {}: the
    spec has no other axis with several values)."""

    pair_id: str
    axis: str | None
    a: Case
    b: Case
    cell: dict[str, JsonValue] = field(default_factory=dict)

    @property
    def sides(self) -> tuple[Case, Case]:
        return (self.a, self.b)

    def side(self, name: str) -> Case:
        return self.a if name == "a" else self.b

    def values(self) -> tuple[Any, Any] | None:
        """The two values of the differing axis (None for A/A)."""
        field = axis_field(self.axis)
        return None if field is None else (getattr(self.a, field), getattr(self.b, field))

    @property
    def ref(self) -> str | None:
        """The reference side's value of the side axis (None for A/A)."""
        values = self.values()
        return None if values is None else str(values[0])


def pair_id(a_case_id: str, b_case_id: str, axis: str | None) -> str:
    """A stable, readable id shared by the two sides' rows."""
    digest = hashlib.sha256(f"{a_case_id}\n{b_case_id}".encode()).hexdigest()[:6]
    return f"duet-{(axis or 'aa').split('.')[-1]}-{digest}"


def duet_pairs(cases: Sequence[Case]) -> list[DuetPair]:
    """The duet pairs among planned cases (each case of a duet plan carries `duet_side`): each side b with
    the side a that shares every other parameter (a reference that runs once per other value: the one for
    b's value), in plan order; each pair's cell from the cell axes whose values differ among the cases.
    Cases without a side are left out."""
    a_sides = [c for c in cases if c.duet_side == "a"]
    sided = [c for c in cases if c.duet_side is not None]
    cell_axes = [ax for ax in CELL_AXES if len({json.dumps(cell_value(c, ax.field)) for c in sided}) > 1]
    out = []
    for b in (c for c in cases if c.duet_side == "b"):
        for a in a_sides:
            axis = differing_axis(a, b)
            field = axis_field(axis)
            if a.duet_versus is not None and (field is None or str(getattr(b, field)) != a.duet_versus):
                continue
            others = [f for f in a.params() if f not in (field, "duet_side", "duet_versus")]
            if all(getattr(a, f) == getattr(b, f) for f in others):
                cell = {ax.key: cell_value(a, ax.field) for ax in cell_axes}
                out.append(DuetPair(pair_id(a.case_id, b.case_id, axis), axis, a, b, cell))
                break
    return out


def axis_values(cases: Sequence[Case], field: str) -> list[Any]:
    """The values one Case field takes over `cases`, each once, in plan order (the spec's order of that
    axis: `plan` expands every axis in the order written)."""
    return list(dict.fromkeys(getattr(c, field) for c in cases))


def interleaved_rounds(cases: list[Case], seed: int | None = None) -> list[list[tuple[Case, Sample]]]:
    """Round k = sample k of every case (that has one); with a seed, the cases of each round in a random
    order drawn from it (RMIT: Abedi & Brecht, ICPE 2017), the same order for the same seed and cases."""
    rng = random.Random(seed)
    by_id = {c.case_id: c for c in cases}
    out = []
    for round_ in itertools.zip_longest(*(c.samples for c in cases)):
        members = [(by_id[s.case_id], s) for s in round_ if s is not None]
        if seed is not None:
            rng.shuffle(members)
        out.append(members)
    return out


def run_order(cases: list[Case], order: str, seed: int | None = None) -> list[tuple[Case, Sample]]:
    """The samples in the order they run: case by case, or round by round ("interleaved", shuffled inside
    each round with `seed`; None: plain round-robin)."""
    if order == "interleaved":
        return [pair for round_ in interleaved_rounds(cases, seed) for pair in round_]
    return [(c, s) for c in cases for s in c.samples]
