"""report: write_report output (self-contained HTML, figures, tables) and the results/report CLIs."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from idsbench.cli import report as report_cli
from idsbench.cli import results as results_cli
from idsbench.errors import InputError
from idsbench.report import write_report
from tests.fakecampaign import FakeCase, standard_campaign, write_campaign

ALL_FIGURES = ("sensor_cpu_time", "sensor_mem_time", "host_cpu_time", "packets_cumulative",
               "host_cpu_time_without_slowest", "drop_ratio_load", "sensor_cpu_load", "overhead_vs_baseline",
               "trace_throughput", "sent_rate_time", "sender_fidelity", "loss_waterfall")
URL_ATTR = re.compile(r'(?:src|href)\s*=\s*"([^"]*)"', re.I)


def _cli(module, argv: list[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    module.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    out = io.StringIO()
    with redirect_stdout(out):
        code = args.func(args)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> tuple[Path, list[FakeCase]]:
    return standard_campaign(tmp_path_factory.mktemp("camp"), samples=5)


@pytest.fixture(scope="module")
def report(campaign) -> Path:
    return write_report(campaign[0])


def test_report_is_self_contained(report: Path):
    html = report.read_text()
    assert report.name == "report.html"
    for url in URL_ATTR.findall(html):
        assert not re.match(r"^(https?:)?//", url), url
        assert url.startswith(("data:image/svg+xml;base64,", "#", "cases/", "figures/", "tables/")), url
    assert "<script" not in html.lower()
    assert "@import" not in html and "url(" not in html


def test_report_has_table_with_cis_figures_and_raw_links(report: Path, campaign):
    root, cases = campaign
    html = report.read_text()
    for case in cases:
        assert f'href="cases/{case.case_id}/s4/summary.json"' in html
    # median [CI] cells in the results table (sensor CPU of container 4X: 85.0 [83.3–86.7])
    assert "85.0<br><span class=\"ci\">[83.3–86.7]</span>" in html
    figures = re.findall(r'<img src="data:image/svg\+xml;base64,([^"]+)" alt="[^"]+" data-figure="([^"]+)"', html)
    names = {name for _, name in figures}
    assert names == set(ALL_FIGURES)
    assert all(len(data) > 5000 for data, _ in figures)
    for name in names:
        assert (root / "figures" / f"{name}.svg").stat().st_size > 5000
        png = (root / "figures" / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10000
    assert "Fake CPU @ 2.0GHz" in html and "6.1.0-fake" in html


def test_report_tables_match_results_json(report: Path, campaign):
    root, cases = campaign
    code, out = _cli(results_cli, ["results", str(root), "--format", "json"])
    assert code == 0
    rows = json.loads(out)
    assert rows == json.loads((root / "tables" / "cases.json").read_text())
    assert len(rows) == len(cases)
    with open(root / "tables" / "cases.csv", newline="") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert [r["case"] for r in csv_rows] == [r["case"] for r in rows]
    assert float(csv_rows[-1]["sensor_cpu_pct_ci_lo"]) == rows[-1]["sensor_cpu_pct_ci"][0]


def test_results_formats(campaign):
    root, cases = campaign
    code, table = _cli(results_cli, ["results", str(root)])
    assert code == 0 and "baremetal" in table and "container" in table and "4X" in table
    code, text = _cli(results_cli, ["results", str(root), "--format", "csv"])
    assert text.splitlines()[0].startswith("case,setup,engine,trace,replayers,rate,sender,samples,trace_pkts,sent_pkts")
    assert len(text.splitlines()) == len(cases) + 1


def test_report_cli_prints_path_and_bad_dir_errors(tmp_path: Path):
    root = write_campaign(tmp_path / "one", [FakeCase(samples=2)], per_second=False)
    code, out = _cli(report_cli, ["report", str(root)])
    assert code == 0 and out.strip() == str(root / "report.html")
    with pytest.raises(InputError, match="not an idsbench campaign"):
        _cli(report_cli, ["report", str(tmp_path)])
    with pytest.raises(InputError, match="does not exist"):
        _cli(results_cli, ["results", str(tmp_path / "missing")])


def test_single_setup_without_profile_skips_figures_with_notes(tmp_path: Path):
    root = write_campaign(tmp_path, [FakeCase(replayers=1), FakeCase(replayers=2)], per_second=False)
    html = write_report(root).read_text()
    names = set(re.findall(r'data-figure="([^"]+)"', html))
    assert names == set(ALL_FIGURES) - {"host_cpu_time_without_slowest", "overhead_vs_baseline", "trace_throughput"}
    assert "not drawn — the sample summaries carry no per-second trace profile" in html
    assert "not drawn — the campaign has a single setup" in html
    assert "No overhead table" in html
    assert not (root / "figures" / "trace_throughput.svg").exists()


def test_overhead_table_in_report(report: Path):
    html = report.read_text()
    section = html[html.index('id="overhead"'):html.index('id="environment"')]
    assert "container" in section and "4X" in section and "-5" in section


def test_report_lists_incomplete_samples(tmp_path: Path):
    case = FakeCase(samples=3, incomplete=[2])
    html = write_report(write_campaign(tmp_path, [case])).read_text()
    assert "s2: incomplete (no summary.json" in html


def test_native_sender_fidelity_and_lateness_figures(tmp_path: Path):
    root = write_campaign(tmp_path, [FakeCase(replayers=1, sender="native"), FakeCase(replayers=2, sender="native")])
    html = write_report(root).read_text()
    names = set(re.findall(r'data-figure="([^"]+)"', html))
    assert {"sender_fidelity", "sender_lateness"} <= names
    for name in ("sender_fidelity", "sender_lateness"):
        assert (root / "figures" / f"{name}.svg").stat().st_size > 5000
    assert "-native-" in (root / "figures" / "sender_lateness.svg").read_text()  # cases named on the axis


def test_tcpreplay_campaign_says_why_there_is_no_lateness(report: Path):
    assert "Sender lateness: not drawn — no sample&#39;s sender reported lateness" in report.read_text()


def test_report_shows_the_host_probe_and_its_traps(tmp_path: Path):
    from idsbench.probemodel import CpuInfo, HostProbe, SensorProbe, TimerCosts

    root = write_campaign(tmp_path, [FakeCase(samples=2)], per_second=False)
    probe = HostProbe(cpu=CpuInfo(model="Fake CPU", count=2), hypervisor="kvm", kernel="6.1.0-fake",
                      timers=TimerCosts(cpuid_rdtsc_ns=7800.0, rdtsc_ns=10.0),
                      sensor=SensorProbe(version="7.0.10", profiling=True))
    (root / "probe.json").write_text(probe.model_dump_json(by_alias=True))
    html = write_report(root).read_text()
    assert "Host (probe.json)" in html and "Fake CPU: 2 logical CPUs" in html and "kvm" in html
    assert "has profiling compiled in" in html and "7.8 µs" in html
    (root / "probe.json").write_text("{")
    assert "probe.json is unreadable" in write_report(root).read_text()
    (root / "probe.json").unlink()
    assert "holds no host probe" in write_report(root).read_text()


def test_ab_section_compares_configurations_with_cis(tmp_path: Path):
    jit = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0]
    cases = [FakeCase(samples=6, config="default", drop_fraction=[0.2 * j for j in jit],
                      sensor_cpu=[40.0 * j for j in jit]),
             FakeCase(samples=6, config="tuning/tuned.yaml", drop_fraction=0.0, sensor_cpu=[40.5 * j for j in jit])]
    root = write_campaign(tmp_path, cases)
    html = write_report(root).read_text()
    assert 'id="ab"' in html and "default → tuning/tuned.yaml" in html
    block = html[html.index('id="ab"'):html.index("</table>", html.index('id="ab"'))]
    assert "drop %" in block and "▼ lower" in block and "= same" in block  # drops fall; CPU the same
    single = write_report(write_campaign(tmp_path / "one", [FakeCase(samples=2)])).read_text()
    assert 'id="ab"' not in single
