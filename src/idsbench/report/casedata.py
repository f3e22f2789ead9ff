"""What the outputs read of a `CaseResult` beyond its parameters: the ONE place they touch its
medians, CIs and later analyses' named figures, so a change of that model changes this module."""

from __future__ import annotations

from idsbench.analysis.values import ci_of, median_of
from idsbench.report.table import Measure
from idsbench.store.schema import CaseResult


def measure(row: CaseResult, key: str, note: str = "") -> Measure:
    """The case's median of metric `key` with its CI (a CASE_METRICS median or a later analysis's figure)."""
    return Measure(key, median_of(row, key), ci_of(row, key), note)


def engine_version(row: CaseResult) -> str | None:
    return row.engine_version or None


def degraded(row: CaseResult) -> dict[str, float]:
    """The sensor's degraded counters (memcap hits, emergency modes …), medians over the ok samples."""
    return {str(k): float(v) for k, v in row.degraded_sensor.items() if v is not None}

