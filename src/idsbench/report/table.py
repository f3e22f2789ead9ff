"""The typed table every human output is made of (the results table, compare, trend, `results --rules`,
the report's sections): columns with a key and a title, rows of values. A number enters as a `Measure`
(metric key, value, CI) or a `Figure` (value, digits) and is formatted only when rendered, by the metric
registry's one formatter (`idsbench.metrics.number`): the same value prints alike in every table and
format. `report/export.py` renders tables as text and HTML (and records as JSON and CSV)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from idsbench.metrics import metric, number

Align = Literal["left", "right"]


@dataclass(frozen=True)
class Measure:
    """A metric's value (a median, a difference) with its CI, shown as the registry says (scale, digits)."""

    metric: str
    value: float | None
    ci: tuple[float, float] | None = None
    note: str = ""      # a second line under it (e.g. the verdict against a base)


@dataclass(frozen=True)
class Figure:
    """A number that is no registered metric (a share, a bound, a tick count), with its decimals and suffix."""

    value: float | None
    digits: int = 1
    suffix: str = ""    # e.g. '%' (after a number only; '–' stays bare)
    ci: tuple[float, float] | None = None
    note: str = ""


@dataclass(frozen=True)
class Text:
    """Text with what the HTML page adds to it."""

    text: str
    note: str = ""      # a second, smaller line
    css: str = ""       # the cell's class (status-ok, dir-higher …)
    swatch: str = ""    # a colour square before the text (the setup's colour in the report)
    tip: str = ""       # the cell's title attribute


Value = Measure | Figure | Text | str | int | None


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    align: Align = "left"
    tip: str = ""       # HTML: the header's title attribute (what the column means)


def metric_column(key: str) -> Column:
    """A column of one registered metric, titled as the registry titles it (unit included)."""
    return Column(key, metric(key).title, "right")


@dataclass(frozen=True)
class Row:
    cells: tuple[Value, ...]
    css: str = ""       # the row's class in HTML (e.g. 'failed')


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    title: str = ""                 # text: a '== title' line before it; HTML: its caption
    notes: tuple[str, ...] = ()     # lines after it
    css: str = ""                   # HTML class of the table
    id: str = ""                    # HTML id of the table


def table(columns: Sequence[Column], rows: Sequence[Sequence[Value] | Row], *, title: str = "",
          notes: Sequence[str] = (), css: str = "", id: str = "") -> Table:
    """A Table from plain sequences (a row may be a `Row` to carry its class)."""
    made = tuple(r if isinstance(r, Row) else Row(tuple(r)) for r in rows)
    for r in made:
        if len(r.cells) != len(columns):
            raise ValueError(f"a row of {len(r.cells)} cells in a table of {len(columns)} columns")
    return Table(tuple(columns), made, title, tuple(notes), css, id)


@dataclass(frozen=True)
class Cell:
    """A value as printed: its text, the CI beside it, a note under it, and the HTML extras."""

    text: str
    ci: str = ""
    note: str = ""
    css: str = ""
    swatch: str = ""
    tip: str = ""
    numeric: bool = False


def cell(value: Value) -> Cell:
    """The one place a table value becomes text."""
    if value is None:
        return Cell("–")
    if isinstance(value, Measure):
        m = metric(value.metric)
        return Cell(m.show(value.value), m.show_ci(value.ci) if value.value is not None else "", value.note,
                    numeric=True)
    if isinstance(value, Figure):
        if value.value is None:
            return Cell("–", note=value.note, numeric=True)
        lo, hi = (number(x, value.digits) for x in value.ci) if value.ci else ("", "")
        return Cell(number(value.value, value.digits) + value.suffix, f"[{lo}–{hi}]" if lo != hi else "",
                    value.note, numeric=True)
    if isinstance(value, Text):
        return Cell(value.text, note=value.note, css=value.css, swatch=value.swatch, tip=value.tip)
    if isinstance(value, bool):  # before int: a bool is an int
        return Cell("yes" if value else "no")
    if isinstance(value, int):
        return Cell(f"{value:,}", numeric=True)
    return Cell(value)
