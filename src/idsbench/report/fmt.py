"""Small text helpers of the outputs. Numbers: `idsbench.metrics.number` (re-exported here), the one
format of every table (`report/table.py` applies it with each metric's scale and digits)."""

from __future__ import annotations

from idsbench.metrics import MIB, number
from idsbench.store.schema import CaseResult

__all__ = ["MIB", "count_text", "load_label", "number"]


def load_label(row: CaseResult) -> str:
    return f"{row.params.replayers}X"


def count_text(value: object) -> str:
    """A count as the tables print it; '–' where there is none (e.g. a profiler's match figure that is no count)."""
    return number(value, 0) if isinstance(value, (int, float)) and not isinstance(value, bool) else "–"
