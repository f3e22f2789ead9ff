"""The report's A/B section (sensor.config as an axis): each configuration against the first one
("default" when listed), case by case at the same setup, trace, rate, load and limits, medians with
CIs and the effect-size verdict of analysis.effect (higher/lower, same, inconclusive); with a search, NDR
against NDR."""

from __future__ import annotations

from collections.abc import Sequence

from idsbench.analysis.compare import MetricDelta, compare_tables
from idsbench.metrics import columns
from idsbench.plan import trace_label
from idsbench.report.compare_out import verdict_text
from idsbench.report.fmt import number
from idsbench.spec import DEFAULT_CONFIG
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult

# (title, key, scale, digits), from the metric registry: the same precision as the results table
AB_METRICS: tuple[tuple[str, str, float, int], ...] = columns(
    "dropped_pkts", "drop_ratio", "decoded_pkts", "sensor_cpu_pct", "sensor_host_cpu_pct", "sensor_rss_peak_bytes",
    "alerts")


def ab_section(campaign: Campaign, rows: Sequence[CaseResult]) -> list[dict[str, object]]:
    """One block per contender configuration; [] when the campaign has a single configuration."""
    configs = list(dict.fromkeys(r.params.config for r in rows))
    if len(configs) < 2:
        return []
    base = DEFAULT_CONFIG if DEFAULT_CONFIG in configs else configs[0]
    base_rows = [r for r in rows if r.params.config == base]
    out: list[dict[str, object]] = []
    for contender in (c for c in configs if c != base):
        c_rows = [r for r in rows if r.params.config == contender]
        cmp = compare_tables(base, base_rows, contender, c_rows, tuple(key for _, key, _, _ in AB_METRICS))
        by_case = {r.case: r for r in rows}
        cases = []
        for m in cmp.rows:
            p = by_case[m.base_case].params
            cases.append({
                "title": f"{p.setup} {trace_label(p.trace)} {p.rate} {p.replayers}X",
                "samples": f"{m.samples[0]} vs {m.samples[1]}",
                "metrics": [_metric(title, m.metrics[key], scale, digits) for title, key, scale, digits in AB_METRICS],
                "ndr": _ndr(campaign, m.base_case, m.contender_case)})
        out.append({"base": base, "contender": contender, "cases": cases,
                    "unmatched": cmp.only_base + cmp.only_contender})
    return out


def _metric(title: str, d: MetricDelta, scale: float, digits: int) -> dict[str, str]:
    def v(x: float | None) -> str:
        return number(None if x is None else x / scale, digits)

    def ci(c: tuple[float, float] | None) -> str:
        return "" if not c else f"[{v(c[0])}–{v(c[1])}]"
    return {"name": title, "base": f"{v(d.base)} {ci(d.base_ci)}".strip(),
            "contender": f"{v(d.contender)} {ci(d.contender_ci)}".strip(), "diff": v(d.diff),
            "pct": f"{number(d.pct, 1)}%" if d.pct is not None else "–", "direction": d.direction,
            "verdict": verdict_text(d)}


def _ndr(campaign: Campaign, base_case: str, contender_case: str) -> str | None:
    """"NDR a → b pps" when both cases were searched."""
    values = []
    for case in (base_case, contender_case):
        search = campaign.searches.get(case)
        ndr = next((r for r in search.results if r.tolerance == 0), None) if search else None
        if ndr is None:
            return None
        text = "none" if ndr.value is None else f"{number(ndr.value, 0)} {search.unit if search else ''}".strip()
        values.append(f"≥ {text}" if ndr.lower_bound else text)
    return " → ".join(values)
