"""A spec's validation errors in the project's words: where (the key as written in the TOML), what is wrong,
and what to write instead; "did you mean" for a misspelt key (difflib over the keys the model knows at that
level). Used by `spec.load.spec_from_dict`; it knows pydantic's error types, not the spec's models, which it
is handed.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Mapping, Sequence

from pydantic import AliasChoices, BaseModel, ValidationError
from pydantic_core import ErrorDetails

# pydantic's type errors of a value that is not of the kind a key takes: what the key takes, in words
_KINDS = {
    "string_type": "text", "int_type": "a whole number", "int_parsing": "a whole number",
    "int_from_float": "a whole number", "float_type": "a number", "float_parsing": "a number",
    "bool_type": "true or false", "bool_parsing": "true or false", "dict_type": "a table",
    "list_type": "a list", "model_type": "a table", "model_attributes_type": "a table",
}


def _shown(value: object) -> str:
    """A value as the TOML had it (no Python None in the text)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _where(loc: Sequence[int | str], data: object) -> tuple[str, object]:
    """The key path as written (`traffic.rate`, `traffic.rate[1]`) and the value found there: a list index
    only where the TOML wrote a list (a single value the model made into a list has none), and no part for
    pydantic's union branches."""
    out: list[str] = []
    value: object = data
    for i, part in enumerate(loc):
        if isinstance(part, int):
            if isinstance(value, list) and part < len(value) and out:
                out[-1] += f"[{part}]"
                value = value[part]
            continue
        if not isinstance(value, Mapping):
            break  # a union branch's tag below a value that is no table
        if part in value:
            out.append(part)
            value = value[part]
        elif i == len(loc) - 1:  # a missing or an unknown key
            out.append(part)
            value = None
    return ".".join(out) or "(top level)", value


def _model_of(annotation: object) -> type[BaseModel] | None:
    """The model a field's type holds (through Optional, lists and dicts), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def known_keys(root: type[BaseModel], path: Sequence[int | str]) -> list[str]:
    """The keys the model knows at `path` (its names and their aliases), [] when the path is no table."""
    model: type[BaseModel] | None = root
    for part in path:
        if model is None:
            return []
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        model = _model_of(field.annotation) if field is not None else None
    if model is None:
        return []
    keys = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        keys.append(name)
        if isinstance(field.validation_alias, AliasChoices):
            keys += [a for a in field.validation_alias.choices if isinstance(a, str)]
    return sorted(set(keys))


def _message(err: ErrorDetails, value: object, root: type[BaseModel]) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    got = _shown(err.get("input", value))
    if kind == "extra_forbidden":
        near = difflib.get_close_matches(str(err["loc"][-1]), known_keys(root, err["loc"][:-1]), n=1, cutoff=0.6)
        return "unknown key" + (f" (did you mean `{near[0]}`?)" if near else
                                " (check the spelling; examples/quick.toml shows the keys)")
    if kind == "missing":
        return "is required: give it a value"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = {"greater_than": ("greater than", ctx.get("gt")), "greater_than_equal": ("at least", ctx.get("ge")),
                 "less_than": ("less than", ctx.get("lt")), "less_than_equal": ("at most", ctx.get("le"))}[kind]
        limit = f"{bound[0]} {_number(bound[1])}"
        return f"is {got}: give a number {limit}"
    if kind == "literal_error":
        return f"is {got}: it must be {ctx.get('expected')}"
    if kind == "string_pattern_mismatch":
        return f"is {got}, which does not have the form this key takes (the regular expression {ctx.get('pattern')})"
    if kind == "too_short":
        return f"is empty: give at least {ctx.get('min_length')} entry"
    if kind == "too_long":
        return f"has too many entries: at most {ctx.get('max_length')}"
    if kind in _KINDS:
        return f"is {got}: write {_KINDS[kind]}"
    return str(err["msg"]).removeprefix("Value error, ")


def error_lines(exc: ValidationError, data: Mapping[str, object], root: type[BaseModel]) -> list[str]:
    """One line per key in error: `traffic.duration_s: must be greater than 0, not -3: …`. A value that no
    branch of a union takes gets one line naming what the key takes."""
    by_where: dict[str, list[tuple[ErrorDetails, object]]] = {}
    for err in exc.errors():
        where, value = _where([p for p in err["loc"] if not str(p).startswith("function-")], data)
        by_where.setdefault(where, []).append((err, value))
    lines = []
    for where, errs in by_where.items():
        kinds = [_KINDS[e["type"]] for e, _ in errs if e["type"] in _KINDS]
        if len(errs) > 1 and len(kinds) == len(errs):  # a union: none of its types took the value
            taken = list(dict.fromkeys(kinds))
            lines.append(f"{where}: is {_shown(errs[0][1])}: write " + ", ".join(taken[:-1]) + f" or {taken[-1]}")
            continue
        lines.extend(f"{where}: {_message(e, v, root)}" for e, v in errs)
    return list(dict.fromkeys(lines))
