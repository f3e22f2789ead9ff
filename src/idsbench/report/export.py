"""One exporter per output format, used by `results`, `compare`, `trend` and the report:
- JSON: `to_json(document)` — the machine documents as they are (the results rows, a Comparison, the
  trend series, the rule rows);
- CSV: `to_csv(records)` — one line per record, nested values flattened by one convention (`flat`);
- text: `to_text(tables)` — `report.table.Table`s as aligned columns;
- HTML: `to_html(table)` — a Table as an HTML table, the `table` filter of `html_env()`, whose
  templates (report, compare, trend pages) render every table through it.
Numbers in tables are formatted only here, through `report.table.cell` (the metric registry's format)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from idsbench.report.table import Cell, Table, cell

if TYPE_CHECKING:
    import jinja2
    from markupsafe import Markup

__all__ = ["flat", "html_env", "to_csv", "to_html", "to_json", "to_text"]


def to_json(document: object) -> str:
    """JSON of a machine document, indented; values JSON lacks (paths, dates) as their str()."""
    return json.dumps(document, indent=2, default=str) + "\n"


def flat(record: Mapping[str, object]) -> dict[str, object]:
    """One CSV line: `<key>_ci` [lo, hi] -> `<key>_ci_lo`, `<key>_ci_hi`; a mapping -> `<key>.<sub>`;
    a list -> its items joined with '; '."""
    out: dict[str, object] = {}
    for key, value in record.items():
        if key.endswith("_ci"):
            lo, hi = value if isinstance(value, (list, tuple)) and len(value) == 2 else (None, None)
            out[f"{key}_lo"], out[f"{key}_hi"] = lo, hi
        elif isinstance(value, Mapping):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        elif isinstance(value, (list, tuple)):
            out[key] = "; ".join(str(v) for v in value)
        else:
            out[key] = value
    return out


def to_csv(records: Iterable[Mapping[str, object]], fields: Sequence[str] | None = None) -> str:
    """CSV with a header: `fields` (a contract's columns; other keys left out), or every key in order of
    appearance. None is an empty cell; lines end with '\\n'."""
    flats = [flat(r) for r in records]
    if fields is None:
        fields = list(dict.fromkeys(k for f in flats for k in f))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(flats)
    return buf.getvalue()


def _text(c: Cell) -> str:
    return " ".join(x for x in (c.text, c.ci, f"({c.note})" if c.note else "") if x)


def to_text(tables: Table | Sequence[Table]) -> str:
    """Aligned columns (numbers and right-aligned columns to the right), one line per row; a table's
    title as a '== title' line before it, its notes after it."""
    out = []
    for t in (tables,) if isinstance(tables, Table) else tables:
        body = [[_text(cell(v)) for v in r.cells] for r in t.rows]
        widths = [max(len(c.title), *(len(r[i]) for r in body)) if body else len(c.title)
                  for i, c in enumerate(t.columns)]
        lines = [f"\n== {t.title}"] if t.title else []
        lines += ["  ".join(c.title.ljust(w) for c, w in zip(t.columns, widths)).rstrip(),
                  "  ".join("-" * w for w in widths)]
        for r in body:
            lines.append("  ".join(text.rjust(w) if c.align == "right" else text.ljust(w)
                                   for text, c, w in zip(r, t.columns, widths)).rstrip())
        out.append("\n".join([*lines, *t.notes]) + "\n")
    return "".join(out)


def to_html(t: Table) -> Markup:
    """The table as HTML (escaped): numbers in `td.num`, a CI and a note on lines of their own."""
    from markupsafe import Markup

    def attrs(**values: str) -> Markup:
        return Markup("").join(Markup(' {}="{}"').format(k, v) for k, v in values.items() if v)

    def td(c: Cell, right: bool) -> Markup:
        classes = " ".join(dict.fromkeys(x for x in ("num" if c.numeric or right else "", *c.css.split()) if x))
        swatch = Markup('<span class="swatch" style="background:{}"></span>').format(c.swatch) if c.swatch else ""
        ci = Markup('<br><span class="ci">{}</span>').format(c.ci) if c.ci else ""
        note = Markup("<br><small>{}</small>").format(c.note) if c.note else ""
        return Markup("<td{}>{}{}{}{}</td>").format(attrs(**{"class": classes, "title": c.tip}), swatch, c.text, ci, note)

    head = Markup("").join(Markup("<th{}>{}</th>").format(attrs(title=c.tip), c.title) for c in t.columns)
    rows = Markup("\n").join(Markup("<tr{}>{}</tr>").format(attrs(**{"class": r.css}),
                                                             Markup("").join(td(cell(v), col.align == "right")
                                                                            for v, col in zip(r.cells, t.columns)))
                             for r in t.rows)
    caption = Markup("<caption>{}</caption>").format(t.title) if t.title else ""
    notes = Markup("").join(Markup('\n<p class="note">{}</p>').format(n) for n in t.notes)
    return Markup("<table{}>{}<thead><tr>{}</tr></thead><tbody>\n{}\n</tbody></table>{}").format(
        attrs(**{"class": t.css, "id": t.id}), caption, head, rows, notes)


def html_env(*, strict: bool = False) -> jinja2.Environment:
    """The templates of idsbench.report (autoescaped), with the `table` filter (`to_html`)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("idsbench.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined if strict else jinja2.Undefined)
    env.filters["table"] = to_html
    return env
