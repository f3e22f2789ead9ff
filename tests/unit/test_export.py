"""report/export.py: one exporter per format over report/table.py's typed tables (text, HTML) and over
records (JSON, CSV)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from idsbench.report.export import flat, html_env, to_csv, to_html, to_json, to_text
from idsbench.report.table import Column, Figure, Measure, Row, Text, metric_column, table


def _table():
    return table([Column("name", "name"), metric_column("drop_ratio"), Column("share", "share", "right")],
                 [["a<b>", Measure("drop_ratio", 0.01005, (0.0098, 0.0102), note="vs x: same"), Figure(0.5, 1, "%")],
                  Row(("c", Measure("drop_ratio", None), Figure(None)), css="failed")],
                 title="T & co", notes=["a note"], css="results", id="t1")


def test_text_aligns_numbers_right_and_prints_title_ci_note_and_notes() -> None:
    assert to_text(_table()) == (
        "\n== T & co\n"
        "name  drop %                            share\n"
        "----  --------------------------------  -----\n"
        "a<b>  1.005 [0.980–1.020] (vs x: same)   0.5%\n"
        "c                                    –      –\n"
        "a note\n")


def test_html_escapes_text_and_marks_numbers_cis_notes_and_row_classes() -> None:
    html = str(to_html(_table()))
    assert html.startswith('<table class="results" id="t1"><caption>T &amp; co</caption>')
    assert "<th>drop %</th>" in html and "<td>a&lt;b&gt;</td>" in html
    assert '<td class="num">1.005<br><span class="ci">[0.980–1.020]</span><br><small>vs x: same</small></td>' in html
    assert '<tr class="failed"><td>c</td><td class="num">–</td><td class="num">–</td></tr>' in html
    assert html.endswith('</table>\n<p class="note">a note</p>')
    page = html_env().from_string("{{ t | table }}").render(t=_table())
    assert page == html  # the templates' filter is the same exporter


def test_a_swatch_and_a_tip_reach_html_only() -> None:
    t = table([Column("setup", "setup", tip="isolation")], [[Text("vm", swatch="#123456", tip="a VM", css="x")]])
    assert '<th title="isolation">setup</th>' in str(to_html(t))
    assert '<td class="x" title="a VM"><span class="swatch" style="background:#123456"></span>vm</td>' in str(to_html(t))
    assert to_text(t).splitlines()[-1] == "vm"


def test_a_row_of_the_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError, match="2 cells in a table of 1 columns"):
        table([Column("a", "a")], [["x", "y"]])


def test_csv_flattens_cis_mappings_and_lists_and_keeps_a_contracts_columns() -> None:
    records = [{"case": "c1", "x": 1.5, "x_ci": [1.0, 2.0], "counts": {"ok": 2}, "labels": ["a", "b"], "none": None},
               {"case": "c2", "x": None, "x_ci": None, "counts": {"failed": 1}, "labels": [], "extra": True}]
    assert flat(records[0]) == {"case": "c1", "x": 1.5, "x_ci_lo": 1.0, "x_ci_hi": 2.0, "counts.ok": 2,
                                "labels": "a; b", "none": None}
    text = to_csv(records)
    assert text.splitlines()[0] == "case,x,x_ci_lo,x_ci_hi,counts.ok,labels,none,counts.failed,extra"
    assert list(csv.DictReader(io.StringIO(text)))[1]["counts.failed"] == "1" and "\r" not in text
    assert to_csv(records, ["x", "case"]) == "x,case\n1.5,c1\n,c2\n"


def test_json_is_the_document_itself() -> None:
    doc = [{"a": 1, "b": [1, 2], "c": None}]
    assert json.loads(to_json(doc)) == doc and to_json(doc).endswith("\n")
