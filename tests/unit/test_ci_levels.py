"""Honest CI levels (issue 41 item 3): the level printed is the level computed, and no verdict (higher, lower,
same) at a level below the one asked (95%): "inconclusive" with the samples that would settle it. Legends
and JSON agree (`ci_level` on every row and pair row, `level` on every compared metric)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idsbench.analysis.duet import DuetResult, pair_row, ratio_effect
from idsbench.analysis.effect import describe, effect, paired_effect, reached_level, samples_for
from idsbench.analysis.overhead import metric_overhead
from idsbench.cli.main import main
from idsbench.report import duet_out
from idsbench.report.fmt import ci_label
from tests.fakecampaign import FakeCase, write_campaign


def test_the_samples_a_level_needs() -> None:
    assert samples_for(0.95) == 6 and samples_for(0.99) == 8
    assert reached_level(0.95, 6, 9) == 0.95
    assert reached_level(0.95, 2, 6) == 0.5 and reached_level(0.95, 3) == 0.75


def test_a_duet_pair_of_two_samples_gives_no_verdict() -> None:
    """Issue 41's case: n = 2, both ratios well below 1 — before, "lower, 0.822 [0.784, 0.861], 50.0% CI"."""
    e = ratio_effect([0.784, 0.861])
    assert e.verdict == "inconclusive" and e.level == 0.5
    assert e.samples_needed is not None and e.samples_needed >= 6
    six = ratio_effect([0.784, 0.861, 0.80, 0.83, 0.79, 0.85])
    assert six.verdict == "lower" and six.level == pytest.approx(0.96875)


def _pair(ratios: list[float]) -> DuetResult:
    from idsbench.analysis.duet import DuetSampleFigures
    from idsbench.analysis.stats import ci_coverage, median, median_ci

    figs = tuple(DuetSampleFigures(i, i % 2 == 1, "ok", True, 10.0, 10.0 * r, r, (), None, None)
                 for i, r in enumerate(ratios))
    return DuetResult("p0", "rules", "ca", "cb", "base", "more", figs, median(ratios), median_ci(ratios),
                      ci_coverage(len(ratios)), ratio_effect(ratios), None, "separate", "tee")


def test_the_pair_row_and_its_text_agree_on_the_level() -> None:
    pair = _pair([0.784, 0.861])
    row = pair_row(pair)
    assert row["ci_level"] == row["duet_ratio_ci_level"] == 0.5 and row["duet_verdict"] == "inconclusive"
    text = duet_out.pairs_table([pair])
    assert "(50.0%)" in text and "inconclusive" in text and "lower" not in text


def test_compare_at_two_samples_gives_no_verdict_and_its_legend_says_the_level(tmp_path: Path,
                                                                               capsys: pytest.CaptureFixture[str]) -> None:
    a = write_campaign(tmp_path / "a", [FakeCase(samples=2, sensor_cpu=[40.0, 40.5])], name="a")
    b = write_campaign(tmp_path / "b", [FakeCase(samples=2, sensor_cpu=[60.0, 60.5])], name="b")
    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cpu = doc["rows"][0]["metrics"]["sensor_cpu_pct"]
    assert cpu["verdict"] == "inconclusive" and cpu["level"] == 0.5 and cpu["samples_needed"] >= 6
    assert main(["compare", str(a), str(b)]) == 0
    table = capsys.readouterr().out
    assert "95% bootstrap CI" not in table and "bootstrap CI" in table and "at 50%" in table
    assert "▲ higher" not in table and "50% CI" in table


def test_a_gate_at_two_samples_fails_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_campaign(tmp_path / "a", [FakeCase(samples=2, sensor_cpu=[40.0, 40.5])], name="a")
    b = write_campaign(tmp_path / "b", [FakeCase(samples=2, sensor_cpu=[60.0, 60.5])], name="b")
    assert main(["compare", str(a), str(b), "--fail-on", "sensor_cpu_pct:+5%"]) == 0
    assert "inconclusive" in capsys.readouterr().err


def test_paired_rounds_below_the_level_give_no_verdict() -> None:
    e = paired_effect([10.0, 10.1, 9.9], [15.0, 15.2, 14.9])
    assert e.paired and e.verdict == "inconclusive" and e.level == 0.75 and e.samples_needed == 6
    assert "75% CI" in describe(e)
    six = paired_effect([10.0, 10.1, 9.9, 10.0, 10.2, 9.8], [15.0, 15.2, 14.9, 15.1, 15.3, 14.8])
    assert six.verdict == "higher" and six.level == 0.95 and "95% CI" in describe(six)


def test_unpaired_effect_computes_its_ci_at_the_level_it_claims() -> None:
    e = effect([40.0, 40.5], [60.0, 60.5])
    assert e.verdict == "inconclusive" and e.level == 0.5
    zeros = effect([0, 0], [0, 0])  # no drops on either side: 6 samples would say "same"
    assert zeros.verdict == "inconclusive" and zeros.samples_needed == 6
    assert paired_effect([0, 0, 0], [0, 0, 0]).samples_needed == 6


def test_overhead_and_figure_labels_say_the_level_reached() -> None:
    assert metric_overhead([1.0, 2.0], [3.0, 4.0]).level == 0.5
    assert metric_overhead([1.0] * 6, [2.0] * 6).level == 0.95
    assert ci_label([0.5, 0.96875]) == "CI 50%–97%" and ci_label([0.75]) == "75% CI" and ci_label([]) == "CI"
