"""`compare` in every format (analysis.compare_campaigns): a delta table per matched case for the terminal
and the HTML page, the Comparison itself as JSON, one CSV line per case and metric."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict

from idsbench.analysis.compare import Comparison, MatchedCase, MetricDelta
from idsbench.analysis.effect import LEVEL as REQUESTED
from idsbench.analysis.effect import samples_for
from idsbench.metrics import metric
from idsbench.report import export
from idsbench.report.table import Column, Figure, Measure, Table, Text, Value, table
from idsbench.store.layout import PROBE_FILE

ARROWS = {"higher": "▲ higher", "lower": "▼ lower", "same": "= same", "inconclusive": "? inconclusive", "n/a": "n/a"}


def verdict_text(d: MetricDelta) -> str:
    """'▲ higher +12.3% [+10.1, +14.0] 95% CI (worse)', '= same (±2%)', '? inconclusive +3.0% [-1.2, +7.0] 50% CI:
    ~6 samples/side'; ', paired' when the effect came from per-round ratios. The CI's level is the one it was
    computed at (analysis.effect.reached_level)."""
    arrow = ARROWS.get(d.verdict, d.verdict)
    ci = f" [{d.effect_ci[0]:+.1f}, {d.effect_ci[1]:+.1f}] {d.level:.0%} CI" if d.effect_ci else ""
    size = f" {d.effect_pct:+.1f}%{ci}" if d.effect_pct is not None else ""
    paired = ", paired" if d.paired else ""
    if d.verdict == "same":
        return f"{arrow} (±{d.min_effect_pct:g}%){size}{paired}"
    if d.verdict == "inconclusive":
        return f"{arrow}{size}: ~{d.samples_needed} {'rounds' if d.paired else 'samples/side'}{paired}"
    if d.verdict in ("higher", "lower"):
        return f"{arrow}{size}" + (f" ({d.better})" if d.better else "") + paired
    return arrow


def delta_table(metrics: Mapping[str, MetricDelta], base: str, contender: str, title: str = "",
                levels: tuple[float, float] | None = None, *, keys: bool = True) -> Table:
    """One row per metric: base and contender medians [CIs], their difference and change, the verdict —
    the shape of `compare` (metrics by key, as `--fail-on` and the CSV name them, with their unit) and
    of the report's A/B section (`keys=False`: by their titles, which carry the unit)."""
    lb, lc = (f" [{level:.0%} CI]" for level in levels) if levels else ("", "")
    names = [Column("metric", "metric"), Column("unit", "unit")] if keys else [Column("metric", "metric")]
    columns = (*names, Column("base", f"{base}{lb}", "right"), Column("contender", f"{contender}{lc}", "right"),
               Column("diff", "difference", "right"), Column("pct", "change", "right"), Column("verdict", "verdict"))
    rows: list[list[Value]] = []
    for k, d in metrics.items():
        name: list[Value] = [k, metric(k).unit] if keys else [Text(metric(k).title, tip=k)]
        rows.append([*name, Measure(k, d.base, d.base_ci), Measure(k, d.contender, d.contender_ci),
                     Measure(k, d.diff), Figure(d.pct, 1, "%"), Text(verdict_text(d), css=f"dir-{d.verdict}")])
    return table(columns, rows, title=title)


def _case_title(row: MatchedCase) -> str:
    parts = [f"{k}={v}" for k, v in row.params.items()]
    return ", ".join(parts) or f"{row.base_case} vs {row.contender_case}"


def _lines(cmp: Comparison) -> list[dict[str, object]]:
    """Flat rows: one per matched case × metric."""
    out: list[dict[str, object]] = []
    for row in cmp.rows:
        for key, d in row.metrics.items():
            out.append({"case": _case_title(row), "base_case": row.base_case,
                        "contender_case": row.contender_case, "metric": key, **asdict(d)})
    return out


def _header(cmp: Comparison) -> str:
    text = f"base: {cmp.base}   contender: {cmp.contender}\n"
    if cmp.differs:
        text += "differs: " + ", ".join(f"{k} {a} → {b}" for k, (a, b) in cmp.differs.items()) + "\n"
    text += f"matched on: {', '.join(cmp.match_keys) or '(single case each)'}; {len(cmp.rows)} case(s)\n"
    min_effect = next((d.min_effect_pct for r in cmp.rows for d in r.metrics.values()), None)
    if min_effect is not None:
        levels = sorted({d.level for r in cmp.rows for d in r.metrics.values() if d.effect_ci is not None})
        at = ", ".join(f"{x:.0%}" for x in levels) or "–"
        text += (f"verdicts: effect = ratio of medians with its bootstrap CI (paired: median of the per-round "
                 f"ratios, CI over rounds, where the samples ran interleaved) at {at}: the level each side's "
                 f"samples reach ({REQUESTED:.0%} needs {samples_for(REQUESTED)} per side; below it no verdict, "
                 f"only inconclusive); same = the CI within ±{min_effect:g}%, higher/lower = the CI excludes 0 "
                 f"and the effect is ≥ {min_effect:g}%\n")
    if cmp.host_differs:
        text += f"host differs ({PROBE_FILE}, sensor.set):\n" + "".join(f"  {d}\n" for d in cmp.host_differs)
    return text


def tables(cmp: Comparison) -> list[Table]:
    """One table per matched case."""
    return [delta_table(row.metrics, "base", "contender", f"{_case_title(row)} (samples {row.samples[0]} vs "
                        f"{row.samples[1]})", row.ci_level) for row in cmp.rows]


def to_table(cmp: Comparison) -> str:
    out = _header(cmp) + export.to_text(tables(cmp))
    for name, cases in (("only in base", cmp.only_base), ("only in contender", cmp.only_contender)):
        if cases:
            out += f"\n{name}: {', '.join(cases)}\n"
    return out


def to_json(cmp: Comparison) -> str:
    return export.to_json(asdict(cmp))


CSV_FIELDS = ("case", "base_case", "contender_case", "metric", "base", "base_ci_lo", "base_ci_hi", "contender",
              "contender_ci_lo", "contender_ci_hi", "diff", "pct", "ci_overlap", "direction", "effect_pct",
              "effect_ci_lo", "effect_ci_hi", "verdict", "samples_needed", "better", "level", "min_effect_pct",
              "paired")


def to_csv(cmp: Comparison) -> str:
    """One line per matched case and metric."""
    return export.to_csv(_lines(cmp), CSV_FIELDS)


def to_html(cmp: Comparison) -> str:
    return export.html_env().get_template("compare.html.j2").render(cmp=cmp, header=_header(cmp), tables=tables(cmp))
