"""A search the sender bounds: the sender's ceiling measured once and shared by the repeats, the result
that says the sender (not the sensor) was the limit, and the one line per trial a search prints without a
terminal (pure logic, and `CaseSearch.run` over a fake measurer and controller)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from idsbench.accounting import waterfall_of
from idsbench.campaign_settings import campaign_settings
from idsbench.search import mlr
from idsbench.search import run as search_run
from idsbench.search.axis import Axis
from idsbench.search.run import CaseSearch, median_results, sender_bound, tolerance_result, trial_line
from idsbench.sensors.base import Counters
from idsbench.spec import spec_from_dict
from idsbench.store.schema import SearchRepeat, TrialRecord, WireRecord

TOPSPEED = Axis("rate", "pps", case=None, low=1.0, high=2.0, needs_ceiling=True)
FIXED = Axis("rate", "pps", case=None, low=500.0, high=100_000.0, per_replayer_pps=100_000.0)


def record(value: float, sent: int, processed: int, *, index: int = 3, offered: float | None = None,
           achieved: float | None = None, duration: float = 1.0, **extra: object) -> TrialRecord:
    wire = WireRecord(sender_tx_pkts=sent, sender_tx_dropped=0, sensor_rx_pkts=sent, sensor_rx_dropped=0,
                      softnet_dropped=0, softnet_time_squeeze=0)
    counters = Counters(captured_pkts=sent, dropped_pkts=sent - processed, decoded_pkts=processed)
    offered = value if offered is None else offered
    return TrialRecord(index=index, mode="warm", value=value, offered_pps=offered,
                       achieved_pps=achieved if achieved is not None else sent / duration, duration_s=duration,
                       intended_duration_s=duration, sent_pkts=sent, counters=counters,
                       waterfall=waterfall_of(sent, wire, counters, ()), **extra)


# --- the result the sender bounded ----------------------------------------------------------------
def test_the_sensor_taking_the_measured_ceiling_is_sender_limited():
    axis = TOPSPEED.with_ceiling(180_000.0)
    r = tolerance_result(axis, 0.0, mlr.GoalOutcome(0.0, 180_000.0, None, 1.0))
    assert r.lower_bound and r.sender_limited


def test_a_fixed_top_the_sensor_took_is_a_lower_bound_but_not_the_senders():
    r = tolerance_result(FIXED, 0.0, mlr.GoalOutcome(0.0, 100_000.0, None, 1.0))
    assert r.lower_bound and not r.sender_limited


def test_an_upper_bound_failed_only_by_the_senders_shortfall_is_sender_limited():
    # asked 100k pps, the sender sent 80k; the sensor processed every packet it got
    short = record(100_000.0, 80_000, 80_000, achieved=80_000.0, sender_limited=True)
    o = mlr.GoalOutcome(0.0, 95_000.0, 100_000.0, 1.0)
    assert sender_bound(FIXED, o, [short])
    assert tolerance_result(FIXED, 0.0, o, [short]).sender_limited


def test_an_upper_bound_where_the_sensor_kept_all_and_the_sender_fell_short_once_is_the_senders():
    # a CI run at the sender's ceiling: two trials sent on time and passed, the third took 5.3% longer
    ok = record(903_775.0, 451_888, 451_888, duration=0.5)
    late = record(903_775.0, 903_776, 903_776, duration=1.053, achieved=857_920.0, sender_limited=True)
    o = mlr.GoalOutcome(0.0, 723_061.0, 903_775.0, 1.0)
    assert sender_bound(FIXED, o, [ok, late]) and not sender_bound(FIXED, o, [ok])


def test_a_late_sender_offered_less_by_the_time_it_took():
    from idsbench.search.measure import trial_count

    late = record(903_775.0, 903_776, 903_776, duration=1.053, achieved=857_920.0, sender_limited=True)
    count = trial_count(late)
    assert count.intended == round(903_775.0 * 1.053) and count.forwarded == 903_776   # 5% unsent, not 1 packet
    assert trial_line("c", late, [0.0]).endswith("lost 47,899 of 951,675 pkts (5.033%): fail (sender-limited)")


def test_an_upper_bound_the_sensor_lost_packets_at_is_the_sensors():
    lossy = record(100_000.0, 80_000, 79_000, achieved=80_000.0, sender_limited=True)
    full = record(100_000.0, 100_000, 99_000)
    o = mlr.GoalOutcome(0.0, 95_000.0, 100_000.0, 1.0)
    assert not sender_bound(FIXED, o, [lossy]) and not sender_bound(FIXED, o, [full])
    assert not sender_bound(FIXED, mlr.GoalOutcome(0.0, 95_000.0, 100_000.0, 1.0), [])


def test_the_median_of_repeats_keeps_sender_limited():
    axis = TOPSPEED.with_ceiling(180_000.0)
    reps = [SearchRepeat(index=i, results=(tolerance_result(axis, 0.0, mlr.GoalOutcome(0.0, 180_000.0, None, 1.0)),))
            for i in range(2)]
    (ndr,) = median_results(reps)
    assert ndr.sender_limited and ndr.value == 180_000.0


# --- one ceiling per search ------------------------------------------------------------------------
class FakeMeasurer:
    """A measurer whose sender reaches a different speed at each ceiling trial (as a real one does)."""

    speeds = [180_000.0, 150_000.0, 120_000.0]
    ceiling_trials = 0

    def __init__(self, ctx, case, deps, axis, out_dir, *, warm, repeat=0, first_index=0, phase=None, note=None,
                 on_trial=lambda _r: None):
        self.axis, self.repeat, self.first_index, self.on_trial = axis, repeat, first_index, on_trial
        self.records: list[TrialRecord] = []

    def start(self, _stack):
        return None

    def stop(self):
        pass

    def ceiling(self):
        pps = self.speeds[FakeMeasurer.ceiling_trials]
        FakeMeasurer.ceiling_trials += 1
        self.axis = self.axis.with_ceiling(pps)
        rec = record(pps, int(pps), int(pps), index=self.first_index, offered=None, achieved=pps,
                     ceiling=True, repeat=self.repeat)
        self.records.append(rec)
        self.on_trial(rec)
        return self.axis

    def trial_at(self, value: float) -> None:
        rec = record(value, int(value), int(value), index=self.first_index + len(self.records), repeat=self.repeat)
        self.records.append(rec)
        self.on_trial(rec)


def fake_controller(_goals, measurer, *, note):
    """The sensor takes everything the sender offers: the top meets the goal, no upper bound."""
    measurer.trial_at(measurer.axis.high)
    return [mlr.GoalOutcome(0.0, measurer.axis.high, None, 1.0)]


@pytest.fixture
def fake_search(monkeypatch, tmp_path):
    FakeMeasurer.ceiling_trials = 0
    monkeypatch.setattr(search_run, "Measurer", FakeMeasurer)
    monkeypatch.setattr(search_run.mlr, "run_controller", fake_controller)
    monkeypatch.setattr(search_run, "axis_for", lambda ctx, case, available: TOPSPEED)
    monkeypatch.setattr(search_run, "case_facts", lambda ctx, case, available: SimpleNamespace(allocation=1.0))
    monkeypatch.setattr(CaseSearch, "_verify", lambda self, axis, results: [])
    spec = spec_from_dict({"name": "x", "search": {"repeats": 2, "trial_s": 1}})
    ctx = SimpleNamespace(settings=campaign_settings(spec), layout=SimpleNamespace(root=tmp_path), state_dir=tmp_path)
    deps = SimpleNamespace(make_stack=lambda _d: contextlib.nullcontext(), available_cpus=lambda: [0])
    case = SimpleNamespace(case_id="c0", setup="baremetal", engine="suricata", capture=None)
    return ctx, case, deps


def test_the_repeats_share_one_ceiling_measured_once(fake_search):
    ctx, case, deps = fake_search
    lines: list[str] = []
    result = CaseSearch(ctx, case, deps, trial_lines=lines.append).run()
    assert FakeMeasurer.ceiling_trials == 1 and sum(t.ceiling for t in result.trials) == 1
    assert [r.sender_ceiling_pps for r in result.repeats] == [180_000.0, 180_000.0]
    assert [r.ceiling_measured for r in result.repeats] == [True, False]
    assert result.sender_ceiling_pps == 180_000.0 and [r.ndr_pps for r in result.repeats] == [180_000.0] * 2
    (ndr,) = result.results
    assert ndr.sender_limited and all(r.sender_limited for r in result.repeats)
    assert any("the sensor was not the limit" in n and "shared by the 2 repeats" in n for n in result.notes)
    assert len(lines) == len(result.trials) == 3
    assert "sender at full speed: 180,000 pps" in lines[0] and "repeat 1/2" in lines[0]
    assert "repeat 2/2" in lines[2] and lines[2].endswith(": pass")
    assert (Path(ctx.layout.root) / "search" / "c0" / "search.json").is_file()


def test_without_a_line_sink_a_search_prints_nothing_per_trial(fake_search, capsys):
    ctx, case, deps = fake_search
    CaseSearch(ctx, case, deps).run()
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


# --- one line per trial --------------------------------------------------------------------------
def test_a_lossless_trial_line_names_load_duration_loss_and_verdict():
    line = trial_line("pps=topspeed", record(50_000.0, 100_000, 100_000, duration=2.0, repeat=1), [0.0], 3)
    assert line == ("pps=topspeed t3 repeat 2/3 warm: 50,000 pps for 2.00 s: lost 0 of 100,000 pkts (0.000%): "
                    "pass")


def test_a_lossy_trial_line_counts_the_lost_packets_and_their_share():
    line = trial_line("c", record(50_000.0, 100_000, 99_000, duration=2.0), [0.0, 0.02])
    assert "lost 1,000 of 100,000 pkts (1.000%)" in line and line.endswith("fail NDR, pass PDR 0.02")
    assert trial_line("c", record(50_000.0, 100_000, 90_000), [0.0]).endswith(": fail")


def test_a_sender_short_trial_counts_its_shortfall_and_says_why():
    short = record(100_000.0, 80_000, 80_000, achieved=80_000.0, sender_limited=True)
    line = trial_line("c", short, [0.0])
    assert "100,000 pps (sent 80,000 pps)" in line and "lost 20,000 of 100,000 pkts (20.000%)" in line
    assert line.endswith("fail (sender-limited)")


def test_failed_unaccounted_and_verification_lines():
    dead = record(10_000.0, 10_000, 0, sensor_failed="the sensor died during the trial")
    assert trial_line("c", dead, [0.0]).endswith("sensor failed: the sensor died during the trial")
    odd = record(10_000.0, 10_000, 10_000, accounted=False)
    assert trial_line("c", odd, [0.0]).endswith("did not add up: run again")
    verify = trial_line("c", record(10_000.0, 50_000, 50_000, duration=5.0), [0.0], 2, "verify 0")
    assert verify.startswith("c verify 0 warm: 10,000 pps for 5.00 s") and "repeat" not in verify


def test_the_case_line_says_whose_limit_the_result_was():
    from idsbench.search.campaign import describe
    from idsbench.store.schema import SearchResult, ToleranceResult

    def one(**r: object) -> str:
        return describe(SearchResult(case_id="c", axis="rate", unit="pps", precision=0.05, mode="warm",
                                     results=(ToleranceResult(tolerance=0.0, value=100_000.0, **r),)))

    assert "sender-limited: the sensor was not the limit" in one(lower_bound=True, sender_limited=True)
    assert one(lower_bound=True).startswith("NDR >= 1e+05 pps (the axis' top)")
    assert "sender" not in one(bracket=(100_000.0, 105_000.0))


def test_bypassed_packets_are_forwarded_not_lost():
    """A kernel-side bypass drops an elephant's packets by design (its own waterfall line): the search
    counts them as handled. Seen in a real xdp search before: 64,145 of 100,000 bypassed counted as lost
    (loss ratio 0 in the waterfall, yet every trial above 1,111 pps failed)."""
    from idsbench.search.measure import trial_count

    wire = WireRecord(sender_tx_pkts=100_000, sender_tx_dropped=0, sensor_rx_pkts=100_000, sensor_rx_dropped=0,
                      softnet_dropped=0, softnet_time_squeeze=0)
    counters = Counters(captured_pkts=37_264, decoded_pkts=37_264, bypassed_pkts=64_145, bypassed_local_pkts=1_409)
    w = waterfall_of(100_000, wire, counters, ())
    assert w.unaccounted_pkts == 0 and w.lost_pkts == 0 and w.bypassed_pkts == 64_145
    rec = TrialRecord(index=0, mode="warm", value=200_000.0, offered_pps=200_000.0, achieved_pps=200_000.0,
                      duration_s=0.5, intended_duration_s=0.5, sent_pkts=100_000, counters=counters, waterfall=w)
    assert trial_count(rec).forwarded == 100_000
    assert trial_line("c", rec, [0.0]).endswith("lost 0 of 100,000 pkts (0.000%): pass")
