"""The spec reference (docs/spec.md), generated from the spec model: every section and key with its type,
default, allowed values and meaning (`Field(description=...)` in spec/model.py and hostspec.py, the one source).

`idsbench spec-reference` prints it; `make docs` writes docs/spec.md; a unit test fails when that file
differs from what this module renders.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Union

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import AliasChoices, BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from idsbench.spec import Rate, Spec, TraceEntry

HEADER = """# Spec reference

A spec is a TOML file: a few top-level keys, then one table per section. This page is generated from
the spec model (`src/idsbench/spec/model.py`, `src/idsbench/hostspec.py`) by `idsbench spec-reference`
(`make docs` writes it); do not edit it by hand — change the model's `Field(description=...)` and
regenerate. A unit test fails when this page is stale.

Unknown keys and bad values are refused before anything starts, naming the key and the fix. A list
key marked "(or one value)" also takes a single value. An *axis* (said in its meaning) makes one case
per value: the cases of a campaign are the cartesian product of its axes, and each case runs `samples`
times. Paths are relative to the spec file. `examples/` holds specs to copy.
"""

# Sections documented elsewhere on the page (as value forms), not as tables of their own.
VALUE_FORMS = (Rate, TraceEntry)


@dataclass(frozen=True)
class Key:
    """One documented key: its dotted path and what the model says about it."""

    path: str
    type: str
    default: str
    allowed: str
    meaning: str


def render() -> str:
    """The whole reference as Markdown."""
    out = [HEADER]
    out += _section("Top level", "", Spec)
    for name, field in Spec.model_fields.items():
        model = section_model(field.annotation)
        if model is None or field.exclude:
            continue
        out += _section(f"[{name}]", name, model, field.description)
        for sub, subfield in model.model_fields.items():
            inner = section_model(subfield.annotation)
            if inner is None or inner in VALUE_FORMS:
                continue
            many = typing.get_origin(_without_none(subfield.annotation)) is list
            title = f"[[{name}.{sub}]]" if many else f"[{name}.{sub}]"
            out += _section(title, f"{name}.{sub}", inner, subfield.description)
    out += _value_forms()
    return "\n".join(out).rstrip() + "\n"


def write(path: Path) -> None:
    path.write_text(render())


def _section(title: str, prefix: str, model: type[BaseModel], about: str | None = None) -> list[str]:
    lines = [f"## {title}", ""]
    if about or model.__doc__:
        lines += [_one_line(about or model.__doc__ or ""), ""]
    for key in _keys(prefix, model):
        facts = [key.type, f"default {key.default}"]
        if key.allowed:
            facts.append(key.allowed)
        lines += [f"- **`{key.path}`** — {'; '.join(facts)}.", f"  {key.meaning}"]
    return [*lines, ""]


def _keys(prefix: str, model: type[BaseModel]) -> Iterator[Key]:
    accepts_single = _single_value_fields(model)
    for name, field in model.model_fields.items():
        if field.exclude or (section_model(field.annotation) is not None and section_model(field.annotation) not in VALUE_FORMS):
            continue
        path = f"{prefix}.{name}" if prefix else name
        kind = _type_name(field.annotation)
        aliases = _aliases(field, name)
        if aliases:
            kind = "also spelled " + ", ".join(f"`{a}`" for a in aliases) + "; " + kind
        if name in accepts_single:
            kind += " (or one value)"
        if not field.description:
            raise ValueError(f"spec key {path} has no description: add Field(description=...) in the model")
        yield Key(path, kind, _default(field), _allowed(field), _one_line(field.description))


def _single_value_fields(model: type[BaseModel]) -> set[str]:
    """List fields a 'before' validator lets a single value stand for (every such validator in the spec
    model wraps a lone value in a list)."""
    out: set[str] = set()
    for dec in model.__pydantic_decorators__.field_validators.values():
        if dec.info.mode == "before":
            out.update(f for f in dec.info.fields
                       if typing.get_origin(_without_none(model.model_fields[f].annotation)) is list)
    return out


def _aliases(field: FieldInfo, name: str) -> list[str]:
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(c) for c in alias.choices if c != name]
    return []


def _type_name(annotation: object) -> str:
    annotation = _strip_annotated(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Rate:
        return "rate"
    if annotation is TraceEntry:
        return "trace table"
    if origin is Literal:
        return "string" if all(isinstance(a, str) for a in args) else "literal"
    if origin in (Union, types.UnionType):
        parts = [a for a in args if a is not type(None)]
        if len(parts) == 1:
            return _type_name(parts[0])
        # a Literal beside other types ("auto") is named by its values
        names = list(dict.fromkeys(
            " | ".join(json.dumps(v) for v in typing.get_args(a)) if typing.get_origin(a) is Literal
            else _type_name(a) for a in parts))
        return " or ".join(names)
    if origin is list:
        return "list of " + " or ".join(_plural(n) for n in _type_name(args[0]).split(" or "))
    if origin is dict:
        return "table"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}.get(
        annotation if isinstance(annotation, type) else type(None), str(annotation))


def _plural(name: str) -> str:
    return {"string": "strings", "integer": "integers", "number": "numbers", "rate": "rates",
            "boolean": "booleans", "trace table": "trace tables"}.get(name, name)


def _strip_annotated(annotation: object) -> object:
    return typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation


def _without_none(annotation: object) -> object:
    annotation = _strip_annotated(annotation)
    if typing.get_origin(annotation) in (Union, types.UnionType):
        parts = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(parts) == 1:
            return parts[0]
    return annotation


def section_model(annotation: object) -> type[BaseModel] | None:
    """The section model a field holds (a table, an optional table or a list of tables), if any."""
    inner = _without_none(annotation)
    if typing.get_origin(inner) is list:
        inner = _strip_annotated(typing.get_args(inner)[0])
    return inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "none (required)"
    value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
    if value is PydanticUndefined:
        return "none (required)"
    if value is None or value == [None]:
        return "unset"
    return f"`{_toml(value)}`"


def _toml(value: object) -> str:
    """A value as it would be written in TOML."""
    if isinstance(value, Rate):
        return json.dumps(value.kind) if value.value is None else f"{{ {value.kind} = {value.value:g} }}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}" if value != int(value) else f"{value:.1f}"
    if isinstance(value, (int, str)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{}" if not value else "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return str(value)


def _allowed(field: FieldInfo) -> str:
    parts = []
    literals = _literals(field.annotation)
    if literals:
        parts.append("one of " + ", ".join(f"`{json.dumps(v)}`" for v in literals))
    for meta in [*field.metadata, *_item_metadata(field.annotation)]:
        if isinstance(meta, Ge):
            parts.append(f"≥ {meta.ge}")
        elif isinstance(meta, Gt):
            parts.append(f"> {meta.gt}")
        elif isinstance(meta, Le):
            parts.append(f"≤ {meta.le}")
        elif isinstance(meta, Lt):
            parts.append(f"< {meta.lt}")
        elif isinstance(meta, MinLen) and meta.min_length > 0:
            parts.append("not empty" if meta.min_length == 1 else f"at least {meta.min_length} items")
        elif isinstance(meta, MaxLen):
            parts.append(f"at most {meta.max_length} items")
        elif getattr(meta, "pattern", None):
            parts.append(f"matching `{meta.pattern}`")
    return ", ".join(parts)


def _literals(annotation: object) -> list[object]:
    """The allowed values of a Literal field (also inside a list or an optional)."""
    inner = _without_none(annotation)
    if typing.get_origin(inner) is list:
        inner = _without_none(typing.get_args(inner)[0])
    if typing.get_origin(inner) is Literal:
        return list(typing.get_args(inner))
    return []


def _item_metadata(annotation: object) -> list[object]:
    """Constraints on a list's items (`list[Annotated[int, Field(ge=1)]]`)."""
    inner = _without_none(annotation)
    if typing.get_origin(inner) is not list:
        return []
    item = typing.get_args(inner)[0]
    if typing.get_origin(item) is not typing.Annotated:
        return []
    out: list[object] = []
    for meta in typing.get_args(item)[1:]:
        out.extend(meta.metadata if isinstance(meta, FieldInfo) else [meta])
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _value_forms() -> list[str]:
    kinds = typing.get_args(Rate.model_fields["kind"].annotation)
    plain = [k for k in kinds if k in ("recorded", "topspeed")]
    fixed = [k for k in kinds if k not in plain]
    lines = ["## Value forms", "",
             f"- **rate** — {_one_line(Rate.__doc__ or '')} Written as "
             + " or ".join(f'`"{k}"`' for k in plain) + ", or a one-key table "
             + ", ".join(f"`{{ {k} = X }}`" for k in fixed) + " with X > 0.",
             f"- **trace table** — {_one_line(TraceEntry.__doc__ or '')} Keys:"]
    for key in _keys("", TraceEntry):
        lines.append(f"  `{key.path}` ({key.type}; {key.allowed}): {key.meaning}")
    return [*lines, ""]
