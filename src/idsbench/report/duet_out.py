"""A duet campaign in the CLI's outputs: `idsbench results` (each side's row with `duet_side` and
`duet_pair`, plus one row per pair) and `idsbench compare DUET` (side a against side b, the cost per
packet judged on the paired per-sample ratios)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from idsbench.analysis.compare import Comparison, compare_tables
from idsbench.analysis.duet import DuetResult, pair_row
from idsbench.metrics import metric
from idsbench.report import compare_out, export, tables
from idsbench.report.table import Column, table
from idsbench.store.schema import CaseResult

PAIRED_METRIC = "sensor_us_per_pkt"


def results_text(fmt: str, rows: Sequence[CaseResult], pairs: Sequence[DuetResult]) -> str:
    """The results of a duet campaign: the case rows (sides) then the pair rows."""
    records: list[Mapping[str, object]] = [*(r.to_row() for r in rows), *(pair_row(p) for p in pairs)]
    if fmt == "json":
        return export.to_json(records)
    if fmt == "csv":
        return export.to_csv(records)
    return tables.to_table(rows) + "\n" + pairs_table(pairs)


def pairs_table(pairs: Sequence[DuetResult]) -> str:
    """One line per duet pair: its axis, sides, ratio b/a with CI, verdict."""
    columns = (Column("duet_pair", "duet pair"), Column("duet_axis", "axis"), Column("a", "a"), Column("b", "b"),
               Column("n", "n", "right"), Column("exact", "exact", "right"),
               Column("duet_ratio", "ratio b/a", "right"), Column("ci", "CI", "right"), Column("verdict", "verdict"))
    body = []
    for p in pairs:
        ci = p.ratio_ci
        body.append((p.pair_id, p.axis or "none (A/A)", p.a_value or "a", p.b_value or "b", str(p.n), str(p.exact),
                     _num(p.ratio), f"[{_num(ci[0])}–{_num(ci[1])}] ({p.ci_level:.1%})" if ci else "–", _verdict(p)))
    return export.to_text(table(columns, body)) + "".join(search_line(p) + "\n" for p in pairs if p.search)


def search_line(p: DuetResult) -> str:
    """A duet search's pair figures in one line: each side's NDR and the ratio b/a with its CI."""
    f = p.search
    assert f is not None
    ci = ""
    if f.ratio_ci:
        how = f"{f.ci_level:.1%} CI over repeats" if f.ci_kind == "repeats" and f.ci_level is not None \
            else "the range the relevant bounds allow"
        ci = f" [{_num(f.ratio_ci[0])}–{_num(f.ratio_ci[1])}] ({how})"
    return (f"{p.pair_id} search: NDR a {_pps(f.a_ndr_pps)}, b {_pps(f.b_ndr_pps)}; NDR ratio b/a {_num(f.ratio)}{ci}; "
            f"conditional throughput a {_pps(f.a_conditional_pps)}, b {_pps(f.b_conditional_pps)}")


def _pps(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f} pps"


def _num(x: object) -> str:
    return f"{x:.4f}" if isinstance(x, (int, float)) else "–"


def _verdict(p: DuetResult) -> str:
    e = p.effect
    v = e.verdict if e.verdict != "n/a" else "inconclusive"
    if v == "inconclusive" and e.samples_needed:
        return f"inconclusive (~{e.samples_needed} samples)"
    if v == "same":
        return f"same (±{e.min_effect_pct:g}%)"
    return v


def duet_comparison(name: str, rows: Sequence[CaseResult], result: DuetResult) -> Comparison:
    """Side a against side b as `compare` shows two cases, with `sensor_us_per_pkt` judged on the paired
    per-sample ratios (the duet's verdict); the other metrics by the unpaired effect of `compare`."""
    by_case = {r.case: r for r in rows}
    a, b = by_case[result.a_case], by_case[result.b_case]
    cmp = compare_tables(f"{name} side a", [a], f"{name} side b", [b], min_effect_pct=result.effect.min_effect_pct)
    for row in cmp.rows:
        d = row.metrics.get(PAIRED_METRIC)
        if d is None:
            continue
        e = result.effect
        row.metrics[PAIRED_METRIC] = dataclasses.replace(
            d, effect_pct=e.effect_pct, effect_ci=e.effect_ci, verdict=e.verdict, direction=e.verdict,
            samples_needed=e.samples_needed, better=metric(PAIRED_METRIC).judge(e.verdict), level=result.ci_level,
            paired=True)
    return cmp


def compare_text(fmt: str, cmp: Comparison, result: DuetResult) -> str:
    """`compare DUET` in each format: the comparison, marked paired for the duet's metric, and the pair row."""
    if fmt == "json":
        return export.to_json({**dataclasses.asdict(cmp), "duet": pair_row(result)})
    if fmt == "csv":
        return compare_out.to_csv(cmp)
    head = (f"duet {result.pair_id} (paired: both sides on the same packets at the same time): "
            f"{PAIRED_METRIC} ratio b/a {_num(result.ratio)} "
            + (f"[{_num(result.ratio_ci[0])}–{_num(result.ratio_ci[1])}] ({result.ci_level:.1%} CI) "
               if result.ratio_ci else "")
            + f"over {result.n} samples; verdict {_verdict(result)}; the other metrics: unpaired\n")
    body = compare_out.to_html(cmp) if fmt == "html" else compare_out.to_table(cmp)
    return body if fmt == "html" else head + body

