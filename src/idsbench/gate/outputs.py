"""The gate's files: DIR/gate.json (GateDoc), DIR/gate.md (render.py) and each campaign's report.html,
written through the store's atomic writer (a reader never sees half a file)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from idsbench.gate.model import GateDoc
from idsbench.gate.render import render
from idsbench.store.writers import write_gate


def write_outputs(out: Path, doc: GateDoc) -> tuple[Path, Path]:
    """gate.json and gate.md into `out`."""
    return write_gate(out, doc.model_dump(mode="json"), render(doc))


def write_reports(campaigns: Sequence[Path], log: Callable[[str], None]) -> list[Path]:
    """The HTML report of every campaign directory (a failing report is noted, never fatal)."""
    from idsbench.report import write_report  # matplotlib: only when reports are written

    out = []
    for c in campaigns:
        try:
            out.append(write_report(c))
        except Exception as exc:
            log(f"gate: the report of {c} could not be written: {exc}")
    return out


def read_doc(path: Path) -> GateDoc:
    return GateDoc.model_validate_json(path.read_text())
