"""The sensor's CPU time for one replay's packets — what `sensor_us_per_pkt` divides by the packets it
processed — by three definitions, each a pure function of one sample's raw readings
(`store.schema.SensorCostRecord`; issue 28 item 2, docs/cost.md):

- "processing" (the one used): its cgroup's CPU from replay start to the end of its processing (the start
  of the quiet window that ended the drain: from there on it used no more than idle), nothing
  subtracted. Its housekeeping during the replay is part of the cost; nothing is estimated. Where the
  drain did not end by quietness (a VM, an interface that cannot tell), the end of processing is not
  seen: the CPU to the end of the replay plus the tail work after it, the idle rate taken out of the tail
  only.
- "pre-idle": the same span, minus the idle rate measured before the replay (`timing.idle_window_s`, 1 s by
  default: whole periods of the sensor's housekeeping; a benchmark's `SampleDeps.bench_pre_idle_s`) × the
  span: what the packets cost beyond the sensor's fixed housekeeping — `sensor_us_per_pkt_net` (issue 41).
- "quiet-idle" (before issue 28): the CPU to the end of the drain minus the rate of the ≥ 0.2-s quiet
  window × the whole replay and drain. Suricata's housekeeping runs on 1-s and 100-ms periods, so whether a
  wake-up falls inside that window decides which of two levels is subtracted (the two clusters of issue 28).
"""

from __future__ import annotations

from idsbench.store.schema import SensorCostRecord

DEFINITIONS = ("processing", "pre-idle", "quiet-idle")
USED = "processing"
NET = "pre-idle"  # sensor_us_per_pkt_net: the fixed housekeeping over the span taken out


def _tail(r: SensorCostRecord) -> float | None:
    """The CPU after the replay, idle taken out (the fallback end of processing)."""
    if None in (r.cpu_replay_s, r.cpu_drained_s, r.replay_s, r.drained_s):
        return None
    assert r.cpu_replay_s is not None and r.cpu_drained_s is not None and r.drained_s is not None
    assert r.replay_s is not None
    tail = r.cpu_drained_s - r.cpu_replay_s - (r.idle_cores or 0.0) * (r.drained_s - r.replay_s)
    return max(0.0, tail)


def processing_span(r: SensorCostRecord) -> tuple[float, float] | None:
    """(seconds, CPU seconds) from replay start to the end of the sensor's processing; None: not read."""
    if r.processed_s is not None and r.cpu_processed_s is not None:
        return r.processed_s, r.cpu_processed_s
    tail = _tail(r)
    if tail is None or r.replay_s is None or r.cpu_replay_s is None:
        return None
    return r.replay_s, r.cpu_replay_s + tail


def cpu_seconds(r: SensorCostRecord, definition: str = USED) -> float | None:
    """The CPU seconds the replay's packets cost by `definition` (DEFINITIONS); None: its readings are missing."""
    if definition == "processing":
        span = processing_span(r)
        return None if span is None else max(0.0, span[1])
    if definition == "pre-idle":
        span = processing_span(r)
        if span is None or r.pre_idle_cores is None:
            return None
        return max(0.0, span[1] - r.pre_idle_cores * span[0])
    if definition == "quiet-idle":
        if r.cpu_drained_s is None or r.drained_s is None or r.idle_cores is None:
            return r.cpu_s if r.definition == "quiet-idle" else None  # an older summary: what it stored
        return max(0.0, r.cpu_drained_s - r.idle_cores * r.drained_s)
    raise ValueError(f"unknown CPU cost definition {definition!r} (one of {', '.join(DEFINITIONS)})")


def us_per_pkt(r: SensorCostRecord, definition: str = USED) -> float | None:
    """µs of CPU per processed packet by `definition`; None without packets, CPU or readings."""
    cpu = cpu_seconds(r, definition)
    if cpu is None or cpu <= 0 or r.processed_pkts <= 0:
        return None
    return cpu / r.processed_pkts * 1e6
