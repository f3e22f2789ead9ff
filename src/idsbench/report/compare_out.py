"""Renderers of analysis.compare_campaigns: terminal table, JSON, CSV, self-contained HTML."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from typing import Any

import jinja2

from idsbench.analysis.compare import Comparison, MatchedCase, MetricDelta
from idsbench.metrics import metric
from idsbench.report.fmt import number
from idsbench.report.tables import text_table
from idsbench.store.layout import PROBE_FILE

ARROWS = {"higher": "▲ higher", "lower": "▼ lower", "same": "= same", "inconclusive": "? inconclusive", "n/a": "n/a"}


def verdict_text(d: MetricDelta) -> str:
    """'▲ higher +12.3% [+10.1, +14.0] (worse)', '= same (±2%)', '? inconclusive: ~N samples/side'; ', paired'
    when the effect came from per-round ratios."""
    arrow = ARROWS.get(d.verdict, d.verdict)
    ci = f" [{d.effect_ci[0]:+.1f}, {d.effect_ci[1]:+.1f}]" if d.effect_ci else ""
    size = f" {d.effect_pct:+.1f}%{ci}" if d.effect_pct is not None else ""
    paired = ", paired" if d.paired else ""
    if d.verdict == "same":
        return f"{arrow} (±{d.min_effect_pct:g}%){size}{paired}"
    if d.verdict == "inconclusive":
        return f"{arrow}{size}: ~{d.samples_needed} {'rounds' if d.paired else 'samples/side'}{paired}"
    if d.verdict in ("higher", "lower"):
        return f"{arrow}{size}" + (f" ({d.better})" if d.better else "") + paired
    return arrow


def _show(key: str, value: float | None) -> str:
    return metric(key).show(value)


def _with_ci(key: str, value: float | None, ci: tuple[float, float] | None) -> str:
    text = _show(key, value)
    if ci and _show(key, ci[0]) != _show(key, ci[1]):
        text += f" [{_show(key, ci[0])}–{_show(key, ci[1])}]"
    return text


def _case_title(row: MatchedCase) -> str:
    parts = [f"{k}={v}" for k, v in row.params.items()]
    return ", ".join(parts) or f"{row.base_case} vs {row.contender_case}"


def _lines(cmp: Comparison) -> list[dict[str, Any]]:
    """Flat rows: one per matched case × metric."""
    out = []
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
        text += (f"verdicts: effect = ratio of medians with its 95% bootstrap CI (paired: median of the per-round "
                 f"ratios, CI over rounds, where the samples ran interleaved); same = the CI within "
                 f"±{min_effect:g}%, higher/lower = the CI excludes 0 and the effect is ≥ {min_effect:g}%\n")
    if cmp.host_differs:
        text += f"host differs ({PROBE_FILE}, sensor.set):\n" + "".join(f"  {d}\n" for d in cmp.host_differs)
    return text


def to_table(cmp: Comparison) -> str:
    out = _header(cmp)
    for row in cmp.rows:
        lb, lc = (f"{level:.0%}" for level in row.ci_level)
        headers = ["metric", "unit", f"base [{lb} CI]", f"contender [{lc} CI]", "difference", "verdict"]
        body = [[m, metric(m).unit, _with_ci(m, d.base, d.base_ci), _with_ci(m, d.contender, d.contender_ci),
                 _show(m, d.diff), verdict_text(d)] for m, d in row.metrics.items()]
        out += f"\n== {_case_title(row)} (samples {row.samples[0]} vs {row.samples[1]})\n"
        out += text_table(headers, body, right_from=2)
    for name, cases in (("only in base", cmp.only_base), ("only in contender", cmp.only_contender)):
        if cases:
            out += f"\n{name}: {', '.join(cases)}\n"
    return out


def to_json(cmp: Comparison) -> str:
    return json.dumps(asdict(cmp), indent=2, default=str) + "\n"


def to_csv(cmp: Comparison) -> str:
    buf = io.StringIO()
    fields = ["case", "base_case", "contender_case", "metric", "base", "base_ci_lo", "base_ci_hi", "contender",
              "contender_ci_lo", "contender_ci_hi", "diff", "pct", "ci_overlap", "direction", "effect_pct",
              "effect_ci_lo", "effect_ci_hi", "verdict", "samples_needed", "better", "level", "min_effect_pct", "paired"]
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for line in _lines(cmp):
        bci, cci = line.pop("base_ci") or [None, None], line.pop("contender_ci") or [None, None]
        eci = line.pop("effect_ci") or [None, None]
        writer.writerow({**line, "base_ci_lo": bci[0], "base_ci_hi": bci[1],
                         "contender_ci_lo": cci[0], "contender_ci_hi": cci[1],
                         "effect_ci_lo": eci[0], "effect_ci_hi": eci[1]})
    return buf.getvalue()


def to_html(cmp: Comparison) -> str:
    env = jinja2.Environment(loader=jinja2.PackageLoader("idsbench.report", "templates"), autoescape=True)
    cases = [{"title": _case_title(r), "samples": list(r.samples),
              "ci_level": " vs ".join(f"{level:.0%}" for level in r.ci_level),
              "metrics": [{"name": m, "base": _with_ci(m, d.base, d.base_ci),
                           "contender": _with_ci(m, d.contender, d.contender_ci),
                           "diff": _show(m, d.diff),
                           "pct": f"{number(d.pct, 1)}%" if d.pct is not None else "–",
                           "direction": d.direction, "verdict": verdict_text(d)}
                          for m, d in r.metrics.items()]} for r in cmp.rows]
    return env.get_template("compare.html.j2").render(cmp=cmp, header=_header(cmp), cases=cases)
