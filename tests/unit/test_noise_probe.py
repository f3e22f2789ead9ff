"""The quietness probe's arithmetic (steal share, loop CV, which figures exceed the precision asked) and
the PMU counts parser (pure logic; `measure_noise` itself runs in the campaign's preflight)."""

from __future__ import annotations

import pytest

from idsbench.monitor.pmu import parse_perf_csv
from idsbench.probe.noise import coefficient_of_variation, cpu_times, noise_exceeds, other_load_pct
from idsbench.probemodel import NoiseProbe

STAT = "cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 50 0 25 400 5 0 2 18 0 0\nintr 1\n"


def test_steal_and_total_come_from_the_aggregate_cpu_line():
    assert cpu_times(STAT) == (35, 1000)


def test_other_processes_load_is_the_busy_time_not_ours():
    # 2 CPUs over 1 s at 100 ticks/s: 200 ticks; busy 150 of them, 100 ours (the probe's loop): 25% others
    before = "cpu  0 0 0 0 0 0 0 0 0 0\n"
    after = "cpu  120 0 20 40 10 0 10 0 0 0\n"
    assert other_load_pct(before, after, own_cpu_s=1.0, clock_ticks=100) == 25.0
    assert other_load_pct(before, after, own_cpu_s=2.0, clock_ticks=100) == 0.0  # never below zero
    assert other_load_pct(after, after, own_cpu_s=0.0, clock_ticks=100) is None


def test_a_steady_hog_is_named_even_when_the_loop_does_not_vary():
    hog = NoiseProbe(steal_pct=0.0, loop_cv=0.01, freq_changes=None, cpus=(1,), other_load_pct=48.0)
    (named,) = noise_exceeds(hog, 0.05)
    assert named == "other processes kept 48% of the host's CPU time busy"
    housekeeping = NoiseProbe(loop_cv=0.01, cpus=(1,), other_load_pct=3.0)
    assert noise_exceeds(housekeeping, 0.01) == []  # below the floor whatever the precision


def test_the_loop_cv_is_the_relative_spread_of_its_times():
    assert coefficient_of_variation([1.0, 1.0, 1.0]) == 0.0
    assert coefficient_of_variation([0.9, 1.1]) == pytest.approx(0.1414, abs=1e-3)
    assert coefficient_of_variation([1.0]) is None


def test_each_figure_above_the_precision_is_named():
    quiet = NoiseProbe(steal_pct=0.5, loop_cv=0.01, freq_changes=0, cpus=(1,))
    assert noise_exceeds(quiet, 0.05) == []
    loud = NoiseProbe(steal_pct=8.0, loop_cv=0.2, freq_changes=3, cpus=(1,))
    named = noise_exceeds(loud, 0.05)
    assert len(named) == 3 and "20.0% (CV)" in named[0] and "steal time 8.0%" in named[1]
    assert noise_exceeds(None, 0.05) == []


def test_perf_stat_counts_and_a_missing_pmu():
    counted = parse_perf_csv("# started\n\n123456,,instructions:u,100.00,,\n98765,,cycles,100.00,,\n")
    assert (counted.instructions, counted.cycles) == (123456, 98765)
    missing = parse_perf_csv("<not supported>,,instructions,0,100.00,,\n<not supported>,,cycles,0,100.00,,\n")
    assert (missing.instructions, missing.cycles) == (None, None)


def test_a_noisy_host_is_a_warning_or_with_require_quiet_a_refusal(monkeypatch):
    from idsbench.errors import NoisyHost
    from idsbench.run import hostprobe

    loud = NoiseProbe(steal_pct=0.0, loop_cv=0.3, freq_changes=None, cpus=(1,))
    monkeypatch.setattr(hostprobe, "measure_noise", lambda cpus: loud)
    noise, warnings = hostprobe.quietness(0.05, [1], require_quiet=False)
    assert noise == loud and len(warnings) == 1 and "30.0% (CV)" in warnings[0] and "noisy-host" in warnings[0]
    with pytest.raises(NoisyHost, match="30.0% .CV."):
        hostprobe.quietness(0.05, [1], require_quiet=True)
    monkeypatch.setattr(hostprobe, "measure_noise", lambda cpus: NoiseProbe(loop_cv=0.01, cpus=(1,)))
    assert hostprobe.quietness(0.05, [1], require_quiet=True)[1] == []
