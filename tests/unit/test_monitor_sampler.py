"""Sampler schedule with an injected clock/sleep, the CSV it writes, and header stability."""

from __future__ import annotations

import csv
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from idsbench.errors import SpecError
from idsbench.monitor import Sampler, standard_sources


class FakeTime:
    """clock() and sleep(): a sleep advances the clock by the request plus `late(i)` for the
    i-th sleep; after `limit` sleeps it asks the sampler to stop."""

    def __init__(self, start: float = 100.0, late: Callable[[int], float] = lambda i: 0.0, limit: int = 10):
        self.now = start
        self.late = late
        self.limit = limit
        self.sleeps: list[float] = []
        self.sampler: Sampler | None = None
        self.on_sleep: Callable[[], None] = lambda: None

    def clock(self) -> float:
        return self.now

    def wall(self) -> float:
        return 1_700_000_000.0 + self.now

    def sleep(self, dt: float) -> None:
        self.on_sleep()
        self.sleeps.append(dt)
        self.now += dt + self.late(len(self.sleeps))
        if len(self.sleeps) >= self.limit and self.sampler is not None:
            self.sampler.request_stop()


class Recorder:
    """A source recording the fake clock at each sample; value = number of samples so far."""

    def __init__(self, ft: FakeTime, name: str = "n"):
        self.ft, self.name = ft, name
        self.times: list[float] = []
        self.started = self.stopped = False

    def columns(self) -> list[str]:
        return [self.name, f"{self.name}_t"]

    def start(self) -> None:
        self.started = True

    def sample(self) -> dict[str, float | int]:
        self.times.append(self.ft.now)
        return {self.name: len(self.times), f"{self.name}_t": self.ft.now}

    def stop(self) -> None:
        self.stopped = True


def run(tmp_path: Path, ft: FakeTime, interval: float = 1.0, sources: list | None = None) -> tuple[Sampler, Recorder]:
    rec = Recorder(ft)
    s = Sampler(tmp_path / "m.csv", interval, sources if sources is not None else [rec],
                clock=ft.clock, wall=ft.wall, sleep=ft.sleep)
    ft.sampler = s
    s.start()
    assert s._thread is not None
    s._thread.join(timeout=5)  # the fake sleep requests the stop after `limit` sleeps
    assert not s._thread.is_alive()
    s.stop()
    return s, rec


def read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_schedule_is_drift_free(tmp_path: Path) -> None:
    # every wake-up is 30 ms late; a relative schedule would drift by 30 ms per tick
    ft = FakeTime(late=lambda i: 0.03, limit=50)
    s, rec = run(tmp_path, ft, interval=0.5)
    ticks = rec.times[:-1]  # the last one is the final sample taken by stop()
    assert len(ticks) == 49 and s.missed_ticks == 0
    for k, t in enumerate(ticks, start=1):
        assert t - 100.0 == pytest.approx(k * 0.5 + 0.03)
    assert ft.sleeps[1:] == pytest.approx([0.47] * 49)  # each sleep aims at the absolute tick time


def test_late_ticks_are_skipped_and_counted(tmp_path: Path) -> None:
    # the 3rd sleep overshoots by 3.2 intervals: ticks 4, 5, 6 are missed, tick 6 is taken late
    ft = FakeTime(late=lambda i: 3.2 if i == 3 else 0.0, limit=6)
    s, rec = run(tmp_path, ft)
    assert s.missed_ticks == 3
    offsets = [round(t - 100.0, 6) for t in rec.times[:-1]]
    assert offsets == [1.0, 2.0, 6.2, 7.0, 8.0]  # back on the grid right after the late tick
    assert s.rows == len(rec.times) == 6


def test_final_sample_on_stop_and_csv_rows(tmp_path: Path) -> None:
    ft = FakeTime(limit=3)
    s, rec = run(tmp_path, ft, interval=2.0)
    rows = read_csv(tmp_path / "m.csv")
    assert rows[0] == ["t_unix", "n", "n_t"]
    assert [r[1] for r in rows[1:]] == ["1", "2", "3"]  # 2 ticks + the final sample
    assert rows[1][0] == f"{1_700_000_000.0 + 102.0:.3f}"
    assert rec.started and rec.stopped and s.rows == 3
    s.stop()  # idempotent
    assert len(read_csv(tmp_path / "m.csv")) == 4


def test_each_row_is_flushed(tmp_path: Path) -> None:
    ft = FakeTime(limit=4)
    seen: list[int] = []
    ft.on_sleep = lambda: seen.append(len(read_csv(tmp_path / "m.csv")))
    run(tmp_path, ft)
    assert seen == [1, 2, 3, 4]  # header, then one more row visible before every sleep


def test_broken_source_leaves_empty_cells(tmp_path: Path) -> None:
    class Broken:
        def columns(self) -> list[str]:
            return ["b"]

        def start(self) -> None: ...

        def sample(self) -> dict[str, float | int]:
            raise OSError("gone")

        def stop(self) -> None: ...

    ft = FakeTime(limit=2)
    rec = Recorder(ft)
    s, _ = run(tmp_path, ft, sources=[Broken(), rec])
    rows = read_csv(tmp_path / "m.csv")
    assert rows[0] == ["t_unix", "b", "n", "n_t"]
    assert all(r[1] == "" and r[2] != "" for r in rows[1:])
    assert s.error_count == 2 and "gone" in s.errors[0]


def test_duplicate_columns_and_bad_interval(tmp_path: Path) -> None:
    ft = FakeTime()
    with pytest.raises(SpecError, match="duplicate"):
        Sampler(tmp_path / "m.csv", 1.0, [Recorder(ft), Recorder(ft)])
    with pytest.raises(SpecError, match="interval"):
        Sampler(tmp_path / "m.csv", 0, [Recorder(ft)])


def test_real_thread_stops_promptly(tmp_path: Path) -> None:
    """With the default (interruptible) sleep, stop() does not wait out a long interval: the interval
    is 30 s and the sampler stops with only its final row."""
    ft = FakeTime()
    rec = Recorder(ft)
    s = Sampler(tmp_path / "m.csv", 30.0, [rec])
    s.start()
    t = time.monotonic()
    s.stop()
    # it did not wait out the 30 s interval (how promptly it stops is no claim for a loaded CI host)
    assert time.monotonic() - t < 30.0
    assert len(rec.times) == 1  # only the final sample: no tick was due
    assert s._thread is None


def test_standard_header_is_stable(tmp_path: Path) -> None:
    """The documented monitor.csv header (docs/results.md), in order."""
    ncpu = sum(1 for line in open("/proc/stat") if line.startswith("cpu") and line[3].isdigit())
    net = [f"{lbl}_{f}" for lbl in ("sender", "sensor")
           for f in ("rx_pkts", "rx_bytes", "rx_dropped", "tx_pkts", "tx_bytes", "tx_dropped")]
    expected = (["t_unix", "host_cpu_pct"] + [f"cpu{i}_pct" for i in range(ncpu)]
                + ["mem_used_bytes", "mem_available_bytes", "swap_used_bytes", "disk_read_bytes",
                   "disk_write_bytes", "softnet_processed", "softnet_dropped", "softnet_squeezed",
                   "sensor_cpu_pct", "sensor_mem_bytes", "sensor_mem_peak_bytes"] + net)
    pid = os.getpid()
    for _ in range(2):  # same header every time for the same host and labels
        s = Sampler(tmp_path / "m.csv", 1.0, standard_sources(None, [("sender", pid, None), ("sensor", pid, None)]))
        assert s.header == expected
