"""Writes realistic fake campaign directories following docs/results.md ("The sample
directory and campaign.json", "monitor.csv") for pure-logic tests of analysis, report and compare.

Every sample gets its own replay start, its own stats-clock phase (`clock_offset_s`), optional clock
drift and per-record timestamp jitter, so alignment on seconds-since-replay-start is really exercised.
Counters ramp linearly from replay start to `duration_s`, so the true value at any checkpoint is known:
`expected_counter(case, k, name, t_s)`.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench.plan import Case
from idsbench.spec import Rate

PerSample = float | Sequence[float]
T0 = 1_700_000_000.0


def at(value: PerSample, k: int) -> float:
    return float(value[k]) if isinstance(value, (list, tuple)) else float(value)


@dataclass
class FakeCase:
    setup: str = "baremetal"
    replayers: int = 1
    trace: str = "builtin:mixed"
    rate: str = "recorded"
    cpus: float | None = 1.0
    memory: str | None = "2g"
    loops: int = 1
    samples: int = 3
    trace_pkts: int = 20_000
    duration_s: float = 10.0
    drop_fraction: PerSample = 0.0
    sensor_cpu: PerSample = 40.0
    host_cpu: PerSample = 30.0
    rss_bytes: PerSample = 300e6
    stable_after_s: PerSample = 10.5
    clock_offset_s: PerSample = 0.0     # phase of the sample's stats/monitor clock vs replay start
    clock_drift: PerSample = 0.0        # relative slip of the record interval (0.05 = 5% slower)
    statuses: Sequence[str] = ()        # per sample; default all "ok"
    labels: Sequence[str] = ()
    incomplete: Sequence[int] = ()      # sample indexes left without summary.json
    corrupt: Sequence[int] = ()         # sample indexes with a corrupt summary.json
    missing_counters: Sequence[str] = ()  # counters omitted from summary and counters.csv
    sender: str = "tcpreplay"           # "native": replayers report per-second sent/due and lateness
    config: str = "default"             # sensor.config (an A/B axis)
    workers: int | None = None          # placement.sensor_workers (None: not recorded, as before issue 28)
    threads: Sequence[int] = ()         # per sample, the workers the engine reported (sensor.threads)
    capture: str | None = None          # sensor.capture (an axis): recorded with options and drop points
    bypass: str | None = None           # sensor.bypass (an axis): recorded with its settings
    cpu_s: PerSample | None = None      # the sensor's CPU seconds over its processing span (summary.cost)
    idle_cores: float | None = None     # its idle rate before the replay (cost.pre_idle_cores; None: not read)
    duet_side: str | None = None        # mode = "duet": the side this case ran as
    rules: str = "default"              # the ruleset (a ruleset axis, a duet's rules)

    @property
    def plan_case(self) -> Case:
        return Case(trace=self.trace, replayers=self.replayers, rate=Rate.model_validate(self.rate),
                    loops=self.loops, setup=self.setup, cpus=self.cpus, memory=self.memory, sender=self.sender,
                    config=self.config, capture=self.capture, bypass=self.bypass, duet_side=self.duet_side,
                    rules=self.rules)

    @property
    def case_id(self) -> str:
        return self.plan_case.case_id

    @property
    def sent_pkts(self) -> int:
        return self.trace_pkts * self.replayers * self.loops

    def status(self, k: int) -> str:
        return self.statuses[k] if k < len(self.statuses) else "ok"


def expected_counter(case: FakeCase, k: int, name: str, t_s: float) -> float:
    """The true value of a counter of sample k at t_s seconds after its replay start."""
    captured = case.sent_pkts * min(max(t_s / case.duration_s, 0.0), 1.0)
    dropped = round(at(case.drop_fraction, k) * captured)
    decoded = round(captured) - dropped
    return {"captured_pkts": round(captured), "dropped_pkts": dropped, "decoded_pkts": decoded,
            "decoded_bytes": decoded * 600, "alerts": decoded // 1000, "flows": decoded // 20}.get(name, 0)


def write_campaign(root: Path, cases: Sequence[FakeCase], *, name: str = "fake",
                   stats_interval_s: int = 1, settle_s: float = 3.0, seed: int = 1,
                   per_second: bool = True, environment: dict | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    doc = {
        "schema": 1, "created_unix": T0,
        "spec": {
            "name": name, "description": "fake campaign for tests",
            "samples": max(c.samples for c in cases),
            "traffic": {"traces": sorted({c.trace for c in cases}),
                        "replayers": sorted({c.replayers for c in cases}),
                        "rate": sorted({c.rate for c in cases}), "loops": 1},
            "sensor": {"engine": "suricata", "rules": ["builtin:events"], "set": {},
                       "stats_interval_s": stats_interval_s},
            "setup": {"kinds": sorted({c.setup for c in cases})},
            "timing": {"settle_s": settle_s},
        },
        "environment": environment or {
            "hostname": "fakehost", "cpu_model": "Fake CPU @ 2.0GHz", "cpus": 2,
            "mem_total_bytes": 4 << 30, "kernel": "6.1.0-fake", "os": "Debian GNU/Linux 12 (bookworm)",
            "cgroup": "v2", "python": "3.11.2", "idsbench": "0.1.0", "tcpreplay": "4.4.3",
            "suricata": {"version": "7.0.10"}},
        "inputs": {"traces": {c.trace: {"ref": c.trace, "path": "", "sha256": "",
                                        "packets": c.trace_pkts, "bytes": c.trace_pkts * 600,
                                        "duration_s": c.duration_s} for c in cases},
                   "rules": []},
        "cases": [{"case_id": c.case_id, **c.plan_case.params(), "samples": c.samples} for c in cases],
    }
    (root / "campaign.json").write_text(json.dumps(doc, indent=2))
    for ci, case in enumerate(cases):
        for k in range(case.samples):
            start = T0 + 1000.0 * (ci * 50 + k) + rng.uniform(0, 0.9)
            _write_sample(root / "cases" / case.case_id / f"s{k}", case, k, start, stats_interval_s,
                          settle_s, rng, per_second)
    return root


def _times(start: float, case: FakeCase, k: int, interval: float, settle_s: float,
           rng: random.Random) -> list[float]:
    """Record timestamps: from 4 s before the replay to the end of settle, with phase, drift, jitter."""
    step = interval * (1.0 + at(case.clock_drift, k))
    t, out = start - 4.0 + at(case.clock_offset_s, k) % interval, []
    while t <= start + case.duration_s + settle_s:
        out.append(t + rng.uniform(-0.02, 0.02) * interval)
        t += step
    return out


def _write_sample(path: Path, case: FakeCase, k: int, start: float, interval: float, settle_s: float,
                  rng: random.Random, per_second: bool) -> None:
    path.mkdir(parents=True, exist_ok=True)
    names = ["captured_pkts", "dropped_pkts", "decoded_pkts", "decoded_bytes", "alerts", "flows"]
    kept = [n for n in names if n not in case.missing_counters]
    with open(path / "counters.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t_unix", "uptime_s", *kept])
        for t in _times(start, case, k, interval, settle_s, rng):
            w.writerow([f"{t:.6f}", f"{t - start + 5:.3f}",
                        *(expected_counter(case, k, n, t - start) for n in kept)])
    cpu, host, rss = at(case.sensor_cpu, k), at(case.host_cpu, k), at(case.rss_bytes, k)
    cols = ["t_unix", "host_cpu_pct", "cpu0_pct", "cpu1_pct", "mem_used_bytes", "mem_available_bytes",
            "swap_used_bytes", "disk_read_bytes", "disk_write_bytes", "softnet_processed",
            "softnet_dropped", "softnet_squeezed", "sensor_cpu_pct", "sensor_mem_bytes",
            "sensor_mem_peak_bytes", "sender_tx_pkts", "sender_tx_bytes", "sensor_rx_pkts",
            "sensor_rx_bytes", "sensor_rx_dropped"]
    peak = 0.0
    with open(path / "monitor.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for t in _times(start, case, k, interval, settle_s, rng):
            rel = t - start
            busy = 0.0 <= rel <= case.duration_s
            frac = min(max(rel / case.duration_s, 0.0), 1.0)
            mem = 50e6 + (rss - 50e6) * frac
            peak = max(peak, mem)
            sent = round(case.sent_pkts * frac)
            h = host if busy else 3.0
            w.writerow([f"{t:.6f}", h, h * 1.2, h * 0.8, 1.5e9 + mem, 2.5e9 - mem, 0, 0, 4096 * sent // 100,
                        sent, 0, 0, cpu if busy else 1.0, int(mem), int(peak), sent, sent * 600,
                        sent, sent * 600, 0])
    if k in case.incomplete:
        return
    final = {n: expected_counter(case, k, n, case.duration_s) for n in kept}
    status = case.status(k)
    per_sec = [{"t": s, "packets": case.trace_pkts // int(case.duration_s) + 100 * (s % 3),
                "bytes": 600 * (case.trace_pkts // int(case.duration_s))} for s in range(int(case.duration_s))]
    summary = {
        "schema": 1, "campaign": "fake", "case_id": case.case_id, "sample": k,
        "case": case.plan_case.params(), "status": status, "labels": list(case.labels),
        **({} if status == "ok" else {"reason": f"sensor {status} in sample {k}"}),
        "warnings": [] if status == "ok" else [f"sensor {status}"],
        "trace": {"ref": case.trace, "path": "/tmp/fake.pcap", "sha256": "0" * 64,
                  "packets": case.trace_pkts, "bytes": case.trace_pkts * 600, "duration_s": case.duration_s,
                  "max_frame": 1514, **({"per_second": per_sec} if per_second else {})},
        "sensor_stop_unix": start + case.duration_s,
        "replay": {"start_unix": start, "end_unix": start + case.duration_s, "sent_pkts": case.sent_pkts,
                   "sent_bytes": case.sent_pkts * 600, "failed_pkts": 0, "replayers": [
                       {"index": i, "pkts_sent": case.trace_pkts * case.loops, "bytes_sent": 0, "failed": 0,
                        "elapsed_s": case.duration_s, "pps": case.trace_pkts / case.duration_s,
                        "mbps": 1.0, "requested_pps": None, **_native_figures(case, k)}
                       for i in range(case.replayers)], "sender": case.sender},
        "sensor": {"engine": "suricata", "version": "7.0.10", "counters": final, "errors": [],
                   **({"threads": case.threads[k]} if k < len(case.threads) else {}),
                   **({"capture": case.capture, "capture_options": {"threads": 1},
                       "capture_drops": {f"{case.capture}.drops": final.get("dropped_pkts", 0)}}
                      if case.capture else {}),
                   **({"bypass": case.bypass, "bypass_settings": {"stream.bypass": case.bypass != "off"}}
                      if case.bypass else {})},
        **({"placement": {"sender_cpus": [0], "sensor_cpus": [1], "sensor_workers": case.workers}}
           if case.workers is not None else {}),
        "resources": {"sensor_cpu_pct": cpu, "sensor_rss_peak_bytes": int(rss), "host_cpu_pct": host},
        **({"cost": _cost(case, k, final.get("decoded_pkts", 0))} if case.cpu_s is not None else {}),
        "stable_after_s": at(case.stable_after_s, k),
    }
    text = json.dumps(summary, indent=2)
    (path / "summary.json").write_text(text[: len(text) // 2] if k in case.corrupt else text)
    (path / "eve.json").write_text("")
    (path / "suricata.log").write_text("fake\n")


def _cost(case: FakeCase, k: int, decoded: float) -> dict[str, object]:
    """summary.cost as the runner writes it ("processing": the CPU over the span, nothing subtracted)."""
    assert case.cpu_s is not None
    cpu = at(case.cpu_s, k)
    return {"cpu_s": cpu, "processed_pkts": int(decoded), "us_per_pkt": round(cpu / decoded * 1e6, 4) if decoded else None,
            "definition": "processing", "replay_s": case.duration_s, "cpu_replay_s": cpu,
            "processed_s": case.duration_s, "cpu_processed_s": cpu, "drained_s": case.duration_s + 0.3,
            "cpu_drained_s": cpu, "idle_cores": 0.004,
            **({"pre_idle_s": 2.0, "pre_idle_cores": case.idle_cores} if case.idle_cores is not None else {})}


def _native_figures(case: FakeCase, k: int) -> dict[str, object]:
    """What the native sender adds to a replayer's record: per second sent and due (one second
    10% short, made up in the next), lateness."""
    if case.sender != "native":
        return {}
    due = [case.trace_pkts * case.loops // int(case.duration_s)] * int(case.duration_s)
    sent = list(due)
    sent[2], sent[3] = round(due[2] * 0.9), due[3] + due[2] - round(due[2] * 0.9)
    return {"per_second": [{"t": t, "packets": p, "due_packets": d} for t, (p, d) in enumerate(zip(sent, due))],
            "lateness": {"p50_ms": 0.01 * (k + 1), "p99_ms": 0.2, "max_ms": 3.5}}


def standard_campaign(root: Path, *, samples: int = 3, seed: int = 1) -> tuple[Path, list[FakeCase]]:
    """Two setups (baremetal, container) × loads 1, 2, 4; the container costs more and drops at 4X."""
    cases = []
    for setup, extra in (("baremetal", 0.0), ("container", 1.0)):
        for r in (1, 2, 4):
            jitter = [1.0 + 0.02 * ((i % 3) - 1) for i in range(samples)]
            cases.append(FakeCase(
                setup=setup, replayers=r, samples=samples,
                sensor_cpu=[(20.0 * r + 5 * extra) * j for j in jitter],
                host_cpu=[(12.0 * r + 8 * extra) * j for j in jitter],
                rss_bytes=[(200e6 + 30e6 * r + 80e6 * extra) * j for j in jitter],
                drop_fraction=[(0.05 * extra if r == 4 else 0.0) * j for j in jitter],
                stable_after_s=[10.5 + 0.3 * r * j for j in jitter],
                clock_offset_s=[0.37 * i for i in range(samples)],
                labels=["emulated"] if setup == "container" else [],
            ))
    return write_campaign(root, cases, seed=seed), cases
