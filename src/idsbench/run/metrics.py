"""Per-sample figures derived from the monitor CSV and the sensor's counter series."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from idsbench.sensors.base import CounterPoint


def resources_in_window(monitor_csv: Path, t0: float, t1: float) -> dict:
    """Mean sensor/host CPU and peak sensor memory over rows with t0 < t_unix <= t1.

    CPU percents in the CSV cover the interval ending at each row, so rows up to t1 are used.
    """
    sensor_cpu: list[float] = []
    host_cpu: list[float] = []
    peak = 0
    try:
        with open(monitor_csv, newline="") as fh:
            for row in csv.DictReader(fh):
                t = float(row["t_unix"])
                peak = max(peak, _int(row.get("sensor_mem_peak_bytes")), _int(row.get("sensor_mem_bytes")))
                if t0 < t <= t1:
                    sensor_cpu.append(_float(row.get("sensor_cpu_pct")))
                    host_cpu.append(_float(row.get("host_cpu_pct")))
    except FileNotFoundError:
        pass
    return {
        "sensor_cpu_pct": _mean(sensor_cpu),
        "sensor_rss_peak_bytes": peak,
        "host_cpu_pct": _mean(host_cpu),
        "monitor_rows_in_window": len(sensor_cpu),
    }


def stable_after(series: list[CounterPoint], replay_start_unix: float) -> float | None:
    """Seconds from replay start to the first stats record showing the final decoded count."""
    if not series:
        return None
    final = series[-1].counters.decoded_pkts
    for point in series:
        if point.counters.decoded_pkts >= final:
            return round(max(0.0, point.t_unix - replay_start_unix), 3)
    return None


def _float(text: str | None) -> float:
    try:
        value = float(text) if text not in (None, "") else 0.0
    except ValueError:
        return 0.0
    return 0.0 if math.isnan(value) else value


def _int(text: str | None) -> int:
    return int(_float(text))


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0
