"""SampleRun with honest fakes: the sequence, verdicts, teardown order on errors, resume bookkeeping.

The fakes behave like the real parts do (a sensor that publishes cumulative counters after the
replay, a wire whose interface counters move by what was sent), without root or programs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest

from idsbench.campaign_settings import campaign_settings
from idsbench.errors import EnvironmentMissing, SensorFailed
from idsbench.monitor import witnessloop
from idsbench.monitor.netdev import IfCounters
from idsbench.monitor.witness import WitnessPlan
from idsbench.plan import plan
from idsbench.proc import Supervisor
from idsbench.run.campaign import run_campaign
from idsbench.run.context import CampaignContext
from idsbench.run.drain import WireSnapshot, near_idle_cores
from idsbench.run.replay import ReplayOutcome, ReplayPlan
from idsbench.run.sample import SampleDeps, SampleRun, SenderGroup
from idsbench.run.session import SensorSession
from idsbench.run.verdict import ReplayerFacts
from idsbench.sensors.base import CounterPoint, Counters, EventLogIntegrity, SensorOptions
from idsbench.setups.base import SetupRequest
from idsbench.spec import Spec, spec_from_dict
from idsbench.store.campaigndoc import CampaignDoc
from idsbench.store.layout import CampaignDir
from idsbench.store.reader import load_campaign
from idsbench.store.schema import PlannedCase, ReplayerRecord, ReplayRecord, TraceRecord
from idsbench.teardown import TeardownStack, resource_kind
from idsbench.wire.netns import WireEnds

TRACE = TraceRecord(ref="t.pcap", path="/nonexistent/t.pcap", sha256="0" * 64, packets=100, bytes=60_000,
                    duration_s=1.0, max_frame=1514)
EVENTS: list[str] = []


@resource_kind
@dataclass(frozen=True)
class FakeResource:
    kind: ClassVar[str] = "test-fake-resource"
    name: str

    def undo(self) -> None:
        EVENTS.append(f"undo {self.name}")

    def describe(self) -> str:
        return self.name


@dataclass
class Script:
    """What the fake world does in one sample."""

    sent_per_replayer: int = 100
    captured: int | None = None          # default: everything sent
    dropped: int = 0
    decoded: int | None = None           # default: captured - dropped
    sensor_dies: int | None = None       # exit code of a sensor that dies during the replay
    never_ready: bool = False
    oom: bool = False
    replayer_exit: dict[int, int] = field(default_factory=dict)
    wire_lost: int = 0
    setup_fails: bool = False
    eve_cut: bool = False
    pps: float | None = None             # achieved pps (default: the requested)
    stuck: bool = False                  # decoded stops moving for good (a sensor that hangs)
    # its published counters show 50 packets unprocessed for this long after the replay while it works
    # through them (a worker throttled by a small CPU quota publishes late), then all processed
    frozen_s: float = 0.0
    cpu_cores: float | None = None       # its CPU use while it has work (None: its cgroup cannot be read)


class FakeSensorRun:
    def __init__(self, script: Script, clock: FakeClock, threads: int | None = None):
        self.script, self.clock, self.threads = script, clock, threads
        self.argv = ["fake-sensor"]
        self.log_dir = Path("/nonexistent")
        self.final: Counters | None = None

    def wait_ready(self, poll, timeout_s: float) -> float:
        if self.script.never_ready:
            raise SensorFailed("fake sensor exited before it was ready")
        return 0.25

    def _counters(self) -> Counters:
        s, sent = self.script, self.clock.sent
        captured = sent - s.wire_lost if s.captured is None else s.captured
        decoded = captured - s.dropped if s.decoded is None else s.decoded
        return Counters(captured_pkts=captured, dropped_pkts=s.dropped, decoded_pkts=decoded, decoded_bytes=decoded * 600)

    def live_counters(self) -> CounterPoint | None:
        c = self._counters()
        second = float(int(self.clock.now))  # like Suricata: one stats record per second
        if self.clock.sent and not self.script.stuck and c.unprocessed_pkts > 0:  # still working: decoded moves
            c = Counters(**{**c.as_dict(), "decoded_pkts": c.decoded_pkts - 1 - int(second) % 2})
        if self.clock.sent and self.clock.now < self.clock.replay_end + self.script.frozen_s:
            c = Counters(**{**c.as_dict(), "decoded_pkts": max(0, c.decoded_pkts - 50)})
        return CounterPoint(1_700_000_000.0 + second, second, c)

    def final_counters(self) -> Counters:
        if self.script.sensor_dies is not None and self.script.sensor_dies < 0:
            raise SensorFailed("fake sensor left no counters")
        return self._counters()

    def counter_series(self) -> list[CounterPoint]:
        return [CounterPoint(self.clock.wall(), 1.0, self._counters())]

    def degraded(self) -> dict[str, int]:
        return {}

    def alerts_by_signature(self) -> dict[int, int]:
        return {}

    def errors(self) -> list[str]:
        return []

    def integrity(self) -> EventLogIntegrity | None:
        return EventLogIntegrity(Path("/nonexistent/eve.json"), 10, 0, self.script.eve_cut)

    def capture_info(self) -> tuple[str, dict[str, object], dict[str, int]]:
        return "af-packet", {"tpacket-v3": True}, {"af-packet.ring_drops": 0}

    def worker_threads(self) -> int | None:
        return self.threads if self.threads is not None else 7  # "auto": whatever the engine chose


class FakeEngine:
    name = "fake"

    def __init__(self, script: Script, clock: FakeClock):
        self.script, self.clock = script, clock

    def prepare(self, run_dir: Path, interface: str, options: SensorOptions, *, mtu: int | None = None):
        EVENTS.append(f"sensor prepare {interface}")
        return FakeSensorRun(self.script, self.clock, options.threads)

    def host_paths(self) -> tuple[Path, ...]:
        return ()


class FakeChild:
    pid = 4242

    def __init__(self, script: Script, clock: FakeClock):
        self.script, self.clock = script, clock

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def poll(self) -> int | None:
        if self.script.sensor_dies is not None and self.clock.sent > 0:
            return self.script.sensor_dies
        return None


class FakeSetup:
    kind = "fake"
    labels: tuple[str, ...] = ("fake-label",)
    invisible: tuple[str, ...] = ()

    def __init__(self, request: SetupRequest, script: Script, clock: FakeClock):
        self.req, self.script, self.clock = request, script, clock

    def pre_wire(self) -> str | None:
        return None

    def prepare(self, wire: WireEnds):
        if self.script.setup_fails:
            raise EnvironmentMissing("the fake runtime is not installed", fix="install it")
        self.req.sup.teardown.push(FakeResource("cgroup"))
        EVENTS.append("setup prepare")
        return None if self.script.cpu_cores is None else FakeCpu(self.script, self.clock)

    def capture_interface(self) -> str:
        return "fake0"

    def launch(self, argv: Sequence[str], *, stdout: Path) -> FakeChild:
        self.req.sup.teardown.push(FakeResource("sensor process"))
        EVENTS.append("launch")
        return FakeChild(self.script, self.clock)

    def stop(self, timeout_s: float) -> int | None:
        EVENTS.append("stop")
        return self.script.sensor_dies if self.script.sensor_dies is not None else 0

    def oom_killed(self) -> bool:
        return self.script.oom

    def overhead_sources(self) -> list:
        return []


class FakeCpu:
    """The sensor's cgroup CPU time: `cpu_cores` while it has work (a stuck sensor: all along), near
    nothing after."""

    IDLE_CORES = 0.002

    def __init__(self, script: Script, clock: FakeClock):
        self.script, self.clock, self.t0 = script, clock, clock.now

    def cpu_usage_ns(self) -> int:
        s, now = self.script, self.clock.now
        cores = s.cpu_cores or 0.0
        work_end = now if s.stuck else (self.clock.replay_end + s.frozen_s if self.clock.sent else self.t0)
        busy = max(0.0, min(now, work_end) - self.t0)
        return int(1e9 * (cores * busy + self.IDLE_CORES * (now - self.t0 - busy)))


class FakeWire:
    def __init__(self, sup: Supervisor):
        self.sup = sup

    def up(self) -> WireEnds:
        self.sup.teardown.push(FakeResource("netns"))
        EVENTS.append("wire up")
        return WireEnds("snd", "tx0", "sen", "rx0", 1500, os.getpid(), os.getpid())


class FakeSender:
    name = "tcpreplay"

    def __init__(self, script: Script, clock: FakeClock):
        self.script, self.clock = script, clock

    def replay(self, sup: Supervisor, plan: ReplayPlan) -> ReplayOutcome:
        EVENTS.append(f"replay {len(plan.pcaps)}")
        start = self.clock.wall()
        self.clock.sent = 0
        records, facts = [], []
        for i in range(len(plan.pcaps)):
            code = self.script.replayer_exit.get(i, 0)
            sent = self.script.sent_per_replayer if code == 0 else self.script.sent_per_replayer // 2
            pps = self.script.pps or plan.job.requested_pps or 100.0
            records.append(ReplayerRecord(index=i, pkts_sent=sent, bytes_sent=sent * 600, elapsed_s=sent / pps,
                                          pps=pps, requested_pps=plan.job.requested_pps, exit_code=code,
                                          planned_s=plan.job.planned_s))
            facts.append(ReplayerFacts(i, "tcpreplay", code, sent, pps, plan.job.requested_pps, sent / pps,
                                       plan.job.planned_s))
            self.clock.sent += sent
            self.clock.wire_tx += sent
        self.clock.now += 1.0
        self.clock.replay_end = self.clock.now
        record = ReplayRecord(start_unix=start, end_unix=self.clock.wall(), sent_pkts=self.clock.sent,
                              sent_bytes=self.clock.sent * 600, replayers=tuple(records))
        return ReplayOutcome(record, tuple(facts))


class FakeMonitor:
    def start(self) -> None:
        EVENTS.append("monitor start")

    def sample_now(self) -> None:
        pass

    def stop(self) -> None:
        if "monitor stop" not in EVENTS:
            EVENTS.append("monitor stop")


class FakeWitness:
    """A log of a piece every period for 10 minutes of the fake clock from its start (the clock jumps; the
    real process logs as time passes): 1,000 iterations in 1 ms each, each ending half a period off the fake
    clock's whole steps (so no piece ends exactly on a span's edge, whatever the sample waits before its replay)."""

    def __init__(self, cpus, log: Path, clock: FakeClock):
        self.plan = WitnessPlan(log, tuple(cpus))
        started = clock.wall()
        log.write_text(witnessloop.HEADER + "".join(
            f"{started + (k + 0.5) * self.plan.period_s:.4f},1000,1000000\n" for k in range(3000)))

    def stop(self) -> None:
        pass


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sent = 0        # this sample's packets
        self.replay_end = 0.0
        self.wire_tx = 0     # the interfaces' counters (never reset)

    def wall(self) -> float:
        return 1_700_000_000.0 + self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _snapshot(script: Script, clock: FakeClock):
    def snap(wire: WireEnds) -> WireSnapshot:
        tx = clock.wire_tx
        rx = clock.wire_tx - (script.wire_lost if clock.sent else 0)
        return WireSnapshot(IfCounters(0, 0, 0, tx, tx * 600, 0), IfCounters(rx, rx * 600, 0, 0, 0, 0),
                            ((0, 0, 0),))
    return snap


@dataclass
class SpecContext(CampaignContext):
    """The runner's context (which holds no spec), keeping the spec it was made from for the tests to plan
    and to start campaigns with."""

    spec: Spec | None = None


def world(tmp_path: Path, script: Script, replayers: int = 1, samples: int = 1,
          **spec: object) -> tuple[CampaignContext, SampleDeps, FakeClock]:
    EVENTS.clear()
    clock = FakeClock()
    doc = {"name": "fake", "samples": samples, "traffic": {"traces": ["t.pcap"], "replayers": [replayers],
                                                           "rate": {"pps": 100}, "sender": "tcpreplay"}, **spec}
    s = spec_from_dict(doc, base_dir=tmp_path)
    engine = FakeEngine(script, clock)
    ctx = SpecContext(settings=campaign_settings(s), spec=s, layout=CampaignDir(tmp_path / "c"), state_dir=tmp_path / "state",
                          cache_dir=tmp_path / "cache", engines={"suricata": engine},  # type: ignore[dict-item]
                          engine_versions={"suricata": "9.9"}, options={"suricata": SensorOptions()},
                          traces={"t.pcap": TRACE})
    deps = SampleDeps(
        make_wire=lambda sup, prefix, mtu, ns: FakeWire(sup),
        make_setup=lambda kind, req: FakeSetup(req, script, clock),  # type: ignore[arg-type,return-value]
        sender=FakeSender(script, clock),  # type: ignore[arg-type]
        make_monitor=lambda *a: FakeMonitor(), snapshot=_snapshot(script, clock),
        make_sender_group=lambda stack, name: SenderGroup((), None),
        make_witness=lambda sup, cpus, log: FakeWitness(cpus, log, clock),
        wall=clock.wall, monotonic=clock.monotonic, sleep=clock.sleep, available_cpus=lambda: [0, 1])
    return ctx, deps, clock


def run_one(tmp_path: Path, script: Script, replayers: int = 1, **spec: object):
    ctx, deps, _ = world(tmp_path, script, replayers, **spec)
    (case,) = plan(ctx.spec)
    ctx.replay_paths = lambda c: [Path(TRACE.path)] * c.replayers  # type: ignore[method-assign]
    outcome = SampleRun(ctx, case, 0, deps).run()
    on_disk = json.loads((ctx.layout.sample_dir(case.case_id, 0) / "summary.json").read_text())
    assert on_disk["status"] == outcome.summary.status
    return outcome.summary


def test_lossless_sample_is_ok_and_exact(tmp_path: Path):
    s = run_one(tmp_path, Script(), replayers=2)
    assert s.status == "ok" and s.reason is None
    assert s.replay is not None and s.replay.sent_pkts == 200 == s.sensor.counters.decoded_pkts
    assert s.wire is not None and s.wire.sender_tx_pkts == s.wire.sensor_rx_pkts == 200
    assert s.drained is True and s.labels == ("fake-label",) and s.sensor_ready_s == 0.25
    assert s.sensor.version == "9.9"


def test_a_sample_keeps_the_host_speed_witness_over_its_processing_span(tmp_path: Path):
    s = run_one(tmp_path, Script())
    w, replay = s.witness, s.replay
    assert w is not None and replay is not None
    assert w.cpus == (1,)  # the sensor's CPU (the sender keeps CPU 0)
    # no CPU reading in the fake world: the span is the replay's (1 s), where the fake logged a piece
    # every 0.2 s (1,000 iterations in 1 ms each)
    assert s.cost is None and w.span_s == pytest.approx(replay.end_unix - replay.start_unix) == 1.0
    assert w.pieces == 5 and w.rate == pytest.approx(1.0)
    assert w.cpu_share == pytest.approx(0.005)  # 1 ms of CPU every 0.2 s


def test_sequence_and_teardown_order(tmp_path: Path):
    run_one(tmp_path, Script())
    assert EVENTS[:7] == ["wire up", "setup prepare", "sensor prepare fake0", "monitor start", "launch",
                          "replay 1", "monitor stop"]
    # teardown: newest first (sensor process, cgroup, netns), after the sensor was stopped
    assert EVENTS[7:] == ["stop", "undo sensor process", "undo cgroup", "undo netns"]
    assert not list((tmp_path / "state").glob("*.json"))


def test_setup_error_tears_down_what_exists_and_fails_the_sample(tmp_path: Path):
    s = run_one(tmp_path, Script(setup_fails=True))
    assert s.status == "failed" and "fake runtime is not installed" in (s.reason or "")
    assert EVENTS == ["wire up", "undo netns"]


def test_interrupt_tears_down_and_leaves_no_summary(tmp_path: Path):
    ctx, deps, clock = world(tmp_path, Script())
    (case,) = plan(ctx.spec)
    ctx.replay_paths = lambda c: [Path(TRACE.path)]  # type: ignore[method-assign]

    class Interrupting(FakeSender):
        def replay(self, sup, plan):
            raise KeyboardInterrupt

    deps = SampleDeps(**{**deps.__dict__, "sender": Interrupting(Script(), clock)})
    with pytest.raises(KeyboardInterrupt):
        SampleRun(ctx, case, 0, deps).run()
    assert EVENTS[-3:] == ["undo sensor process", "undo cgroup", "undo netns"]
    assert not (ctx.layout.sample_dir(case.case_id, 0) / "summary.json").exists()


@pytest.mark.parametrize("script,status,reason", [
    (Script(never_ready=True), "failed", "fake did not start: fake sensor exited"),
    (Script(sensor_dies=-9), "failed", "fake was killed by SIGKILL during the run"),
    (Script(oom=True, sensor_dies=-9), "oom", "OOM killer"),
    (Script(replayer_exit={1: -9}), "failed", "replayer 1: tcpreplay was killed by SIGKILL"),
    (Script(replayer_exit={0: 1}), "failed", "replayer 0: tcpreplay exited with status 1"),
    (Script(decoded=150, stuck=True), "invalid", "unprocessed 50 while the sensor stood idle"),
    (Script(dropped=10, decoded=200), "invalid", "captured 200 < decoded 200 + dropped 10"),
    (Script(captured=190), "invalid", "+10 packets unaccounted for"),
    (Script(captured=210, decoded=210), "invalid", "-10 packets unaccounted for"),
    (Script(wire_lost=5), "invalid", "5 lost on an unimpaired wire"),
    (Script(eve_cut=True), "incomplete", "last line incomplete"),
])
def test_verdicts(tmp_path: Path, script: Script, status: str, reason: str):
    s = run_one(tmp_path, script, replayers=2)
    assert s.status == status, (s.status, s.reason)
    assert reason in (s.reason or ""), s.reason


def test_drops_at_capture_are_ok_and_add_up(tmp_path: Path):
    s = run_one(tmp_path, Script(dropped=30), replayers=2)
    c = s.sensor.counters
    assert s.status == "ok" and c.captured_pkts == c.decoded_pkts + c.dropped_pkts == 200


def test_sender_off_flags_too_fast_and_too_slow_without_failing(tmp_path: Path):
    slow = run_one(tmp_path / "a", Script(pps=90.0))
    fast = run_one(tmp_path / "b", Script(pps=110.0))
    for s, word in ((slow, "too slow"), (fast, "too fast")):
        assert s.status == "ok" and "sender-off" in s.labels
        assert any(word in w and "requested" not in w[:0] for w in s.warnings), s.warnings


def test_undrained_backlog_is_named_not_a_gap(tmp_path: Path):
    # the sensor never catches up: 20 packets stay in its ring until it is stopped
    s = run_one(tmp_path, Script(decoded=180), replayers=2, timing={"drain_timeout_s": 2})
    assert s.status == "ok" and "undrained" in s.labels and s.drained is False
    assert any("20 packets were captured but still unprocessed" in w for w in s.warnings)


def test_resume_reruns_failed_and_missing_samples_only(tmp_path: Path, monkeypatch):
    ctx, deps, clock = world(tmp_path, Script(), samples=3)
    calls: list[int] = []
    real_run = SampleRun.run

    def counting(self: SampleRun):
        calls.append(self.index)
        return real_run(self)

    monkeypatch.setattr(SampleRun, "run", counting)
    def prepare(spec, out, **kw):
        cases = plan(spec)
        doc = CampaignDoc(spec=spec.model_dump(mode="json"),
                          cases=tuple(PlannedCase.model_validate({"case_id": c.case_id, **c.params(),
                                                                  "samples": len(c.samples)}) for c in cases))
        ctx.layout.root.mkdir(parents=True, exist_ok=True)
        ctx.layout.campaign_file.write_text(json.dumps(doc.to_json()))
        return ctx, cases

    monkeypatch.setattr("idsbench.run.campaign.prepare_campaign", prepare)
    monkeypatch.setattr(CampaignContext, "replay_paths", lambda self, c: [Path(TRACE.path)])
    run_campaign(ctx.spec, ctx.layout.root, deps=deps)
    assert calls == [0, 1, 2]
    (case,) = plan(ctx.spec)
    failed = ctx.layout.sample_dir(case.case_id, 1) / "summary.json"
    doc = json.loads(failed.read_text())
    failed.write_text(json.dumps({**doc, "status": "failed", "reason": "test"}))
    (ctx.layout.sample_dir(case.case_id, 2) / "summary.json").unlink()
    calls.clear()
    result = run_campaign(ctx.spec, ctx.layout.root, resume=True, deps=deps)
    assert calls == [1, 2] and result.skipped == 1 and result.ran == 2
    assert [s.status for s in load_campaign(ctx.layout.root).samples] == ["ok", "ok", "ok"]


def test_stack_state_file_lists_live_resources(tmp_path: Path):
    stack = TeardownStack(state_dir=tmp_path)
    stack.push(FakeResource("one"))
    doc = json.loads(stack.state_file.read_text())
    assert doc["resources"] == [{"kind": "test-fake-resource", "module": __name__, "name": "one"}]
    stack.close()


def test_the_summary_holds_the_sample_timeline_in_order(tmp_path: Path):
    s = run_one(tmp_path, Script())
    names = [p.name for p in s.phases]
    assert names == ["setup", "sensor_start", "ready", "replay", "drain", "stop", "teardown", "analysis"]
    starts = [p.start_unix for p in s.phases]
    assert starts == sorted(starts) and starts[0] >= s.started_unix
    assert abs(sum(p.duration_s for p in s.phases) - (s.finished_unix - s.started_unix)) < 0.05
    assert s.overhead_s is not None and s.overhead_s >= 0


def test_the_sensor_runs_one_worker_per_cpu_it_is_given_and_the_summary_says_so(tmp_path: Path):
    # two CPUs: the sender on one, the sensor pinned to the other, no quota: one worker (not two)
    s = run_one(tmp_path / "a", Script())
    assert s.placement is not None and s.placement.sensor_cpus == (1,) and s.placement.sensor_workers == 1
    assert s.sensor.threads == 1  # what the engine said it ran
    s = run_one(tmp_path / "b", Script(), sensor={"threads": 2})
    assert s.placement is not None and s.placement.sensor_workers == 2 and s.sensor.threads == 2
    s = run_one(tmp_path / "c", Script(), sensor={"threads": "auto"})  # the engine's own choice
    assert s.placement is not None and s.placement.sensor_workers is None and s.sensor.threads == 7


def test_a_throttled_sensor_whose_counters_stand_still_while_it_works_is_drained_not_stuck(tmp_path: Path):
    # published counters stand still for 5 s after the replay, with 50 packets in its ring: with the
    # sensor's CPU readable, the drain sees it work (0.15 cores) and waits; without, it looks stuck
    s = run_one(tmp_path, Script(frozen_s=5.0, cpu_cores=0.15), replayers=2)
    assert s.status == "ok" and s.drained and s.reason is None, (s.status, s.reason)
    blind = run_one(tmp_path / "blind", Script(frozen_s=5.0), replayers=2)
    assert blind.status == "invalid" and "stood idle" in (blind.reason or "")


@pytest.mark.parametrize("cores", [0.0, 0.15])  # idle, or CPU burnt on anything but its ring
def test_a_sensor_that_holds_packets_and_processes_none_is_invalid_whatever_its_cpu(tmp_path: Path, cores: float):
    s = run_one(tmp_path, Script(decoded=150, stuck=True, cpu_cores=cores), replayers=2)
    assert s.status == "invalid" and "unprocessed 50 while the sensor stood idle" in (s.reason or ""), s.reason


def test_a_changed_cpu_limit_is_the_allocation_the_drain_judges_idle_use_by(tmp_path: Path):
    # a warm search on the cpus axis starts its sensor at the largest allocation and lowers the limit: at
    # 0.02 CPU a working sensor uses ~0.02 cores, idle by the starting allocation's measure (0.05)
    ctx, deps, _ = world(tmp_path, Script(), setup={"cpus": 1.0})
    (case,) = plan(ctx.spec)
    with TeardownStack(state_dir=tmp_path / "state") as stack:
        session = SensorSession(ctx, case, tmp_path, deps, stack, "t")
        assert session.allocation == 1.0 and not session.set_cpus(0.5)  # no setup yet: it cannot
        limits: list[float] = []
        session.setup = type("Limited", (), {"set_cpus": lambda self, cpus: limits.append(cpus) or True})()
        assert session.set_cpus(0.02) and limits == [0.02]
        assert session.allocation == 0.02 and near_idle_cores(session.allocation) == pytest.approx(0.005)
