"""Analysis: per-sample figures from raw series, per-case medians with CIs, aligned time series,
overhead against a baseline setup, comparisons between campaigns, trends (analysis.trend)."""

from idsbench.analysis.cases import case_result, case_samples, case_table
from idsbench.analysis.compare import COMPARE_METRICS, Comparison, compare_campaigns, compare_tables
from idsbench.analysis.overhead import OVERHEAD_METRICS, overhead
from idsbench.analysis.sample import METRICS, SampleFigures, sample_figures
from idsbench.analysis.series import aligned

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
