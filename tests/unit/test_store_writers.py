"""The store's writers: whole files atomically, series a whole row at a time, readers of complete lines."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from idsbench.counters import Counters
from idsbench.sensors.base import CounterPoint
from idsbench.store import atomic
from idsbench.store.appender import RowAppender
from idsbench.store.duet import project_monitor, read_monitor_rows
from idsbench.store.layout import COUNTERS_FILE
from idsbench.store.series_file import series_rows, write_counters
from idsbench.store.series_io import read_csv_fast, read_series
from idsbench.store.writers import HostClockRecord, HostsRecord, write_hosts_record


def _csv(rows: list[list[object]]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def test_the_appender_writes_what_the_csv_module_writes(tmp_path: Path):
    path = tmp_path / "m.csv"
    out = RowAppender(path, ["t_unix", "a", "b"])
    out.append(["1.000", "2", ""])
    out.append(["2.000", "x,y", "3"])  # quoted where the csv module quotes
    out.close()
    out.close()  # idempotent
    assert path.read_bytes().decode() == _csv([["t_unix", "a", "b"], ["1.000", "2", ""], ["2.000", "x,y", "3"]])
    with pytest.raises(ValueError, match="after close"):
        out.append(["3.000", "1", "1"])


def test_readers_leave_out_a_cut_last_row(tmp_path: Path):
    path = tmp_path / "monitor.csv"
    path.write_bytes(b"t_unix,sensor_cpu_pct\r\n1.000,50.00\r\n2.000,60.00\r\n3.0")  # the writer died mid-row
    assert [r["t_unix"] for r in series_rows(path).rows] == ["1.000", "2.000"]
    assert series_rows(path).header == ("t_unix", "sensor_cpu_pct")
    frame = read_series(path)
    assert frame is not None and list(frame["t_unix"]) == [1.0, 2.0]
    fast = read_csv_fast(path)
    assert fast is not None and list(fast["t_unix"]) == [1.0, 2.0]
    assert [r["t_unix"] for r in read_monitor_rows(path)] == [1.0, 2.0]
    out = tmp_path / "side.csv"
    project_monitor(path, "a", out)
    assert out.read_bytes().decode() == "t_unix,sensor_cpu_pct\r\n1.000,50.00\r\n2.000,60.00\r\n"
    with pytest.raises(FileNotFoundError):
        series_rows(tmp_path / "absent.csv")


WRITER = """
import sys
from idsbench.store.appender import RowAppender
out = RowAppender(__import__("pathlib").Path(sys.argv[1]), ["t_unix", *(f"c{i}" for i in range(40))])
print("ready", flush=True)
k = 0
while True:
    k += 1
    out.append([f"{k}.000", *(str(123456789 + k) for _ in range(40))])
"""


def test_a_killed_writer_leaves_only_whole_rows(tmp_path: Path):
    """SIGKILL while rows of ~400 bytes are appended as fast as they go: every row a reader sees is whole."""
    path = tmp_path / "monitor.csv"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while path.stat().st_size < 2_000_000 and time.monotonic() < deadline:  # a few thousand rows, page edges crossed
            time.sleep(0.01)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    rows = series_rows(path).rows
    assert len(rows) > 1000
    for k, row in enumerate(rows, start=1):
        assert row["t_unix"] == f"{k}.000" and all(row[f"c{i}"] == str(123456789 + k) for i in range(40))


def test_whole_files_appear_whole(tmp_path: Path):
    path = tmp_path / "d" / "f.bin"
    atomic.write_bytes(path, b"one")
    with pytest.raises(RuntimeError), atomic.receiving(path) as fh:
        fh.write(b"half of two")
        raise RuntimeError("the copy broke")
    assert path.read_bytes() == b"one" and sorted(p.name for p in path.parent.iterdir()) == ["f.bin"]
    src = tmp_path / "src.txt"
    src.write_text("x")
    os.chmod(src, 0o640)
    atomic.copy_file(src, tmp_path / "d" / "copy.txt")
    assert (tmp_path / "d" / "copy.txt").read_text() == "x" and (tmp_path / "d" / "copy.txt").stat().st_mode & 0o777 == 0o640


def test_counters_csv_keeps_its_format(tmp_path: Path):
    points = [CounterPoint(1700000000.5, 1.25, Counters(decoded_pkts=10)),
              CounterPoint(1700000001.5, 2.25, Counters(decoded_pkts=20))]
    path = write_counters(tmp_path, points)
    names = Counters.field_names()
    assert path == tmp_path / COUNTERS_FILE
    assert path.read_bytes().decode() == _csv(
        [["t_unix", "uptime_s", *names],
         *[[f"{p.t_unix:.6f}", f"{p.uptime_s:.3f}", *(p.counters.as_dict()[n] for n in names)] for p in points]])


def test_hosts_json_keeps_its_keys(tmp_path: Path):
    record = HostsRecord(pair="p1", hosts={"sensor": HostClockRecord(name="s", address="198.18.0.1", clock_offset_s=0.1,
                                                                     clock_uncertainty_s=0.01)},
                         artifacts_sha256={"eve.json": "ab"}, controller_started_unix=1.0, controller_s=2.0)
    text = write_hosts_record(tmp_path, record).read_text()
    import json

    doc = json.loads(text)
    assert list(doc) == ["pair", "clock", "hosts", "artifacts_sha256", "controller_started_unix", "controller_s"]
    assert doc["hosts"]["sensor"] == {"name": "s", "address": "198.18.0.1", "clock_offset_s": 0.1,
                                      "clock_uncertainty_s": 0.01}
