"""Memory starvation named (issue 24): a group's memory events (v1 and v2, fake trees), the watch
that ends a readiness wait when the group is stuck at its limit, and the `oom` verdict's reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.infra import cgroups
from idsbench.infra.cgroups import MemoryEvents, MemoryStarved, StarvationWatch, is_stuck
from idsbench.run.verdict import SampleFacts, judge
from tests.fakeclock import Clock
from tests.unit.test_cgroups import FakeKernel, kernel_v1, kernel_v2  # noqa: F401 (fixtures)

MiB = 2**20
LIMIT = 96 * MiB


def _ev(usage_mib: float, anon_mib: float = 10, **kw: object) -> MemoryEvents:
    base: dict[str, object] = {"limit_bytes": LIMIT, "usage_bytes": int(usage_mib * MiB),
                               "peak_bytes": int(usage_mib * MiB), "anon_bytes": int(anon_mib * MiB)}
    return MemoryEvents(**(base | kw))  # type: ignore[arg-type]


def test_v2_memory_events_read_every_signal(tmp_path: Path, kernel_v2: FakeKernel) -> None:  # noqa: F811
    cg = cgroups.create("s0", memory_bytes=LIMIT, root=tmp_path)
    d = cg.paths[0]
    (d / "memory.current").write_text(f"{LIMIT - MiB}\n")
    (d / "memory.peak").write_text(f"{LIMIT}\n")
    (d / "memory.events").write_text("low 0\nhigh 4\nmax 170\noom 2\noom_kill 1\n")
    (d / "memory.stat").write_text(f"anon {90 * MiB}\nfile 100\npgmajfault 33\n")
    (d / "memory.pressure").write_text("some avg10=80.00 avg60=1.00 avg300=0.00 total=1\n"
                                       "full avg10=61.50 avg60=1.00 avg300=0.00 total=1\n")
    e = cg.memory_events()
    assert e == MemoryEvents(limit_bytes=LIMIT, usage_bytes=LIMIT - MiB, peak_bytes=LIMIT, anon_bytes=90 * MiB,
                             limit_hits=170, high=4, oom=2, oom_kills=1, major_faults=33, psi_full_avg10=61.5)
    assert e.at_limit() and e.reached_limit()
    text = e.describe()
    for part in ("limit 96 MiB", "peak 96 MiB", "limit hits 170", "oom kills 1", "full avg10 61.5%"):
        assert part in text
    (d / "memory.max").write_text("max\n")
    assert cg.memory_events().limit_bytes is None and not cg.memory_events().at_limit()


def test_v1_memory_events_read_failcnt_oom_control_and_stat(tmp_path: Path, kernel_v1: FakeKernel) -> None:  # noqa: F811
    for h in ("cpuacct", "memory"):
        kernel_v1.add_v1_hierarchy(h)
    cg = cgroups.create("s0", memory_bytes=LIMIT, root=tmp_path)
    mem = tmp_path / "memory/idsbench/s0"
    (mem / "memory.usage_in_bytes").write_text(f"{LIMIT}\n")
    (mem / "memory.max_usage_in_bytes").write_text(f"{LIMIT}\n")
    (mem / "memory.failcnt").write_text("5\n")
    (mem / "memory.memsw.failcnt").write_text("7\n")
    (mem / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 1\noom_kill 0\n")
    (mem / "memory.stat").write_text(f"rss 1\ntotal_rss {93 * MiB}\ntotal_pgmajfault 12\n")
    e = cg.memory_events()
    assert (e.limit_bytes, e.usage_bytes, e.peak_bytes, e.anon_bytes) == (LIMIT, LIMIT, LIMIT, 93 * MiB)
    assert (e.limit_hits, e.oom, e.oom_kills, e.major_faults, e.under_oom) == (12, 1, 0, 12, True)
    assert e.psi_full_avg10 is None and "under_oom" in e.describe()
    (mem / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert cg.memory_events().limit_bytes is None


def test_stuck_needs_the_limit_and_a_sign_of_no_progress() -> None:
    assert not is_stuck(None, _ev(60, anon_mib=60))                      # far from the limit
    assert not is_stuck(None, _ev(95.5, anon_mib=20))                    # at it, but page cache only
    assert not is_stuck(_ev(95.5, anon_mib=20), _ev(95.5, anon_mib=20))  # ... and nothing moves
    assert is_stuck(None, _ev(95.5, anon_mib=93))                        # anonymous memory fills it
    assert is_stuck(_ev(95.5, limit_hits=3), _ev(95.5, limit_hits=9))    # hitting the limit
    assert is_stuck(_ev(95.5, major_faults=3), _ev(95.5, major_faults=90))  # thrashing its code
    assert not is_stuck(_ev(95.5, major_faults=3), _ev(95.5, major_faults=5))  # a few pages: no
    assert is_stuck(None, _ev(95.5, psi_full_avg10=55.0))
    assert is_stuck(None, _ev(96, under_oom=True))
    assert not is_stuck(None, MemoryEvents(limit_bytes=None, usage_bytes=LIMIT, peak_bytes=LIMIT, anon_bytes=LIMIT))



def test_watch_raises_after_the_group_sat_at_its_limit_long_enough() -> None:
    clock = Clock()
    readings = iter([_ev(50)] * 4 + [_ev(95.8, anon_mib=94)] * 100)
    watch = StarvationWatch(lambda: next(readings), after_s=5.0, interval_s=0.5, clock=clock)
    polled = watch.guard(lambda: None)
    with pytest.raises(MemoryStarved) as caught:
        while clock.t < 30:
            assert polled() is None
            clock.t += 0.05
    # At the limit from the 5th reading (t = 2.0 s); 5 s later the wait ends.
    assert 6.9 <= clock.t <= 7.6, clock.t
    exc = caught.value
    assert exc.events.limit_bytes == LIMIT and exc.stuck_s >= 5.0
    assert "sat at its limit" in str(exc) and "limit 96 MiB" in str(exc)
    assert "raise setup.memory" in (exc.fix or "")


def test_watch_restarts_its_count_when_the_group_gets_unstuck() -> None:
    clock = Clock()
    pattern = [_ev(95.8, anon_mib=94)] * 8 + [_ev(70)]  # 4 s stuck, then relief, repeatedly
    readings = iter(pattern * 10)
    watch = StarvationWatch(lambda: next(readings), after_s=5.0, interval_s=0.5, clock=clock)
    for _ in range(80):
        watch.check()
        clock.t += 0.5
    assert watch.last is not None


def test_watch_ignores_a_group_that_is_gone() -> None:
    def gone() -> MemoryEvents:
        raise FileNotFoundError("memory.current")

    StarvationWatch(gone, clock=Clock()).check()  # the sensor's exit is what the caller reports


def test_starved_sensor_is_oom_with_limit_peak_events_and_a_fix() -> None:
    ev = _ev(96, anon_mib=94, limit_hits=0, major_faults=4)
    v = judge(SampleFacts(engine="suricata", expected_pkts=None, memory=ev, memory_starved=True,
                          sensor_failure="suricata did not start: Suricata was not ready after 120 s. "
                          "Errors from /x/suricata.log:\n  (no Error lines logged)"))
    assert v.status == "oom"
    assert v.reason is not None
    for part in ("ran out of memory", "limit 96 MiB", "peak 96 MiB", "not ready after 120 s",
                 "raise setup.memory (e.g. to 192m)"):
        assert part in v.reason, (part, v.reason)
    assert "Errors from" not in v.reason


def test_oom_kill_names_the_limit_when_it_was_read() -> None:
    ev = _ev(96, anon_mib=95, oom_kills=1)
    v = judge(SampleFacts(engine="suricata", expected_pkts=None, oom=True, memory=ev,
                          sensor_failure="suricata did not start: Suricata exited with code -9"))
    assert v.status == "oom" and v.reason is not None
    assert "OOM killer" in v.reason and "limit 96 MiB" in v.reason and "oom kills 1" in v.reason
    plain = judge(SampleFacts(engine="suricata", expected_pkts=None, oom=True))
    assert plain.status == "oom" and "OOM killer" in (plain.reason or "")


def test_a_failure_without_memory_trouble_stays_failed() -> None:
    v = judge(SampleFacts(engine="suricata", expected_pkts=None, memory=_ev(40), memory_starved=False,
                          sensor_failure="suricata did not start: exited with code 1"))
    assert v.status == "failed"
