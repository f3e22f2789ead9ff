"""Reading a spec: TOML → the typed `Spec`, every error naming the key and the fix; a duet that cannot
run is refused here too (`spec.duet.check_duet`), so nothing later checks the spec's shape again."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the tomli package
    import tomli as tomllib

from pydantic import ValidationError

from idsbench import legacy
from idsbench.errors import InputError, SpecError
from idsbench.spec.duet import check_duet
from idsbench.spec.messages import error_lines
from idsbench.spec.model import Spec


def spec_from_dict(data: Mapping[str, object], *, source: str = "spec", base_dir: Path = Path(".")) -> Spec:
    try:
        spec = Spec.model_validate({**data, "base_dir": base_dir})
    except ValidationError as exc:
        raise SpecError(
            f"{source} is not a valid idsbench spec: " + "; ".join(error_lines(exc, data, Spec)) + ".",
            fix="correct those keys; examples/quick.toml shows every section.",
        ) from exc
    check_duet(spec)  # a duet that cannot run is refused at load, naming the fix
    return spec


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
    spec = spec_from_dict(data, source=str(path), base_dir=path.resolve().parent)
    for note in legacy.notes(data.get("sensor")):  # an older name, read as today's
        print(f"idsbench: note: {path}: {note}", file=sys.stderr)
    return spec
