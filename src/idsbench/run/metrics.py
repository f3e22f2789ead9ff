"""Per-sample figures derived from the monitor CSV and the sensor's counter series."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from idsbench.sensors.base import CounterPoint


CSV_TIME_RESOLUTION_S = 0.0005  # monitor.csv stamps are rounded to the millisecond


def resources_in_window(monitor_csv: Path, t0: float, t1: float) -> dict:
    """Time-weighted mean sensor/host CPU over the rows that cover (t0, t1], and the peak sensor
    memory of the whole sample.

    A row's CPU percentages cover the interval since the previous row, so a row stamped at t0
    (the runner writes one at replay start) describes what came before and is left out.
    """
    sensor_sum = host_sum = weight = 0.0
    rows = 0
    peak = 0
    previous: float | None = None
    try:
        with open(monitor_csv, newline="") as fh:
            for row in csv.DictReader(fh):
                t = float(row["t_unix"])
                peak = max(peak, _int(row.get("sensor_mem_peak_bytes")), _int(row.get("sensor_mem_bytes")))
                if previous is not None and t0 + CSV_TIME_RESOLUTION_S < t <= t1 + CSV_TIME_RESOLUTION_S:
                    span = t - max(previous, t0)
                    sensor_sum += _float(row.get("sensor_cpu_pct")) * span
                    host_sum += _float(row.get("host_cpu_pct")) * span
                    weight += span
                    rows += 1
                previous = t
    except FileNotFoundError:
        pass
    return {
        "sensor_cpu_pct": round(sensor_sum / weight, 3) if weight > 0 else 0.0,
        "sensor_rss_peak_bytes": peak,
        "host_cpu_pct": round(host_sum / weight, 3) if weight > 0 else 0.0,
        "monitor_rows_in_window": rows,
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
