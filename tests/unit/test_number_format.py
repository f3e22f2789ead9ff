"""The one number format (idsbench.metrics.number, Metric.show/with_ci) and the same value printed alike in
every output: the results table (text and report), compare (text and HTML), trend (text and HTML), the
report's A/B, builds/rulesets and engines tables."""

from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path

import pytest

from idsbench.analysis import case_table
from idsbench.cli.main import main
from idsbench.metrics import metric, number
from idsbench.report import write_report
from idsbench.report.table import Figure, Measure, cell
from idsbench.store.reader import load_campaign
from tests.fakecampaign import T0, FakeCase, write_campaign


@pytest.mark.parametrize(("value", "digits", "text"), [
    (1234.5678, 1, "1,234.6"),      # ≥ 1000 keeps its decimals (report/fmt.number used to drop them)
    (40, 1, "40.0"),                # an integral value still shows the metric's decimals
    (0.0, 3, "0.000"),
    (-0.0004, 3, "0.000"),          # a rounded zero has no sign
    (-1234.5, 0, "-1,234"),         # round half to even, as Python's format
    (1e9, 0, "1,000,000,000"),
    (None, 2, "–"),
    (float("nan"), 1, "–"),
])
def test_number_rule(value: float | None, digits: int, text: str) -> None:
    assert number(value, digits) == text


def test_a_metric_scales_rounds_and_drops_a_ci_that_prints_as_one_number() -> None:
    rss = metric("sensor_rss_peak_bytes")  # MiB, 1 decimal
    assert rss.show(2.5 * 2**30) == "2,560.0"
    drop = metric("drop_ratio")  # %, 3 decimals
    assert drop.with_ci(0.01005, (0.0098, 0.0102)) == "1.005 [0.980–1.020]"
    assert drop.with_ci(0.01, (0.0100001, 0.0100002)) == "1.000"  # both ends print alike: no CI
    assert drop.with_ci(None, (0.0, 1.0)) == "–"
    assert cell(Measure("drop_ratio", 0.01005, (0.0098, 0.0102))).text == drop.show(0.01005)
    assert cell(Figure(0.5, 1, "%")).text == "0.5%" and cell(Figure(None, 1, "%")).text == "–"


JIT = [1.0, 1.02, 0.98, 1.01, 0.99]


def _campaign(root: Path, level: float, day: int) -> Path:
    """Two sensor configurations (an A/B axis); sensor CPU above 1000 with decimals, where formats differed."""
    cases = [FakeCase(samples=5, sensor_cpu=[level * j for j in JIT]),
             FakeCase(samples=5, config="tuned.yaml", sensor_cpu=[level * 1.1 * j for j in JIT])]
    root = write_campaign(root, cases, name=root.name)
    doc = json.loads((root / "campaign.json").read_text())
    doc["created_unix"] = T0 + 86400 * day
    (root / "campaign.json").write_text(json.dumps(doc))
    return root


def _out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) in (0, 1)
    return capsys.readouterr().out


def test_the_same_value_prints_alike_in_every_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _campaign(tmp_path / "a", 1234.56, 0), _campaign(tmp_path / "b", 2345.67, 1)
    row = next(r for r in case_table(load_campaign(a)) if r.params.config == "default")
    m = metric("sensor_cpu_pct")
    value, ci = m.show(row.medians["sensor_cpu_pct"]), m.show_ci(row.cis["sensor_cpu_pct"])
    assert re.fullmatch(r"1,2\d\d\.\d", value) and re.fullmatch(r"\[1,2\d\d\.\d–1,2\d\d\.\d\]", ci), (value, ci)
    text, cell_html = f"{value} {ci}", f'{value}<br><span class="ci">{ci}</span>'

    assert text in _out(capsys, ["results", str(a)])
    assert text in _out(capsys, ["compare", str(a), str(b)])
    assert cell_html in htmllib.unescape(_out(capsys, ["compare", str(a), str(b), "--format", "html"]))
    assert text in _out(capsys, ["trend", str(a), str(b), "--metric", "sensor_cpu_pct"])
    trend_html = htmllib.unescape(_out(capsys, ["trend", str(a), str(b), "--metric", "sensor_cpu_pct",
                                                "--format", "html"]))
    assert cell_html in trend_html

    report = htmllib.unescape(write_report(a).read_text())
    results = report[report.index('id="case-results"'):]
    assert cell_html in results[:results.index("</table>")]
    ab = report[report.index('id="ab"'):]
    assert cell_html in ab[:ab.index("</table>")]  # the A/B table's base column


def test_builds_rulesets_and_engines_tables_print_the_results_tables_format() -> None:
    from idsbench.report.engines import engine_section
    from idsbench.report.html import _axis_views
    from idsbench.report.tables import results_table
    from idsbench.store.schema import CaseParams, CaseResult

    def row(rules: str, engine: str, cpu: float) -> CaseResult:
        return CaseResult(case=f"{engine}-{rules}", samples=6, medians={"sensor_cpu_pct": cpu},
                          cis={"sensor_cpu_pct": (cpu - 10, cpu + 10)},
                          params=CaseParams(trace="t", replayers=1, rate="1000pps", engine=engine, rules=rules),
                          values={"sensor_cpu_pct": tuple(cpu * f for f in (0.99, 1.0, 1.01, 1.0, 0.995, 1.005))})

    rows = [row("et", "suricata", 1234.56), row("et-small", "suricata", 1111.11), row("et", "snort", 1500.5)]
    shown = metric("sensor_cpu_pct").show(1234.56)
    assert shown == "1,234.6"
    results = results_table(rows)
    col = [c.key for c in results.columns].index("sensor_cpu_pct")
    assert cell(results.rows[0].cells[col]).text == shown
    views = {v["axis"]: v["table"] for v in _axis_views(rows)}
    for table in views.values():
        col = [c.key for c in table.columns].index("sensor_cpu_pct")
        assert cell(table.rows[0].cells[col]).text.startswith(f"{shown} → ")
    section = engine_section(type("C", (), {"doc": _doc_stub()})(), rows[::2])  # type: ignore[arg-type]
    assert section is not None
    col = [c.key for c in section.table.columns].index("sensor_cpu_pct")
    assert shown in {cell(r.cells[col]).text for r in section.table.rows}


def _doc_stub() -> object:
    from idsbench.store.campaigndoc import CampaignDoc

    return CampaignDoc.model_validate({"schema": 1, "created_unix": T0, "spec": {"name": "fmt"}, "environment": {}, "inputs": {},
                                       "cases": []})
