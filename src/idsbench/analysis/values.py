"""A case result's values of one metric: its per-sample figures (what effect sizes resample), its
median, its CI; a metric may be a CASE_METRICS median or a later analysis's figure
(`CaseResult.figures()`: a search's `ndr_pps`, the engines' `alerts_common_rules` …)."""

from __future__ import annotations

from idsbench.analysis.effect import rounds
from idsbench.store.schema import CaseResult

__all__ = ["ci_of", "median_of", "paired_values", "sample_values"]


def sample_values(r: CaseResult, key: str) -> tuple[float | None, ...]:
    """A case's per-sample values of `key`: its ok samples' figures, a search's repeats, or the one value."""
    if r.values.get(key):
        return r.values[key]
    repeats = r.figures().get(key.replace("_pps", "_repeats")) if key.endswith("_pps") else None
    if isinstance(repeats, list) and repeats:
        return tuple(float(v) for v in repeats if isinstance(v, (int, float)))
    value = median_of(r, key)
    return () if value is None else (value,)


def paired_values(b: CaseResult, c: CaseResult,
                  key: str) -> tuple[tuple[float | None, ...], tuple[float | None, ...]] | None:
    """The two cases' per-sample values of `key` round by round (base, contender), when their samples ran
    interleaved (analysis.effect.rounds on the samples' start times); None otherwise (or without stamps:
    results read back from an index written before they were kept)."""
    bv, cv = b.values.get(key), c.values.get(key)
    if not bv or not cv or len(bv) != len(b.value_samples) or len(cv) != len(c.value_samples):
        return None
    paired = rounds([(s.index, s.start_unix) for s in b.value_samples],
                    [(s.index, s.start_unix) for s in c.value_samples])
    if paired is None:
        return None
    return tuple(bv[i] for i, _ in paired), tuple(cv[j] for _, j in paired)


def median_of(r: CaseResult, key: str) -> float | None:
    value = r.medians[key] if key in r.medians else r.figures().get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def ci_of(r: CaseResult, key: str) -> tuple[float, float] | None:
    ci = r.cis.get(key) or r.figures().get(f"{key}_ci")
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return None
    lo, hi = ci
    return (float(lo), float(hi)) if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else None
