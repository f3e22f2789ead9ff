"""Overhead of each setup vs a baseline setup (default baremetal) at the same trace, rate, load, limits.

For each metric: baseline and contender medians, their difference (contender - baseline) and that
difference in percent of the baseline median, each with a 95% percentile-bootstrap CI (fixed seed).
"""

from __future__ import annotations

from typing import Any

from idsbench.analysis.cases import CaseSamples, case_samples
from idsbench.analysis.load import Campaign
from idsbench.analysis.stats import bootstrap_diff, median

# metric key -> what its difference means (positive = more of it in the contender)
OVERHEAD_METRICS = {
    "host_cpu_pct": "extra host CPU (percentage points of all CPUs)",
    "sensor_cpu_pct": "extra sensor CPU (% of one core)",
    "sensor_rss_peak_bytes": "extra sensor memory (bytes, peak RSS)",
    "dropped_pkts": "extra dropped packets",
    "drop_ratio": "extra drop ratio (dropped / captured)",
    "decode_ratio": "change of the decode rate (decoded / sent; negative = lower)",
}
MATCH_KEYS = ("trace", "rate", "loops", "cpus", "memory", "replayers")


def _key(cs: CaseSamples) -> tuple:
    return tuple(cs.info.params.get(k) for k in MATCH_KEYS)


def overhead(campaign: Campaign, baseline: str = "baremetal") -> list[dict[str, Any]]:
    """One dict per non-baseline case that has a matching baseline case; [] when there is none."""
    groups = [cs for cs in case_samples(campaign) if cs.used]
    base = {_key(cs): cs for cs in groups if cs.info.params.get("setup") == baseline}
    out = []
    for cs in groups:
        p = cs.info.params
        ref = base.get(_key(cs))
        if p.get("setup") == baseline or ref is None:
            continue
        row: dict[str, Any] = {"case": cs.info.case_id, "baseline_case": ref.info.case_id,
                               "setup": p.get("setup"), "baseline": baseline,
                               **{k: p.get(k) for k in MATCH_KEYS}}
        b_vals, c_vals = ref.values, cs.values
        for metric in OVERHEAD_METRICS:
            row[metric] = metric_overhead([v[metric] for v in b_vals], [v[metric] for v in c_vals])
        out.append(row)
    return out


def metric_overhead(base: list[float | None], contender: list[float | None]) -> dict[str, Any]:
    mb, mc = median(base), median(contender)
    diff = None if mb is None or mc is None else mc - mb
    pct = None if diff is None or not mb else diff / abs(mb) * 100.0
    dci = bootstrap_diff(base, contender)
    pci = bootstrap_diff(base, contender, relative=True) if pct is not None else None
    return {"baseline": mb, "value": mc, "diff": diff, "diff_ci": list(dci) if dci else None,
            "pct": pct, "pct_ci": list(pci) if pci else None}
