"""A duet campaign in the CLI's outputs: `idsbench results` (each side's row with `duet_side` and
`duet_pair`, plus one row per pair) and `idsbench compare DUET` (side a against side b, the cost per
packet judged on the paired per-sample ratios)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence

from idsbench.analysis.compare import Comparison, compare_tables
from idsbench.analysis.duet import DuetResult, pair_row
from idsbench.analysis.stats import median
from idsbench.metrics import metric
from idsbench.report import compare_out, export, tables
from idsbench.report.table import Column, Table, Text, Value, table
from idsbench.store.schema import CaseResult

PAIRED_METRIC = "sensor_us_per_pkt"


def results_text(fmt: str, rows: Sequence[CaseResult], pairs: Sequence[DuetResult]) -> str:
    """The results of a duet campaign: the case rows (sides) then the pair rows."""
    records: list[Mapping[str, object]] = [*(r.to_row() for r in rows), *(pair_row(p) for p in pairs)]
    if fmt == "json":
        return export.to_json(records)
    if fmt == "csv":
        return export.to_csv(records)
    return tables.to_table(rows) + "\n" + pairs_table(pairs) + "\n" + export.to_text(study_table(pairs)) + "\n"


def cell_label(cell: Mapping[str, object]) -> str:
    """A cell's column title: its axes' short names and values ("replayers=2"); "all" for none."""
    return ", ".join(f"{key.split('.')[-1]}={value}" for key, value in cell.items()) or "all"


def study_table(pairs: Sequence[DuetResult]) -> Table:
    """The study's table, paired: rows = the side axis's values (the reference first), columns = the
    matrix's cells (load levels …). A side b's entry: its ratio of CPU per packet to the reference with
    the CI, the loss difference b − a (percentage points) with its CI, the memory ratio, the NDR ratio
    where searched, and its verdict; under it the absolute figures (µs per packet, loss %). The
    reference's entry: its own absolute figures (the median over its pairs in that cell)."""
    cells = list(dict.fromkeys(json.dumps(p.cell, sort_keys=False) for p in pairs))
    axis = next((p.axis for p in pairs if p.axis), None)
    ref = next((p.ref for p in pairs if p.ref is not None), None)
    values = list(dict.fromkeys([ref or "A/A", *(p.b_value or "A/A" for p in pairs)]))
    by = {(json.dumps(p.cell, sort_keys=False), p.b_value or "A/A"): p for p in pairs}
    rows: list[list[Value]] = []
    for value in values:
        row: list[Value] = [Text(f"{value} (reference)" if value == ref and axis else value)]
        for cell in cells:
            if value == ref and axis:
                refs = [p for p in pairs if json.dumps(p.cell, sort_keys=False) == cell]
                us = median([p.side_median("a_us_per_pkt") for p in refs])
                loss = median([p.side_median("a_loss_pct") for p in refs])
                row.append(Text(f"{_num3(us)} µs/pkt", note=f"loss {_pct(loss)}"))
                continue
            p = by.get((cell, value))
            row.append(_study_entry(p) if p is not None else Text("–"))
        rows.append(row)
    columns = [Column("value", axis or "duet (A/A)"), *(Column(c, cell_label(json.loads(c)), "right") for c in cells)]
    notes = ["each entry: CPU per packet b / reference [CI], Δloss = b − a in percentage points [CI], memory "
             "ratio b/a, NDR ratio where searched, the verdict; under it the absolute figures",
             "unattributed: host softirq time per packet (the mirror and delivery paths) no side is charged for"]
    return table(columns, rows, title="study table (paired)", notes=notes)


def _study_entry(p: DuetResult) -> Text:
    ci = f" [{_num(p.ratio_ci[0])}–{_num(p.ratio_ci[1])}]" if p.ratio_ci else ""
    diff_ci = p.loss_diff_ci
    loss = f"Δloss {_pp(p.loss_diff_pp)}" + (f" [{_pp(diff_ci[0])}, {_pp(diff_ci[1])}]" if diff_ci else "")
    mem = f"mem ×{p.mem_ratio:.3f}" if p.mem_ratio is not None else "mem –"
    ndr = f"; NDR ×{_num(p.search.ratio)}" if p.search is not None and p.search.ratio is not None else ""
    absolute = (f"{_num3(p.side_median('b_us_per_pkt'))} µs/pkt vs {_num3(p.side_median('a_us_per_pkt'))}, "
                f"loss {_pct(p.side_median('b_loss_pct'))}; unattributed {_num3(p.unattributed_us_per_pkt)} µs/pkt; "
                f"{p.exact}/{len(p.samples)} exact")
    return Text(f"{_num(p.ratio)}{ci}; {loss}; {mem}{ndr}; {_verdict(p)}", note=absolute)


def _num3(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}%"


def _pp(x: float | None) -> str:
    return "–" if x is None else f"{x:+.2f} pp"


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
    v = p.verdict
    if v == "inconclusive" and p.samples_needed:
        return f"inconclusive (~{p.samples_needed} samples{f' of {p.replay_s:g} s' if p.replay_s else ''})"
    if v == "same":
        return f"same (±{p.effect.min_effect_pct:g}%)"
    if v == "emulated":
        return "emulated (not judged)"
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

