"""Analysis: per-sample figures from raw series, per-case medians with CIs, aligned time series,
overhead against a baseline setup, comparisons between campaigns, trends.

The names below are loaded on first use (PEP 562), so `idsbench.analysis.effect` or `.trend` do not
import the whole analysis (pandas, the report's figures) when a command needs only them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idsbench.analysis.cases import case_result, case_samples, case_table
    from idsbench.analysis.compare import COMPARE_METRICS, Comparison, compare_campaigns, compare_tables
    from idsbench.analysis.overhead import OVERHEAD_METRICS, overhead
    from idsbench.analysis.sample import METRICS, SampleFigures, sample_figures
    from idsbench.analysis.series import aligned

_WHERE = {
    "case_result": "cases", "case_samples": "cases", "case_table": "cases",
    "COMPARE_METRICS": "compare", "Comparison": "compare", "compare_campaigns": "compare", "compare_tables": "compare",
    "OVERHEAD_METRICS": "overhead", "overhead": "overhead",
    "METRICS": "sample", "SampleFigures": "sample", "sample_figures": "sample",
    "aligned": "series",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'idsbench.analysis' has no attribute {name!r}")
    return getattr(importlib.import_module(f"idsbench.analysis.{_WHERE[name]}"), name)


__all__ = [
    "COMPARE_METRICS",
    "METRICS",
    "OVERHEAD_METRICS",
    "Comparison",
    "SampleFigures",
    "aligned",
    "case_result",
    "case_samples",
    "case_table",
    "compare_campaigns",
    "compare_tables",
    "overhead",
    "sample_figures",
]
