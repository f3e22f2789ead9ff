"""docs/spec.md is the spec reference generated from the spec model, and current."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.cli.main import main
from idsbench.spec import Spec
from idsbench.specdoc import render, section_model

SPEC_MD = Path(__file__).resolve().parents[2] / "docs" / "spec.md"


def test_docs_spec_md_is_current() -> None:
    assert SPEC_MD.read_text() == render(), "docs/spec.md is stale: run `make docs` and commit it"


def test_every_key_of_every_section_is_documented() -> None:
    text = render()
    for section, field in Spec.model_fields.items():
        if field.exclude:
            continue
        model = section_model(field.annotation)
        if model is None:
            assert f"**`{section}`**" in text
            continue
        assert f"## [{section}]" in text
        for key, sub in model.model_fields.items():
            table = section_model(sub.annotation)
            shown = (f"## [{section}.{key}]" in text or f"## [[{section}.{key}]]" in text) if table \
                and table.__name__ not in ("Rate", "TraceEntry") else f"**`{section}.{key}`**" in text
            assert shown, f"{section}.{key} missing from the reference"


def test_reference_states_type_default_and_allowed_values() -> None:
    text = render()
    assert "- **`traffic.sender`** — list of strings (or one value); default `[\"native\"]`; one of `\"native\"`, " \
           "`\"tcpreplay\"`, not empty." in text
    assert "- **`search.precision`** — number; default `0.05`; > 0, < 1." in text
    assert "- **`timing.drain_timeout_s`** — number; default `30.0`; > 0." in text


def test_a_field_without_description_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from idsbench.spec.model import Timing

    monkeypatch.setattr(Timing.model_fields["settle_s"], "description", None)
    with pytest.raises(ValueError, match="timing.settle_s has no description"):
        render()


def test_cli_prints_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec-reference"]) == 0
    assert capsys.readouterr().out == render()
