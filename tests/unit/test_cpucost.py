"""The sensor's CPU per packet by its three definitions (idsbench.cpucost, issue 28 item 2), from one
sample's raw readings; and the quiet watch's end of processing that the definition in use needs."""

from __future__ import annotations

import pytest

from idsbench import cpucost
from idsbench.run.drain import QuietWatch
from idsbench.store.schema import SensorCostRecord
from tests.fakeclock import Clock


def _record(**kw: object) -> SensorCostRecord:
    base: dict[str, object] = {"cpu_s": 0.0, "processed_pkts": 100_000, "definition": "processing",
                               "replay_s": 8.0, "cpu_replay_s": 0.48, "processed_s": 8.1,
                               "cpu_processed_s": 0.5, "drained_s": 8.4, "cpu_drained_s": 0.501,
                               "idle_cores": 0.0}
    return SensorCostRecord.model_validate({**base, **kw})


def test_each_definition_from_the_same_readings():
    r = _record(pre_idle_cores=0.005, pre_idle_s=3.0, idle_cores=0.002)
    assert cpucost.cpu_seconds(r, "processing") == 0.5
    assert cpucost.cpu_seconds(r, "pre-idle") == pytest.approx(0.5 - 0.005 * 8.1)
    assert cpucost.cpu_seconds(r, "quiet-idle") == pytest.approx(0.501 - 0.002 * 8.4)
    assert cpucost.us_per_pkt(r) == pytest.approx(5.0)
    assert cpucost.cpu_seconds(_record(), "pre-idle") is None  # no idle window measured before the replay
    with pytest.raises(ValueError, match="unknown CPU cost definition"):
        cpucost.cpu_seconds(r, "best")


def test_a_housekeeping_wake_up_in_the_quiet_window_moves_only_the_old_definition():
    """Two samples of the same work; in one, Suricata's 1-s stats wake-up fell inside the 0.2-s quiet
    window (0.04 core): the old definition subtracts 0.04 × 8.4 s from it (a cluster of its own)."""
    calm, woken = _record(idle_cores=0.0), _record(idle_cores=0.04)
    assert cpucost.us_per_pkt(calm, "processing") == cpucost.us_per_pkt(woken, "processing")
    gap = (cpucost.us_per_pkt(calm, "quiet-idle") or 0) - (cpucost.us_per_pkt(woken, "quiet-idle") or 0)
    assert gap == pytest.approx(0.04 * 8.4 / 100_000 * 1e6)  # 3.4 µs on a 5 µs figure


def test_without_a_quiet_drain_the_end_of_processing_is_the_replay_plus_its_tail_work():
    r = _record(processed_s=None, cpu_processed_s=None, drained_s=11.0, cpu_drained_s=0.53, idle_cores=0.01)
    span = cpucost.processing_span(r)
    assert span is not None and span[0] == 8.0
    assert span[1] == pytest.approx(0.48 + (0.53 - 0.48 - 0.01 * 3.0))  # idle taken out of the tail only


def test_an_older_summary_keeps_its_stored_figure_under_the_old_definition_only():
    old = SensorCostRecord(cpu_s=0.45, processed_pkts=100_000, us_per_pkt=4.5)
    assert old.definition == "quiet-idle"
    assert cpucost.cpu_seconds(old, "quiet-idle") == 0.45
    assert cpucost.cpu_seconds(old, "processing") is None and cpucost.us_per_pkt(old) is None


def test_the_quiet_watch_records_where_the_quiet_began():
    clock = Clock()
    worked = {"cpu": 0.0}

    def cpu() -> float:  # busy at 0.6 core until 1.0 s, then idle
        worked["cpu"] = 0.6 * min(clock.t, 1.0)
        return worked["cpu"]

    watch = QuietWatch(cpu, lambda: int(min(clock.t, 1.0) * 1000), 1.0, runnable=lambda: clock.t < 1.0,
                       clock=clock.now, window_s=0.2)
    assert watch.quiet_since is None
    while not watch() and clock.t < 5:
        clock.sleep(0.05)
    assert watch.quiet_since is not None
    t, at = watch.quiet_since
    assert 1.0 <= t < 1.06 and at == pytest.approx(0.6)  # all of the work, none of the quiet window
