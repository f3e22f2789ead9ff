"""One sample: a sensor session (wire, setup, sensor, monitor), one replay, the drain, the stop, the
final counters, the verdict, the sample summary.

Everything the sample creates lives in one teardown stack, closed on every exit path.
The summary (store.layout.SUMMARY_FILE) is written last and atomically: a sample is complete iff its summary exists.
The parts come from `SampleDeps` (run/session.py), so the sequence, the verdicts and the teardown
order are unit-tested with fakes; the real ones are the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from idsbench import cpucost
from idsbench.accounting import waterfall_of
from idsbench.errors import IdsbenchError, SensorFailed
from idsbench.monitor.pmu import PerfStat, PmuCounts, pmu_missing
from idsbench.plan import Case
from idsbench.profile.recorder import ProfileOptions, Profiler
from idsbench.run.context import CampaignContext
from idsbench.run.session import Phase, SampleDeps, SenderGroup, SensorSession, TrialOutcome
from idsbench.run.timeline import Timeline
from idsbench.run.verdict import SampleFacts, Verdict, judge
from idsbench.sensors import ruleprofile
from idsbench.sensors.base import CounterPoint, Counters, SensorRun
from idsbench.setups.base import HostSide
from idsbench.store.schema import (
    ArtifactIntegrity,
    CaseParams,
    Detection,
    ProfileRecord,
    RuleSetRecord,
    SampleSummary,
    SensorCostRecord,
    SensorRecord,
    WitnessRecord,
)
from idsbench.store.series_file import write_counters
from idsbench.store.witness import witness_record
from idsbench.store.writers import write_summary
from idsbench.teardown import TeardownStack

__all__ = ["MARKER_SIDS", "SampleDeps", "SampleOutcome", "SampleRun", "SenderGroup"]
MARKER_SIDS = range(1990000, 1990100)  # sensors/rules/markers.rules


@dataclass
class SampleOutcome:
    summary: SampleSummary
    warnings: list[str] = field(default_factory=list)


class SampleRun:
    def __init__(self, ctx: CampaignContext, case: Case, index: int, deps: SampleDeps | None = None,
                 phase: Phase = lambda _p: None, case_id: str | None = None):
        """`case_id`: store the sample under this planned case (a search's verification runs the
        planned case at the load it found: its summary records what ran)."""
        self.ctx, self.case, self.index = ctx, case, index
        self.case_id = case_id or case.case_id
        self.deps = deps or SampleDeps()
        self.phase = phase
        self.engine = ctx.engine(case)
        self.trace = ctx.traces[case.trace]
        self.session: SensorSession | None = None
        self.outcome: TrialOutcome | None = None
        self.setup_failure: str | None = None
        self.profile: ProfileRecord | None = None
        self.timeline = Timeline(self.deps.wall, self.deps.monotonic)
        self.pmu_counts: PmuCounts | None = None

    def run(self) -> SampleOutcome:
        ctx, case = self.ctx, self.case
        self.timeline.enter("setup")
        started = self.deps.wall()
        sample_dir = ctx.layout.fresh_sample_dir(self.case_id, self.index)
        try:
            with self.deps.make_stack(ctx.state_dir) as stack:
                self._run_in(stack, sample_dir)
        except KeyboardInterrupt:
            raise  # the stack is closed; the sample stays incomplete (no summary)
        except IdsbenchError as exc:
            facts = self.session.facts if self.session else None
            if facts is None or facts.sensor_failure is None:
                self.setup_failure = f"{case.setup} setup failed: {exc}"
        self.phase("collect")
        self.timeline.enter("analysis")
        summary, warnings = self._collect(sample_dir, started)
        write_summary(sample_dir, summary)
        return SampleOutcome(summary, warnings)

    def _run_in(self, stack: TeardownStack, sample_dir: Path) -> None:
        session = self.session = SensorSession(self.ctx, self.case, sample_dir, self.deps, stack,
                                               f"{stack.run_id}-s{self.index}", self.phase, self.timeline)
        try:
            if session.open():
                plan = session.plan(self.case, self.ctx.replay_paths(self.case), sample_dir)
                profiler = self._profiler(session, sample_dir)
                if profiler is not None:
                    profiler.start()
                pmu = None if pmu_missing() else PerfStat(session.sup, session.sensor_pids())
                if pmu is not None:
                    pmu.start()
                try:
                    self.outcome = session.trial(plan, stop_after=True, measure_cpu=True)
                finally:
                    if profiler is not None:
                        self.profile = profiler.stop()
                    self.pmu_counts = pmu.stop() if pmu is not None else None
        finally:
            session.close()
            self.timeline.enter("teardown")  # the stack closes next

    def _profiler(self, session: SensorSession, sample_dir: Path) -> Profiler | None:
        cfg = self.ctx.settings.profile
        if not cfg.perf:
            return None
        opts = ProfileOptions(record=self.index < cfg.record_samples, frequency_hz=cfg.frequency_hz, top=cfg.top)
        view = "qemu" if self.case.setup in ("vm", "vm-vfio") else "sensor"  # a guest's sensor is inside qemu
        host = session.setup.host_side() if isinstance(session.setup, HostSide) else None
        cgroup = host is not None and host.sensor_cgroup
        monitor = session.monitor
        return Profiler(session.sup, session.sensor_pids, sample_dir, opts, view=view, host=host,
                        measured=session.cpu_seconds if cgroup else None,
                        measured_by="the sensor's cgroup (qemu)" if cgroup else None,
                        mark=monitor.sample_now if monitor is not None else None)

    # --- after the sensor stopped --------------------------------------------------------------
    def _collect(self, sample_dir: Path, started: float) -> tuple[SampleSummary, list[str]]:
        ctx, case = self.ctx, self.case
        session, outcome = self.session, self.outcome
        facts = session.facts if session else None
        run = session.run if session else None
        warnings: list[str] = []
        counters: Counters | None = None
        series: list[CounterPoint] = []
        sensor = SensorRecord(engine=self.engine.name, version=ctx.engine_versions[case.engine])
        integrity = None
        detection = None
        if run is not None:
            try:
                counters = run.final_counters()
                series = run.counter_series()
            except SensorFailed as exc:
                if facts is None or not (facts.oom or facts.sensor_failure):
                    warnings.append(str(exc))  # a sensor that died: its verdict says why it left none
            log = run.integrity()
            if log is not None:
                warnings.extend(log.warnings)
                integrity = ArtifactIntegrity(path=str(log.path), lines=log.lines,
                                              corrupt_lines=log.corrupt_lines, truncated_tail=log.truncated_tail)
            method, capture_options, capture_drops = run.capture_info()
            bypass_info = getattr(run, "bypass_info", None)  # engines with a flow bypass (idsbench.bypass)
            bypass, bypass_settings = bypass_info() if bypass_info is not None else (None, {})
            sensor = SensorRecord(engine=self.engine.name, version=ctx.engine_versions[case.engine],
                                  capture=method, capture_options=capture_options,
                                  capture_drops=capture_drops if counters else {},
                                  bypass=bypass, bypass_settings=bypass_settings,
                                  counters=counters or Counters(), degraded=run.degraded() if counters else {},
                                  alerts_by_sid=run.alerts_by_signature() if counters else {},
                                  errors=tuple(run.errors()[:50]), threads=run.worker_threads(),
                                  rule_sets=tuple(RuleSetRecord(source=r.source, rules=r.rules, loaded=r.loaded,
                                                                method=r.method)
                                                  for r in (session.run_facts.rule_loads if session else ())))
            detection = self._detection(run)
        write_counters(sample_dir, series)
        warnings.extend(_rule_profile(sample_dir, self.case.engine))
        verdict = self._verdict(counters, integrity)
        warnings.extend(verdict.warnings)
        if detection and detection.marker_alerts != detection.expected_marker_alerts and \
                counters is not None and counters.dropped_pkts == 0 and verdict.status == "ok":
            warnings.append(f"{detection.marker_alerts} marker alerts, expected {detection.expected_marker_alerts} "
                            "with no drops: the sensor missed (or added) detections")
        labels = [*(facts.labels if facts else []), *verdict.labels]
        cost = self._cost(counters)
        self.timeline.end()  # the analysis ends here: the summary is built and written next
        summary = SampleSummary(
            campaign=ctx.settings.name, case_id=self.case_id, sample=self.index,
            case=CaseParams.model_validate(case.params()), status=verdict.status, reason=verdict.reason,
            labels=tuple(dict.fromkeys(labels)), warnings=tuple(warnings), started_unix=started,
            finished_unix=self.deps.wall(), trace=self.trace, placement=facts.placement if facts else None,
            sensor_ready_s=facts.ready_s if facts else None, replay=outcome.replay.record if outcome else None,
            drained=outcome.drain.drained if outcome else None, sensor_stop_unix=facts.stop_unix if facts else None,
            sensor_exit=facts.exit_code if facts else None, sensor_oom_kills=int(facts.oom) if facts else 0,
            sensor=sensor, wire=outcome.wire if outcome else None, invisible=facts.invisible if facts else (),
            eve=integrity, detection=detection, profile=self.profile, phases=self.timeline.records(), cost=cost,
            witness=self._witness(cost),
        )
        return summary, warnings

    def _cost(self, counters: Counters | None) -> SensorCostRecord | None:
        """The sensor's CPU time for the replay's packets (idsbench.cpucost: from replay start to the end of
        its processing) per packet it processed, with the raw readings every definition needs."""
        cpu = self.outcome.cpu if self.outcome else None
        if cpu is None or counters is None:
            return None
        pmu = self.pmu_counts

        def r6(x: float | None) -> float | None:
            return None if x is None else round(x, 6)
        raw = SensorCostRecord(
            # with a kernel-side bypass, per packet that reached the sensor: the filter's drops too
            cpu_s=0.0, processed_pkts=counters.decoded_pkts + counters.bypassed_pkts - counters.bypassed_local_pkts,
            instructions=pmu.instructions if pmu else None, cycles=pmu.cycles if pmu else None,
            pmu=None if pmu else (pmu_missing() or "not counted"),
            definition="quiet-idle" if self.deps.bench_old_cost else cpucost.USED,
            replay_s=r6(cpu.replay_s), cpu_replay_s=r6(cpu.at_replay_end - cpu.at_start),
            processed_s=r6(cpu.processed_s),
            cpu_processed_s=r6(None if cpu.at_processed is None else cpu.at_processed - cpu.at_start),
            drained_s=r6(cpu.replay_s + cpu.drain_s), cpu_drained_s=r6(cpu.at_drained - cpu.at_start),
            idle_cores=r6(cpu.idle_rate), pre_idle_s=cpu.pre_idle_s, pre_idle_cores=r6(cpu.pre_idle_rate))
        work = cpucost.cpu_seconds(raw, raw.definition) or 0.0
        per_pkt = cpucost.us_per_pkt(raw, raw.definition)
        return raw.model_copy(update={"cpu_s": round(work, 6),
                                      "us_per_pkt": None if per_pkt is None else round(per_pkt, 4)})

    def _witness(self, cost: SensorCostRecord | None) -> WitnessRecord | None:
        """The host-speed witness's work rate over the sensor's processing span (replay start → the end of
        its processing; without that reading, of its drain or of the replay)."""
        witness = self.session.witness if self.session else None
        replay = self.outcome.replay.record if self.outcome else None
        if witness is None or replay is None:
            return None
        span = (cost.processed_s or cost.drained_s or cost.replay_s) if cost else None
        end = replay.start_unix + span if span else replay.end_unix
        plan = witness.plan
        return witness_record(plan.log, plan.cpus, plan.period_s, plan.piece_s, replay.start_unix, end)

    def _verdict(self, counters: Counters | None, integrity: ArtifactIntegrity | None) -> Verdict:

        case, outcome = self.case, self.outcome
        facts = self.session.facts if self.session else None
        expected = case.replayers * case.loops * self.trace.packets if case.duration_s is None else None
        wf = None
        stuck = outcome.drain.stuck if outcome else False
        if counters is not None and outcome is not None:  # the final counters: the sample is one trial
            wf = waterfall_of(outcome.replay.record.sent_pkts, outcome.wire, counters,
                                 facts.invisible if facts else ())
            # a drain that ended because the sensor went quiet is confirmed by the final counters: packets
            # still in its ring then mean it stood idle with them (stuck)
            stuck = stuck or (outcome.drain.quiet and counters.unprocessed_pkts > 0)
        damage = None
        if integrity is not None and (integrity.corrupt_lines or integrity.truncated_tail):
            damage = (f"{integrity.path}: {integrity.corrupt_lines} corrupt line(s)"
                      f"{', last line incomplete' if integrity.truncated_tail else ''}")
        return judge(SampleFacts(
            engine=self.engine.name, expected_pkts=expected, replayers=outcome.replay.facts if outcome else (),
            sensor_failure=facts.sensor_failure if facts else None, setup_failure=self.setup_failure,
            oom=facts.oom if facts else False, counters=counters, waterfall=wf,
            memory=facts.memory if facts else None, memory_starved=facts.memory_starved if facts else False,
            wire_impaired=self.ctx.settings.wire.impaired, drained=outcome.drain.drained if outcome else True,
            stuck=stuck, event_log_damage=damage))

    def _detection(self, run: SensorRun) -> Detection | None:
        """With the marker rules loaded on a synthesized trace, the marker alert count is known."""
        markers, case = self.trace.markers, self.case
        if markers is None or not self.ctx.settings.sensor.counts_markers or case.duration_s is not None:
            return None
        found = sum(n for sid, n in run.alerts_by_signature().items() if sid in MARKER_SIDS)
        return Detection(expected_marker_alerts=markers * case.replayers * case.loops, marker_alerts=found)


def _rule_profile(sample_dir: Path, engine: str) -> list[str]:
    """A profiling run's rule profile as the sample's series file (rule_profile.csv); a warning when the
    profiling engine left none (sensors/ruleprofile.py: Suricata's rule_perf.log or Snort's table)."""
    return ruleprofile.collect_sample(sample_dir, engine)

