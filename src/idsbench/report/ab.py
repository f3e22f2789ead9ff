"""The report's A/B section (sensor.config as an axis): each configuration against the first one
("default" when listed), case by case at the same setup, trace, rate, load and limits, medians with
CIs and the effect-size verdict of analysis.effect (higher/lower, same, inconclusive); with a search, NDR
against NDR."""

from __future__ import annotations

from collections.abc import Sequence

from idsbench.analysis.compare import compare_tables
from idsbench.metrics import search_metric
from idsbench.plan import trace_label
from idsbench.report.compare_out import delta_table
from idsbench.spec import DEFAULT_CONFIG
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult

# the metrics of the A/B tables (formatted by the metric registry, as the results table)
AB_METRICS = ("dropped_pkts", "drop_ratio", "decoded_pkts", "sensor_cpu_pct", "sensor_host_cpu_pct",
              "sensor_rss_peak_bytes", "alerts")


def ab_section(campaign: Campaign, rows: Sequence[CaseResult]) -> list[dict[str, object]]:
    """One block per contender configuration (its `tables`, one per matched case); [] when the campaign
    has a single configuration."""
    configs = list(dict.fromkeys(r.params.config for r in rows))
    if len(configs) < 2:
        return []
    base = DEFAULT_CONFIG if DEFAULT_CONFIG in configs else configs[0]
    base_rows = [r for r in rows if r.params.config == base]
    by_case = {r.case: r for r in rows}
    out: list[dict[str, object]] = []
    for contender in (c for c in configs if c != base):
        c_rows = [r for r in rows if r.params.config == contender]
        cmp = compare_tables(base, base_rows, contender, c_rows, AB_METRICS)
        blocks = []
        for m in cmp.rows:
            p = by_case[m.base_case].params
            ndr = _ndr(campaign, m.base_case, m.contender_case)
            title = (f"{p.setup} {trace_label(p.trace)} {p.rate} {p.replayers}X (samples {m.samples[0]} vs "
                     f"{m.samples[1]})" + (f" · NDR {ndr}" if ndr else ""))
            blocks.append(delta_table({k: m.metrics[k] for k in AB_METRICS}, base, contender, title, keys=False))
        out.append({"base": base, "contender": contender, "tables": blocks,
                    "unmatched": cmp.only_base + cmp.only_contender})
    return out


def _ndr(campaign: Campaign, base_case: str, contender_case: str) -> str | None:
    """"NDR a → b pps" when both cases were searched."""
    values = []
    for case in (base_case, contender_case):
        search = campaign.searches.get(case)
        ndr = next((r for r in search.results if r.tolerance == 0), None) if search else None
        if ndr is None:
            return None
        text = "none" if ndr.value is None or search is None else f"{search_metric(search.unit).show(ndr.value)} {search.unit}"
        values.append(f"≥ {text}" if ndr.lower_bound else text)
    return " → ".join(values)
