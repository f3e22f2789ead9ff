"""Per-case summary: medians over a case's samples of the final figures, with CIs and warnings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from idsbench.analysis.load import Campaign, CaseInfo, SampleRecord
from idsbench.analysis.stats import cv, median, median_ci

# Keys of the per-case table (DESIGN.md) that are medians over samples, in output order.
METRICS = ("trace_pkts", "sent_pkts", "captured_pkts", "dropped_pkts", "decoded_pkts", "decoded_bytes",
           "alerts", "drop_ratio", "sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct", "flows",
           "stable_after_s")
COUNTER_KEYS = ("captured_pkts", "dropped_pkts", "decoded_pkts", "decoded_bytes", "alerts", "flows")
RESOURCE_KEYS = ("sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct")
# Metrics whose spread across samples is checked (counts that are fixed by the plan are not).
CV_CHECKED = ("sent_pkts", "decoded_pkts", "dropped_pkts", "drop_ratio", "sensor_cpu_pct",
              "sensor_rss_peak_bytes", "host_cpu_pct", "stable_after_s")
DEFAULT_CV_THRESHOLD = 0.10
MIN_DROP_RATIO_FOR_CV = 0.001  # below 0.1% drops, relative spread of drops is noise


def sample_metrics(sample: SampleRecord) -> dict[str, float | None]:
    """The per-sample figures behind every METRICS key. Missing counters count as 0."""
    s = sample.summary
    counters = (s.get("sensor") or {}).get("counters") or {}
    resources = s.get("resources") or {}
    out: dict[str, float | None] = {
        "trace_pkts": _num((s.get("trace") or {}).get("packets")),
        "sent_pkts": _num((s.get("replay") or {}).get("sent_pkts")),
    }
    for key in COUNTER_KEYS:
        out[key] = _num(counters.get(key))
    captured, dropped = out["captured_pkts"] or 0.0, out["dropped_pkts"] or 0.0
    out["drop_ratio"] = dropped / captured if captured > 0 else 0.0
    for key in RESOURCE_KEYS:
        out[key] = _num(resources.get(key))
    stable = s.get("stable_after_s")
    out["stable_after_s"] = float(stable) if stable is not None else None
    sent = out["sent_pkts"] or 0.0
    out["decode_ratio"] = (out["decoded_pkts"] or 0.0) / sent if sent > 0 else None
    return out


@dataclass(frozen=True)
class CaseSamples:
    """A case and the samples its medians are taken over (ok ones, or all if none is ok)."""

    info: CaseInfo
    used: tuple[SampleRecord, ...]
    failed: tuple[SampleRecord, ...]
    incomplete: int

    @property
    def values(self) -> list[dict[str, float | None]]:
        return [sample_metrics(s) for s in self.used]


def case_samples(campaign: Campaign) -> list[CaseSamples]:
    out = []
    for info in campaign.cases:
        complete = campaign.samples_of(info.case_id)
        ok = tuple(s for s in complete if s.status == "ok")
        failed = tuple(s for s in complete if s.status != "ok")
        out.append(CaseSamples(info, ok or failed, failed, len(campaign.incomplete_of(info.case_id))))
    return out


def case_table(campaign: Campaign, *, cv_threshold: float = DEFAULT_CV_THRESHOLD,
               level: float = 0.95) -> list[dict[str, Any]]:
    """One dict per case: parameters, `samples`, each METRICS median and `<key>_ci`, status, labels,
    warnings. See docs/architecture.md "Results"."""
    return [_row(cs, cv_threshold, level) for cs in case_samples(campaign)]


def _row(cs: CaseSamples, cv_threshold: float, level: float) -> dict[str, Any]:
    p = cs.info.params
    values = cs.values
    row: dict[str, Any] = {
        "case": cs.info.case_id, "setup": p.get("setup"), "trace": p.get("trace"),
        "replayers": p.get("replayers"), "rate": p.get("rate"), "samples": len(cs.used),
    }
    for key in METRICS:
        column = [v[key] for v in values]
        row[key] = _tidy(median(column))
    failures = sorted({s.status for s in cs.failed})
    row["status"] = ",".join(failures) if failures else ("ok" if cs.used else "incomplete")
    row["labels"] = sorted({str(lab) for s in cs.used for lab in (s.summary.get("labels") or [])})
    row.update({"loops": p.get("loops"), "cpus": p.get("cpus"), "memory": p.get("memory"),
                "samples_failed": len(cs.failed), "samples_incomplete": cs.incomplete})
    for key in METRICS:
        ci = median_ci([v[key] for v in values], level)
        row[f"{key}_ci"] = [_tidy(ci[0]), _tidy(ci[1])] if ci else None
    row["warnings"] = _warnings(cs, values, cv_threshold)
    return row


def _warnings(cs: CaseSamples, values: list[dict[str, float | None]], threshold: float) -> list[str]:
    case_id = cs.info.case_id
    out: list[str] = []
    if not cs.used:
        out.append(f"case {case_id} has no complete sample; run the campaign again with --resume.")
        return out
    if cs.failed:
        reasons = ", ".join(sorted({s.status for s in cs.failed}))
        scope = "all its samples" if len(cs.failed) == len(cs.used) else "the ok samples only"
        out.append(f"case {case_id}: {len(cs.failed)} sample(s) failed ({reasons}); medians use {scope}.")
    if cs.incomplete:
        out.append(f"case {case_id}: {cs.incomplete} sample(s) incomplete; complete them with --resume.")
    noisy = []
    drops = median([v["drop_ratio"] for v in values]) or 0.0
    for key in CV_CHECKED:
        if key in ("dropped_pkts", "drop_ratio") and drops < MIN_DROP_RATIO_FOR_CV:
            continue
        spread = cv([v[key] for v in values])
        if spread is not None and spread > threshold:
            noisy.append(f"{key} (CV {spread:.0%})")
    if noisy:
        n = len(values)
        out.append(f"case {case_id}: its {n} samples disagree on {', '.join(noisy)} (threshold "
                   f"{threshold:.0%}); run more samples (e.g. samples = {max(2 * n, 10)} in the spec) "
                   "or find what disturbs the host.")
    for s in cs.used:
        out.extend(f"{case_id}/s{s.index}: {w}" for w in (s.summary.get("warnings") or []))
    return out


def _num(value: Any) -> float:
    """A number from summary.json; missing or null counts as 0."""
    try:
        return float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def _tidy(value: float | None) -> float | int | None:
    if value is None:
        return None
    if float(value).is_integer() and abs(value) < 2**53:
        return int(value)
    return round(float(value), 6)
