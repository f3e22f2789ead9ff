"""Analysis: load a campaign, per-case medians with CIs, aligned time series, overhead, comparisons."""

from idsbench.analysis.cases import METRICS, case_samples, case_table, sample_metrics
from idsbench.analysis.compare import COMPARE_METRICS, Comparison, compare_campaigns, compare_tables
from idsbench.analysis.load import Campaign, CaseInfo, IncompleteSample, SampleRecord, load_campaign
from idsbench.analysis.overhead import OVERHEAD_METRICS, overhead
from idsbench.analysis.series import aligned

__all__ = [
    "COMPARE_METRICS", "Comparison", "compare_campaigns", "compare_tables",
    "METRICS", "OVERHEAD_METRICS", "Campaign", "CaseInfo", "IncompleteSample", "SampleRecord", "aligned", "case_samples",
    "case_table", "load_campaign", "overhead", "sample_metrics",
]
