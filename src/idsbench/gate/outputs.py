"""The gate's files: DIR/gate.json (GateDoc), DIR/gate.md (render.py) and each campaign's report.html,
written through the store's atomic writer (a reader never sees half a file)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from idsbench.gate.model import GateDoc
from idsbench.gate.render import render
from idsbench.store import atomic
from idsbench.store.layout import GATE_FILE, GATE_MD_FILE


def write_outputs(out: Path, doc: GateDoc) -> tuple[Path, Path]:
    """gate.json and gate.md into `out`."""
    json_path, md_path = out / GATE_FILE, out / GATE_MD_FILE
    atomic.write_json(json_path, doc.model_dump(mode="json"))
    atomic.write_text(md_path, render(doc))
    return json_path, md_path


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
