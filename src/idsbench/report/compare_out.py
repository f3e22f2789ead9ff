"""Renderers of analysis.compare_campaigns: terminal table, JSON, CSV, self-contained HTML."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from typing import Any

import jinja2

from idsbench.analysis.compare import Comparison, MatchedCase
from idsbench.report.fmt import number
from idsbench.report.tables import text_table
from idsbench.store.layout import PROBE_FILE

ARROWS = {"higher": "▲ higher", "lower": "▼ lower", "same": "≈ CIs overlap", "n/a": "n/a"}


def _case_title(row: MatchedCase) -> str:
    parts = [f"{k}={v}" for k, v in row.params.items()]
    return ", ".join(parts) or f"{row.base_case} vs {row.contender_case}"


def _ci(ci: tuple[float, float] | None) -> str:
    if not ci or number(ci[0], 2) == number(ci[1], 2):
        return ""
    return f"[{number(ci[0], 2)}–{number(ci[1], 2)}]"


def _lines(cmp: Comparison) -> list[dict[str, Any]]:
    """Flat rows: one per matched case × metric."""
    out = []
    for row in cmp.rows:
        for metric, d in row.metrics.items():
            out.append({"case": _case_title(row), "base_case": row.base_case,
                        "contender_case": row.contender_case, "metric": metric, **asdict(d)})
    return out


def _header(cmp: Comparison) -> str:
    text = f"base: {cmp.base}   contender: {cmp.contender}\n"
    if cmp.differs:
        text += "differs: " + ", ".join(f"{k} {a} → {b}" for k, (a, b) in cmp.differs.items()) + "\n"
    text += f"matched on: {', '.join(cmp.match_keys) or '(single case each)'}; {len(cmp.rows)} case(s)\n"
    if cmp.host_differs:
        text += f"host differs ({PROBE_FILE}, sensor.set):\n" + "".join(f"  {d}\n" for d in cmp.host_differs)
    return text


def to_table(cmp: Comparison) -> str:
    out = _header(cmp)
    for row in cmp.rows:
        lb, lc = (f"{level:.0%}" for level in row.ci_level)
        headers = ["metric", f"base [{lb} CI]", f"contender [{lc} CI]", "difference", "percent", "verdict"]
        body = [[m, f"{number(d.base, 2)} {_ci(d.base_ci)}", f"{number(d.contender, 2)} {_ci(d.contender_ci)}",
                 number(d.diff, 2), f"{number(d.pct, 1)}%" if d.pct is not None else "–",
                 ARROWS[d.direction]] for m, d in row.metrics.items()]
        out += f"\n== {_case_title(row)} (samples {row.samples[0]} vs {row.samples[1]})\n"
        out += text_table(headers, body, right_from=1)
    for name, cases in (("only in base", cmp.only_base), ("only in contender", cmp.only_contender)):
        if cases:
            out += f"\n{name}: {', '.join(cases)}\n"
    return out


def to_json(cmp: Comparison) -> str:
    return json.dumps(asdict(cmp), indent=2, default=str) + "\n"


def to_csv(cmp: Comparison) -> str:
    buf = io.StringIO()
    fields = ["case", "base_case", "contender_case", "metric", "base", "base_ci_lo", "base_ci_hi", "contender",
              "contender_ci_lo", "contender_ci_hi", "diff", "pct", "ci_overlap", "direction"]
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for line in _lines(cmp):
        bci, cci = line.pop("base_ci") or [None, None], line.pop("contender_ci") or [None, None]
        writer.writerow({**line, "base_ci_lo": bci[0], "base_ci_hi": bci[1],
                         "contender_ci_lo": cci[0], "contender_ci_hi": cci[1]})
    return buf.getvalue()


def to_html(cmp: Comparison) -> str:
    env = jinja2.Environment(loader=jinja2.PackageLoader("idsbench.report", "templates"), autoescape=True)
    cases = [{"title": _case_title(r), "samples": list(r.samples),
              "ci_level": " vs ".join(f"{level:.0%}" for level in r.ci_level),
              "metrics": [{"name": m, "base": f"{number(d.base, 2)} {_ci(d.base_ci)}",
                           "contender": f"{number(d.contender, 2)} {_ci(d.contender_ci)}",
                           "diff": number(d.diff, 2),
                           "pct": f"{number(d.pct, 1)}%" if d.pct is not None else "–",
                           "direction": d.direction, "verdict": ARROWS[d.direction]}
                          for m, d in r.metrics.items()]} for r in cmp.rows]
    return env.get_template("compare.html.j2").render(cmp=cmp, header=_header(cmp), cases=cases)
