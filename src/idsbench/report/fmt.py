"""Small text helpers of the outputs. Numbers: `idsbench.metrics.number` (re-exported here), the one
format of every table (`report/table.py` applies it with each metric's scale and digits)."""

from __future__ import annotations

from collections.abc import Iterable

from idsbench.metrics import MIB, number
from idsbench.store.schema import CaseResult

__all__ = ["MIB", "ci_label", "count_text", "load_label", "number"]


def ci_label(levels: Iterable[float]) -> str:
    """The coverage the CIs drawn or printed together reach, as computed: '97% CI', 'CI 50–97%' (the CI of a
    median covers 95% from 6 samples on, 50% with 2: `analysis.stats.ci_coverage`); 'CI' without any."""
    shown = sorted({f"{x:.0%}" for x in levels if x > 0}, key=lambda t: float(t[:-1]))
    if not shown:
        return "CI"
    return f"{shown[0]} CI" if len(shown) == 1 else f"CI {shown[0]}–{shown[-1]}"


def load_label(row: CaseResult) -> str:
    return f"{row.params.replayers}X"


def count_text(value: object) -> str:
    """A count as the tables print it; '–' where there is none (e.g. a profiler's match figure that is no count)."""
    return number(value, 0) if isinstance(value, (int, float)) and not isinstance(value, bool) else "–"
