"""compare: matching cases across campaigns, directions with CIs, renderers and the CLI."""

from __future__ import annotations

import argparse
import csv
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from idsbench.analysis import compare_campaigns
from idsbench.cli import compare as compare_cli
from idsbench.errors import InputError, SpecError
from idsbench.report import compare_out
from idsbench.store.reader import load_campaign
from tests.fakecampaign import FakeCase, write_campaign


def _pair(tmp_path: Path, samples: int = 6) -> tuple[Path, Path]:
    """Two campaigns that differ only in the CPU limit: the tighter one drops and uses less CPU (6 samples: a
    verdict needs the 95% the CI of a median reaches from 6 samples on)."""
    jit = [1.0, 1.02, 0.98, 1.01, 0.99, 1.0][:samples]
    loose = [FakeCase(replayers=r, cpus=1.0, samples=samples, sensor_cpu=[40.0 * r * j for j in jit])
             for r in (1, 2)]
    tight = [FakeCase(replayers=r, cpus=0.5, samples=samples, sensor_cpu=[48.0 * j for j in jit],
                      drop_fraction=[0.1 * r * j for j in jit]) for r in (1, 2)]
    return (write_campaign(tmp_path / "loose", loose, name="loose"),
            write_campaign(tmp_path / "tight", tight, name="tight"))


def _cli(argv: list[str]) -> str:
    parser = argparse.ArgumentParser()
    compare_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    out = io.StringIO()
    with redirect_stdout(out):
        assert args.func(args) == 0
    return out.getvalue()


def test_cpu_limit_comparison_shows_expected_directions(tmp_path: Path):
    a, b = _pair(tmp_path)
    cmp = compare_campaigns(load_campaign(a), load_campaign(b))
    assert cmp.match_keys == ("replayers",)
    assert cmp.differs == {"cpus": (1.0, 0.5)}
    assert len(cmp.rows) == 2 and not cmp.only_base and not cmp.only_contender
    r1, r2 = sorted(cmp.rows, key=lambda r: r.params["replayers"])
    drops = r2.metrics["dropped_pkts"]
    assert drops.direction == "higher" and drops.ci_overlap is False and drops.diff == 8000
    decoded = r2.metrics["decoded_pkts"]
    assert decoded.direction == "lower" and decoded.pct == pytest.approx(-20.0)
    # at 2X the tight limit caps CPU (80 -> 48, lower); at 1X it is higher (40 -> 48)
    assert r2.metrics["sensor_cpu_pct"].direction == "lower"
    assert r1.metrics["sensor_cpu_pct"].direction == "higher"
    assert r1.metrics["sent_pkts"].direction == "same"  # equal samples: no difference
    assert r2.metrics["sensor_cpu_pct"].better == "better" and decoded.better == "worse"
    assert drops.effect_pct is None and drops.verdict == "higher"  # from 0: no ratio, the difference decides
    assert decoded.effect_ci is not None and decoded.effect_ci[1] < -2


def test_a_wide_spread_is_inconclusive_not_a_difference(tmp_path: Path):
    a = write_campaign(tmp_path / "a", [FakeCase(sensor_cpu=[40.0, 50.0, 60.0])], name="a")
    b = write_campaign(tmp_path / "b", [FakeCase(sensor_cpu=[45.0, 52.0, 58.0])], name="b")
    cmp = compare_campaigns(load_campaign(a), load_campaign(b))
    cpu = cmp.rows[0].metrics["sensor_cpu_pct"]
    assert cpu.diff == 2 and cpu.ci_overlap is True
    assert cpu.verdict == cpu.direction == "inconclusive" and cpu.samples_needed is not None and cpu.samples_needed > 3
    assert cpu.effect_pct == pytest.approx(4.0) and cpu.effect_ci[0] < 0 < cpu.effect_ci[1]


def test_unmatched_cases_are_listed(tmp_path: Path):
    a = write_campaign(tmp_path / "a", [FakeCase(replayers=1), FakeCase(replayers=2)], name="a")
    b = write_campaign(tmp_path / "b", [FakeCase(replayers=2), FakeCase(replayers=4)], name="b")
    cmp = compare_campaigns(load_campaign(a), load_campaign(b))
    assert [r.params["replayers"] for r in cmp.rows] == [2]
    assert len(cmp.only_base) == 1 and "r1" in cmp.only_base[0]
    assert len(cmp.only_contender) == 1 and "r4" in cmp.only_contender[0]


def test_renderers(tmp_path: Path):
    a, b = _pair(tmp_path)
    table = _cli(["compare", str(a), str(b)])
    assert "differs: cpus 1.0 → 0.5" in table and "▲ higher" in table and "▼ lower" in table
    doc = json.loads(_cli(["compare", str(a), str(b), "--format", "json"]))
    assert doc["base"] == "loose" and len(doc["rows"]) == 2
    rows = list(csv.DictReader(io.StringIO(_cli(["compare", str(a), str(b), "--format", "csv"]))))
    drop = next(r for r in rows if r["metric"] == "dropped_pkts" and r["case"] == "replayers=2")
    assert drop["direction"] == drop["verdict"] == "higher" and float(drop["diff"]) == 8000
    cpu = doc["rows"][0]["metrics"]["sensor_cpu_pct"]
    assert set(cpu) >= {"effect_pct", "effect_ci", "verdict", "samples_needed"}
    html = _cli(["compare", str(a), str(b), "--format", "html"])
    assert html.startswith("<!DOCTYPE html>") and "http" not in html and "class=\"dir-higher\"" in html


def test_cli_errors(tmp_path: Path):
    a, _ = _pair(tmp_path)
    with pytest.raises(InputError, match="nope"):
        _cli(["compare", str(a), str(tmp_path / "nope")])
    other = write_campaign(tmp_path / "o", [FakeCase(setup="container", replayers=8),
                                             FakeCase(setup="vm", replayers=16)], name="o")
    with pytest.raises(SpecError, match="no case"):
        _cli(["compare", str(a), str(other)])
    assert compare_out.ARROWS["same"]


def test_host_differences_are_flagged(tmp_path: Path):
    from idsbench.probemodel import BootParams, CpuInfo, HostProbe

    a, b = _pair(tmp_path)
    cmp = compare_campaigns(load_campaign(a), load_campaign(b))
    assert cmp.host_differs == [f"not compared: no probe.json in {a}, {b}"]
    for root, cmdline in ((a, "quiet"), (b, "quiet isolcpus=1")):
        probe = HostProbe(cpu=CpuInfo(count=2), cmdline=cmdline,
                          boot=BootParams(isolcpus="1" if "isolcpus" in cmdline else None))
        (root / "probe.json").write_text(probe.model_dump_json(by_alias=True))
        doc = json.loads((root / "campaign.json").read_text())
        doc["spec"]["sensor"] = {"set": {"max-pending-packets": 1024 if root == a else 4096}}
        (root / "campaign.json").write_text(json.dumps(doc))
    cmp = compare_campaigns(load_campaign(a), load_campaign(b))
    text = "\n".join(cmp.host_differs)
    assert "boot.isolcpus" in text and "cmdline" in text
    assert "spec.sensor.set.max-pending-packets" in text and "1024" in text and "4096" in text
    assert "host differs (probe.json, sensor.set)" in compare_out.to_table(cmp)


def _gate(argv: list[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    compare_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    err = io.StringIO()
    from contextlib import redirect_stderr

    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = args.func(args)
    return code, err.getvalue()


def test_gate_fails_on_a_real_regression_and_passes_inside_the_noise(tmp_path: Path):
    from idsbench.analysis.gate import parse_conditions

    jit = [1.0, 1.01, 0.99, 1.005, 0.995, 1.0]
    a = write_campaign(tmp_path / "a", [FakeCase(samples=6, sensor_cpu=[40.0 * j for j in jit])], name="a")
    b = write_campaign(tmp_path / "b", [FakeCase(samples=6, sensor_cpu=[46.0 * j for j in jit])], name="b")
    same = write_campaign(tmp_path / "same", [FakeCase(samples=6, sensor_cpu=[40.2 * j for j in jit])], name="same")
    code, err = _gate(["compare", str(a), str(b), "--fail-on", "sensor_cpu_pct:+5%,decoded_pkts:-5%"])
    assert code == 1
    (line,) = [ln for ln in err.splitlines() if ln.startswith("FAIL")]
    assert "sensor_cpu_pct" in line and "base 40.0 [39.6–40.4]" in line and "new 46.0 [45.5–46.5]" in line and "threshold +5%" in line and "higher by 15.0%" in line
    assert _gate(["compare", str(a), str(b), "--fail-on", "sensor_cpu_pct:+20%"])[0] == 0  # below the threshold
    assert _gate(["compare", str(a), str(b), "--fail-on", "sensor_cpu_pct:-5%"])[0] == 0   # the other way
    assert _gate(["compare", str(a), str(same), "--fail-on", "sensor_cpu_pct:5%"])[0] == 0
    with pytest.raises(SpecError, match="nonsense_metric is no metric of the results"):
        _gate(["compare", str(a), str(b), "--fail-on", "nonsense_metric:+5%"])
    with pytest.raises(SpecError, match="no matched case has ndr_pps"):  # a metric these campaigns lack
        _gate(["compare", str(a), str(b), "--fail-on", "ndr_pps:-5%"])
    for bad in ("sensor_cpu_pct", "cpu:+x%", "", "a:+0%"):
        with pytest.raises(SpecError):
            parse_conditions(bad)
    assert [str(c) for c in parse_conditions("ndr_pps:-5%, sensor_us_per_pkt:+5%,alerts:3")] == \
        ["ndr_pps:-5%", "sensor_us_per_pkt:+5%", "alerts:±3%"]
