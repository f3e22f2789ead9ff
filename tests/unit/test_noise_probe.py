"""The quietness probe's arithmetic (steal share, loop CV, which figures exceed the precision asked) and
the PMU counts parser (pure logic; `measure_noise` itself runs in the campaign's preflight)."""

from __future__ import annotations

import pytest

from idsbench.monitor.pmu import parse_perf_csv
from idsbench.probe.noise import (
    MAX_PIECE_S,
    MIN_PIECE_S,
    coefficient_of_variation,
    cpu_times,
    noise_exceeds,
    other_load_pct,
    piece_seconds,
    pooled_cv,
    time_chunks,
    window_times,
)
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
    hog = NoiseProbe(steal_pct=0.0, loop_cv=0.01, piece_s=1.0, freq_changes=None, cpus=(1,), other_load_pct=48.0)
    (named,) = noise_exceeds(hog, 0.05)
    assert named == "other processes kept 48% of the host's CPU time busy"
    housekeeping = NoiseProbe(loop_cv=0.01, piece_s=1.0, cpus=(1,), other_load_pct=3.0)
    assert noise_exceeds(housekeeping, 0.01) == []  # below the floor whatever the precision


def test_the_loop_cv_is_the_relative_spread_of_its_times():
    assert coefficient_of_variation([1.0, 1.0, 1.0]) == 0.0
    assert coefficient_of_variation([0.9, 1.1]) == pytest.approx(0.1414, abs=1e-3)
    assert coefficient_of_variation([1.0]) is None


def test_each_figure_above_the_precision_is_named():
    quiet = NoiseProbe(steal_pct=0.5, loop_cv=0.01, piece_s=1.0, freq_changes=0, cpus=(1,))
    assert noise_exceeds(quiet, 0.05) == []
    loud = NoiseProbe(steal_pct=8.0, loop_cv=0.2, piece_s=2.0, freq_changes=3, cpus=(1,))
    named = noise_exceeds(loud, 0.05)
    assert len(named) == 3 and "20.0% (CV) over pieces of 2 s" in named[0] and "steal time 8.0%" in named[1]
    assert noise_exceeds(None, 0.05) == []


def test_perf_stat_counts_and_a_missing_pmu():
    counted = parse_perf_csv("# started\n\n123456,,instructions:u,100.00,,\n98765,,cycles,100.00,,\n")
    assert (counted.instructions, counted.cycles) == (123456, 98765)
    missing = parse_perf_csv("<not supported>,,instructions,0,100.00,,\n<not supported>,,cycles,0,100.00,,\n")
    assert (missing.instructions, missing.cycles) == (None, None)


def test_a_noisy_host_is_a_warning_or_with_require_quiet_a_refusal(monkeypatch):
    from idsbench.errors import NoisyHost
    from idsbench.run import hostprobe

    loud = NoiseProbe(steal_pct=0.0, loop_cv=0.3, piece_s=1.0, freq_changes=None, cpus=(1,))
    asked: list[float] = []
    monkeypatch.setattr(hostprobe, "measure_noise", lambda cpus, piece_s: asked.append(piece_s) or loud)
    noise, warnings = hostprobe.quietness(0.05, [1], require_quiet=False, trial_s=0.5)
    assert asked == [1.0]  # a 0.5-s replay is measured at the 1-s floor
    assert noise == loud and len(warnings) == 1 and "30.0% (CV)" in warnings[0] and "noisy-host" in warnings[0]
    with pytest.raises(NoisyHost, match="30.0% .CV."):
        hostprobe.quietness(0.05, [1], require_quiet=True)
    monkeypatch.setattr(hostprobe, "measure_noise",
                        lambda cpus, piece_s: NoiseProbe(loop_cv=0.01, piece_s=piece_s, cpus=(1,)))
    assert hostprobe.quietness(0.05, [1], require_quiet=True)[1] == []
    # a probe the caller took moments before (a gate's earlier round) is judged as it is, not measured again
    asked.clear()
    monkeypatch.setattr(hostprobe, "measure_noise", lambda cpus, piece_s: asked.append(piece_s) or loud)
    reused, warnings = hostprobe.quietness(0.05, [1], require_quiet=False, measured=loud)
    assert asked == [] and reused is loud and len(warnings) == 1 and "30.0% (CV)" in warnings[0]
    with pytest.raises(NoisyHost):
        hostprobe.quietness(0.05, [1], require_quiet=True, measured=loud)


def test_the_trial_scale_is_the_trial_length_within_its_bounds():
    assert piece_seconds(None) == MIN_PIECE_S == 1.0
    assert piece_seconds(0.5) == 1.0
    assert piece_seconds(1.5) == 1.5
    assert piece_seconds(5.0) == MAX_PIECE_S == 2.0


def test_windows_slide_over_the_chunks_and_each_cpu_counts_against_its_own_mean():
    chunks = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert window_times(chunks, 2, 1) == [3.0, 5.0, 7.0, 9.0]
    assert window_times(chunks, 2, 2) == [3.0, 7.0]
    assert window_times(chunks, 6, 1) == []
    # two CPUs, each steady but one twice as slow: no noise
    assert pooled_cv([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]) == 0.0
    assert pooled_cv([[1.0]]) is None
    assert pooled_cv([[0.9, 1.1], [1.8, 2.2]]) == pytest.approx(coefficient_of_variation([0.9, 1.1, 0.9, 1.1]))


def test_chunks_are_timed_back_to_back_for_the_duration():
    ticks = iter([0.0, 0.01, 0.02, 0.05, 0.06, 0.07])
    looked: list[int] = []
    chunks = time_chunks(1, 0.06, clock=lambda: next(ticks), every_10=lambda: looked.append(1))
    assert chunks == pytest.approx([0.01, 0.01, 0.03, 0.01])  # the stall is in the third chunk
    assert looked == []


def test_a_stall_that_dominates_10_ms_pieces_hardly_moves_1_s_ones():
    # 400 chunks of 10 ms with one 4-ms stall every 40 chunks: 10-ms CV ~6%, 1-s CV ~0
    chunks = [0.014 if k % 40 == 0 else 0.010 for k in range(400)]
    assert coefficient_of_variation(chunks) == pytest.approx(0.06, abs=0.01)
    assert pooled_cv([window_times(chunks, 100, 10)]) < 0.005


def test_an_older_probe_reads_its_loop_cv_as_the_10_ms_figure():
    old = NoiseProbe.model_validate({"steal_pct": 0.1, "loop_cv": 0.17, "freq_changes": None, "cpus": [1],
                                     "other_load_pct": 1.0})
    assert (old.loop_cv, old.loop_cv_10ms, old.piece_s) == (None, 0.17, None)
    assert noise_exceeds(old, 0.05) == []  # no trial-scale figure: no claim
    new = NoiseProbe.model_validate({"loop_cv": 0.02, "piece_s": 1.0, "loop_cv_10ms": 0.17, "cpus": [1]})
    assert (new.loop_cv, new.loop_cv_10ms) == (0.02, 0.17)
    assert noise_exceeds(new, 0.05) == []  # the 10-ms figure is context, never a label


def test_the_campaign_trial_length_is_its_shortest_known_replay():
    from idsbench.plan import Case
    from idsbench.run.hostprobe import replay_seconds, trial_seconds
    from idsbench.spec import Rate
    from idsbench.store.schema import TraceRecord

    trace = TraceRecord(ref="t", path="/t.pcap", sha256="x", packets=1000, bytes=100_000, duration_s=10.0)

    def case(rate: Rate, loops: int = 1, duration_s: float | None = None) -> Case:
        return Case(trace="t", replayers=1, rate=rate, loops=loops, setup="baremetal", cpus=None, memory=None,
                    duration_s=duration_s)
    assert replay_seconds(case(Rate(kind="pps", value=500)), trace) == 2.0
    assert replay_seconds(case(Rate(kind="recorded"), loops=2), trace) == 20.0
    assert replay_seconds(case(Rate(kind="multiplier", value=4)), trace) == 2.5
    assert replay_seconds(case(Rate(kind="topspeed"), duration_s=3.0), trace) == 3.0
    assert replay_seconds(case(Rate(kind="topspeed")), trace) is None
    cases = [case(Rate(kind="pps", value=500)), case(Rate(kind="pps", value=4000)), case(Rate(kind="topspeed"))]
    assert trial_seconds(cases, {"t": trace}) == 0.25
    assert trial_seconds([case(Rate(kind="topspeed"))], {"t": trace}) is None
