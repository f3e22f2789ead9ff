"""Whether a sensor kept up with a replay, from its CPU time around it (`SensorCpu`)."""

from __future__ import annotations

import pytest

from idsbench.run.session import SensorCpu


def test_a_sensor_that_kept_up_has_no_backlog_beyond_its_idle_use():
    # 2 s replay using 0.8 core; a 2 s drain at its idle rate of 0.01 core
    cpu = SensorCpu(idle_rate=0.01, at_start=10.0, at_replay_end=11.6, at_drained=11.62, replay_s=2.0, drain_s=2.0)
    assert cpu.backlog_fraction == pytest.approx(0.0, abs=1e-9)
    assert cpu.cores_needed == pytest.approx(0.81)


def test_work_left_when_the_replay_ended_is_the_backlog():
    # held at 1 core for 2 s, then 0.3 CPU-s more to empty the ring: 15% of the trial's work was left
    cpu = SensorCpu(idle_rate=0.0, at_start=0.0, at_replay_end=2.0, at_drained=2.3, replay_s=2.0, drain_s=1.5)
    assert cpu.backlog_fraction == pytest.approx(0.15)
    assert cpu.cores_needed == pytest.approx(1.15)


def test_an_emulator_idling_at_a_tenth_of_a_core_is_not_a_backlog():
    # a VM: qemu uses 0.1 core doing nothing; a 3 s drain costs 0.3 CPU-s of that alone
    cpu = SensorCpu(idle_rate=0.1, at_start=0.0, at_replay_end=1.0, at_drained=1.31, replay_s=2.0, drain_s=3.0)
    assert cpu.backlog_fraction == pytest.approx(0.01 / 0.8)


def test_no_work_during_the_replay_gives_no_fraction():
    cpu = SensorCpu(idle_rate=0.5, at_start=0.0, at_replay_end=0.5, at_drained=1.0, replay_s=1.0, drain_s=1.0)
    assert cpu.backlog_fraction == 0.0
