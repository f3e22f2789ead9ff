"""One sample: wire up, launch the sensor, monitor, replay, settle, stop, read counters, write summary.

Everything the sample creates lives in one teardown stack, closed on every exit path.
summary.json is written last and atomically: a sample is complete iff its summary exists.
"""

from __future__ import annotations

import csv
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from idsbench.errors import SensorFailed
from idsbench.plan import Case
from idsbench.proc import Supervisor, wait_all
from idsbench.run.context import CampaignContext
from idsbench.run.metrics import resources_in_window, stable_after
from idsbench.sensors.base import Counters, CounterPoint
from idsbench.sensors.eve import scan_eve
from idsbench.setups.base import SetupRequest
from idsbench.setups.registry import make_setup
from idsbench.store import atomic
from idsbench.teardown import TeardownStack
from idsbench.traffic import replay
from idsbench.wire.netns import NamespaceWire, WireEnds, mtu_for

Phase = Callable[[str], None]


@dataclass
class SampleOutcome:
    summary: dict
    warnings: list[str] = field(default_factory=list)


def split_cpus(available: list[int], sensor_cpuset: list[int] | None) -> tuple[list[int], list[int] | None]:
    """(sender CPUs, sensor CPUs): different CPUs where there are enough, else shared (None = all)."""
    if sensor_cpuset:
        rest = [c for c in available if c not in sensor_cpuset]
        return (rest or available), list(sensor_cpuset)
    if len(available) >= 2:
        return [available[0]], available[1:]
    return available, None


def run_sample(ctx: CampaignContext, case: Case, index: int, phase: Phase = lambda _p: None) -> SampleOutcome:
    sample_dir = ctx.layout.fresh_sample_dir(case.case_id, index)
    trace = ctx.traces[case.trace]
    warnings: list[str] = []
    summary: dict = {
        "schema": 1, "campaign": ctx.spec.name, "case_id": case.case_id, "sample": index,
        "case": case.params(), "status": "ok", "labels": [], "warnings": warnings,
        "started_unix": time.time(),
        "trace": trace.summary(),
    }
    with TeardownStack(state_dir=ctx.state_dir) as td:
        sup = Supervisor(td)
        sender_cpus, sensor_cpus = split_cpus(sorted(os.sched_getaffinity(0)), ctx.spec.setup.cpuset)
        setup = make_setup(case.setup, SetupRequest(
            sup=sup, name=f"{td.run_id}-s{index}", sample_dir=sample_dir, cpus=case.cpus,
            memory_bytes=case.memory_bytes, cpu_affinity=sensor_cpus,
            read_only_paths=tuple(ctx.rules), cache_dir=ctx.cache_dir,
            runtime=ctx.spec.setup.runtime, swappiness=ctx.spec.setup.swappiness,
            name_prefix=ctx.name_prefix,
            vcpus=ctx.spec.setup.vcpus, accel=ctx.spec.setup.accel,
        ))
        phase("wire")
        sensor_ns = setup.pre_wire()
        wire = NamespaceWire(sup, prefix=ctx.name_prefix, mtu=mtu_for(trace.max_frame),
                             sensor_ns=sensor_ns).up()
        phase("setup")
        stats = setup.prepare(wire)
        summary["labels"] = list(setup.labels)
        summary["placement"] = {"sender_cpus": sender_cpus, "sensor_cpus": sensor_cpus, "mtu": wire.mtu}
        run = ctx.sensor.prepare(sample_dir, setup.capture_interface(), ctx.rules, ctx.overrides,
                                 ctx.spec.sensor.stats_interval_s, mtu=wire.mtu)
        sampler = ctx.make_sampler(sample_dir / "monitor.csv", wire, stats, setup.overhead_sources())
        sampler.start()
        try:
            phase("sensor start")
            child = setup.launch(run.argv, stdout=sample_dir / "stdout.txt")
            try:
                summary["sensor_ready_s"] = run.wait_ready(child.poll, ctx.spec.sensor.ready_timeout_s)
            except SensorFailed as exc:
                setup.stop(5.0)
                summary["status"] = "oom" if setup.oom_killed() else "sensor-failed"
                summary["error"] = str(exc)
            if summary["status"] == "ok":
                phase("replay")
                sampler.sample_now()  # a row exactly at replay start and end
                _replay(ctx, case, wire, sup, sender_cpus, sample_dir, summary, warnings)
                sampler.sample_now()
                phase("settle")
                _settle(ctx.spec.timing.settle_s, child.poll)
                if child.poll() is not None:
                    summary["status"] = "oom" if setup.oom_killed() else "sensor-failed"
                    summary["error"] = f"the sensor exited during the run (status {child.returncode})"
                phase("sensor stop")
                sampler.stop()  # the series ends while the sensor still runs (no shutdown dip)
                summary["sensor_stop_unix"] = time.time()
                summary["sensor_exit"] = setup.stop(ctx.spec.timing.stop_timeout_s)
                if setup.oom_killed():
                    summary["status"] = "oom"
        finally:
            sampler.stop()
            summary["sensor_oom_kills"] = int(setup.oom_killed())
    phase("collect")
    _collect(ctx, case, run, sample_dir, summary, warnings)
    summary["finished_unix"] = time.time()
    atomic.write_json(sample_dir / "summary.json", summary)
    return SampleOutcome(summary, warnings)


def _replay(ctx: CampaignContext, case: Case, wire: WireEnds, sup: Supervisor, cpus: list[int],
            sample_dir: Path, summary: dict, warnings: list[str]) -> None:
    trace = ctx.traces[case.trace]
    requested = replay.requested_pps(case.rate, trace.packets, trace.duration_s, trace.bytes)
    planned = replay.planned_seconds(trace.packets * case.loops, requested, case.duration_s)
    children = []
    start = time.time()
    for i, pcap in enumerate(ctx.replay_paths(case)):
        argv = replay.tcpreplay_argv(wire.sender_if, pcap, case.rate, case.loops, trace.bytes,
                                     case.duration_s)
        children.append(sup.start(argv, name=f"tcpreplay-{i}", stdout=sample_dir / f"replay-{i}.txt",
                                  netns=wire.sender_ns, cpus=cpus))
    timeout = ctx.spec.timing.replay_timeout_s
    finished = wait_all(children, timeout)
    end = time.time()
    results = []
    for i, child in enumerate(children):
        sup.stop(child, timeout=5.0)
        text = (sample_dir / f"replay-{i}.txt").read_text(errors="replace")
        result = replay.parse_output(text, index=i, requested=requested, exit_code=child.returncode,
                                     planned_s=planned)
        results.append(result)
        if child.returncode != 0 and finished:
            fatal = replay.fatal_message(text) or f"exit status {child.returncode}"
            warnings.append(f"replayer {i} failed: {fatal}")
            summary["status"] = "replay-failed"
    short = [r for r in results if r.fell_short()]
    if short:
        summary["labels"].append("sender-short")
        worst = max(short, key=lambda r: max(r.shortfall or 0.0, r.overrun or 0.0))
        warnings.append(
            f"{len(short)} of {len(results)} replayers could not keep the requested rate (worst: "
            f"{worst.pps:.0f} pps in {worst.elapsed_s:.2f} s, requested {requested or 0:.0f} pps for "
            f"{planned or 0:.2f} s); fewer replayers, a lower rate or a quieter host give a cleaner load"
        )
    if not finished:
        warnings.append(f"the replay did not finish within {timeout:.0f} s (timing.replay_timeout_s)")
        summary["status"] = "replay-failed"
    summary["replay"] = {
        "start_unix": start, "end_unix": end,
        "sent_pkts": sum(r.pkts_sent for r in results),
        "sent_bytes": sum(r.bytes_sent for r in results),
        "failed_pkts": sum(r.failed for r in results),
        "requested_pps_per_replayer": requested,
        "planned_s": planned,
        "sender_short": any(r.fell_short() for r in results),
        "replayers": [r.to_json() for r in results],
    }


def _settle(seconds: float, poll: Callable[[], int | None]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and poll() is None:
        time.sleep(0.05)


def _collect(ctx: CampaignContext, case: Case, run, sample_dir: Path, summary: dict,
             warnings: list[str]) -> None:
    """Final counters (read after the sensor exited), series, resources, invariants."""
    series: list[CounterPoint] = []
    final = Counters()
    try:
        final = run.final_counters()
        series = run.counter_series()
    except SensorFailed as exc:
        warnings.append(str(exc))
    scan = run.last_eve_scan
    if scan is not None:
        warnings.extend(scan.warnings)
        summary["eve"] = {"path": str(run.eve_path), "lines": scan.lines,
                          "corrupt_lines": scan.corrupt_lines, "truncated_tail": bool(scan.truncated_tail)}
    _write_counters_csv(sample_dir / "counters.csv", series)
    summary["sensor"] = {
        "engine": ctx.spec.sensor.engine, "version": ctx.sensor_version,
        "counters": final.as_dict(), "errors": run.errors()[:50],
    }
    rep = summary.get("replay")
    if rep:
        window = (rep["start_unix"], rep["end_unix"] + ctx.spec.timing.settle_s)
        summary["resources"] = resources_in_window(sample_dir / "monitor.csv", *window)
        summary["stable_after_s"] = stable_after(series, rep["start_unix"])
    else:
        summary["resources"] = resources_in_window(sample_dir / "monitor.csv", 0, float("inf"))
        summary["stable_after_s"] = None
    if summary["status"] == "ok":
        _check_invariants(case, summary, final, warnings)
        _check_detection(ctx, case, run, summary, final, warnings)


def _check_invariants(case: Case, summary: dict, final: Counters, warnings: list[str]) -> None:
    sent = summary["replay"]["sent_pkts"]
    expected = case.replayers * case.loops * summary["trace"]["packets"]
    if case.duration_s is None and sent != expected:
        warnings.append(f"sent {sent} packets, expected {expected} (replayers × loops × trace packets)")
    if final.captured_pkts != final.decoded_pkts + final.dropped_pkts:
        warnings.append(
            f"captured {final.captured_pkts} != decoded {final.decoded_pkts} + dropped "
            f"{final.dropped_pkts}: the sensor's counters do not add up"
        )
    if final.dropped_pkts == 0 and final.decoded_pkts != sent:
        warnings.append(
            f"no drops, but decoded {final.decoded_pkts} != sent {sent}: something other than the "
            "replay crossed the wire, or packets were lost before capture (a bug; please report it)"
        )


MARKER_SIDS = range(1990000, 1990100)  # sensors/rules/markers.rules


def _check_detection(ctx: CampaignContext, case: Case, run, summary: dict, final: Counters,
                     warnings: list[str]) -> None:
    """With the marker rules loaded on a synthesized trace, the marker alert count is known."""
    markers = summary["trace"].get("markers")
    if markers is None or "builtin:markers" not in ctx.spec.sensor.rules or case.duration_s is not None:
        return
    found = 0

    def count(record: dict) -> None:
        nonlocal found
        found += record.get("alert", {}).get("signature_id") in MARKER_SIDS

    scan_eve(run.eve_path, ("alert",), count, warn_truncated=False)
    expected = markers * case.replayers * case.loops
    summary["detection"] = {"expected_marker_alerts": expected, "marker_alerts": found}
    if final.dropped_pkts == 0 and found != expected:
        warnings.append(f"{found} marker alerts, expected {expected} with no drops: "
                        "the sensor missed (or added) detections")


def _write_counters_csv(path: Path, series: list[CounterPoint]) -> None:
    names = Counters.field_names()
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["t_unix", "uptime_s", *names])
        for point in series:
            row = point.counters.as_dict()
            writer.writerow([f"{point.t_unix:.6f}", f"{point.uptime_s:.3f}", *(row[n] for n in names)])
