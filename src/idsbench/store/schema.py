"""The results contract: what the runner writes and every reader (analysis, report, index, compare)
reads. Versioned pydantic models; older files are migrated on read (`migrate_summary`).

Only RAW facts are stored here: counters, replay figures, times, verdicts. Everything derived
(resources over the replay window, time to stable, ratios, medians) is computed by `analysis` from
these records and the raw series (monitor.csv, counters.csv), so an analysis fix reaches every
existing campaign.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, JsonValue

from idsbench import legacy
from idsbench.counters import Counters
from idsbench.store.casefigures import EngineFigures, HostSideFigures, Number, SearchFigures
from idsbench.store.casefigures import SearchGoals as SearchGoals  # search.json holds it too
from idsbench.store.record import Record as Record
from idsbench.store.waterfall import Waterfall

SUMMARY_SCHEMA = 3  # 3: `phases` (the sample's timeline)

# A sample's verdict (docs/sample.md, "Sample verdicts"). Only `ok` samples enter medians.
Status = Literal["ok", "invalid", "failed", "oom", "incomplete"]
STATUSES: tuple[Status, ...] = ("ok", "invalid", "failed", "oom", "incomplete")
_OLD_STATUS: dict[str, Status] = {"sensor-failed": "failed", "replay-failed": "failed"}


class CaseParams(Record):
    """A case's parameters as plain values (`summary.case`, one entry of `campaign.cases`)."""

    trace: str
    replayers: int
    rate: str
    loops: int = 1
    setup: str = "baremetal"
    cpus: float | None = None
    memory: str | None = None
    flows: str = "distinct"
    duration_s: float | None = None
    engine: str = "suricata"
    sender: str = "tcpreplay"
    config: str = "default"
    rules: str = "default"  # the ruleset (sensor.rulesets) the case ran with
    threads: int | str | None = None  # sensor.threads: a worker count, "auto"; None: one per allocated CPU
    duet_side: str | None = None  # mode = "duet": the side ("a" or "b") this case is (plan.duet_pairs)
    capture: str | None = None  # sensor.capture: the capture method asked (None: the engine's default)
    bypass: str | None = None  # sensor.bypass: the flow bypass mode asked (None: off)
    duet_versus: str | None = None  # mode = "duet", k > 2 sides: the side b value this reference case ran beside


class PlannedCase(CaseParams):
    case_id: str
    samples: int = 0


class PerSecond(Record):
    t: float
    packets: int
    bytes: int = 0
    due_packets: int | None = None  # what the schedule asked for in this second (native sender)


class TraceRecord(Record):
    ref: str
    path: str
    sha256: str
    packets: int
    bytes: int
    duration_s: float
    max_frame: int = 0
    markers: int | None = None  # marker alerts one copy raises (generated traces only)
    per_second: tuple[PerSecond, ...] = ()


class Placement(Record):
    sender_cpus: tuple[int, ...] = ()
    sensor_cpus: tuple[int, ...] | None = None  # None: not pinned (one CPU, shared with the sender)
    mtu: int = 1500
    sensor_workers: int | None = None  # worker threads asked of the engine (None: its own choice, "auto")


class Lateness(Record):
    """How late a sender's packets left against their deadlines (ms): median, 99th percentile, worst."""

    p50_ms: float
    p99_ms: float
    max_ms: float


class ReplayerRecord(Record):
    """One replayer's own report (tcpreplay's final figures, or the native sender's)."""

    index: int
    pkts_sent: int
    bytes_sent: int
    failed: int = 0
    truncated: int = 0
    elapsed_s: float = 0.0
    pps: float = 0.0
    mbps: float = 0.0
    requested_pps: float | None = None
    exit_code: int | None = None
    planned_s: float | None = None
    lateness: Lateness | None = None
    per_second: tuple[PerSecond, ...] = ()


class ReplayRecord(Record):
    start_unix: float
    end_unix: float
    sent_pkts: int
    sent_bytes: int
    failed_pkts: int = 0
    requested_pps_per_replayer: float | None = None
    planned_s: float | None = None
    sender: str = "tcpreplay"
    replayers: tuple[ReplayerRecord, ...] = ()


class RuleSetRecord(Record):
    """One rule file as the engine loaded it (sensors.rulesets): the share of the source it took."""

    source: str
    rules: int = 0
    loaded: int = 0
    method: str = "as-is"  # as-is | converted | builtin


class SensorRecord(Record):
    engine: str = "suricata"
    version: str = ""
    counters: Counters = Field(default_factory=Counters)
    degraded: dict[str, int] = Field(default_factory=dict)  # memcap/emergency counters (not drops)
    alerts_by_sid: dict[int, int] = Field(default_factory=dict)
    errors: tuple[str, ...] = ()
    rule_sets: tuple[RuleSetRecord, ...] = ()
    threads: int | None = None  # the worker threads the engine reported it ran (its own log)
    capture: str | None = None  # the capture method it read the wire with (idsbench.capture)
    capture_options: dict[str, str | int | float | bool] = Field(default_factory=dict)  # effective, defaults written out
    capture_drops: dict[str, int] = Field(default_factory=dict)  # the method's own drop points (last stats record)
    bypass: str | None = None  # the flow bypass mode it ran (idsbench.bypass; None: an engine without one)
    bypass_settings: dict[str, str | int | float | bool] = Field(default_factory=dict)  # effective, written out


class ArtifactIntegrity(Record):
    """How whole the sensor's event log was when read (a cut file may hold short counters)."""

    path: str
    lines: int = 0
    corrupt_lines: int = 0
    truncated_tail: bool = False

    @property
    def damaged(self) -> bool:
        return self.corrupt_lines > 0 or self.truncated_tail


class Detection(Record):
    expected_marker_alerts: int
    marker_alerts: int


class WireRecord(Record):
    """Interface counters of both wire ends over the sample (deltas)."""

    sender_tx_pkts: int = 0
    sender_tx_dropped: int = 0
    sensor_rx_pkts: int = 0
    sensor_rx_dropped: int = 0
    softnet_dropped: int = 0
    softnet_time_squeeze: int = 0
    impaired: bool = False    # an emulated lossy tap on the sender's end ([wire] impair)


class FunctionRecord(Record):
    symbol: str
    dso: str
    self_pct: float               # of every profile sample of the sensor's processes


class ThreadRecord(Record):
    name: str                     # the thread's name (Suricata: W#01-eth0 worker, FM#01 flow manager…)
    role: str                     # worker | management (qemu view: vcpu | main | worker | iothread | vhost | rcu | other)
    cpu_s: float
    cpu_pct: float                # of one core over the profiled window


# The host's side of a VM or container by category (profile/categories.py says what each holds).
HOST_SIDE_CATEGORIES = ("guest", "emulation", "io", "irq_timers", "polling", "other")


class CategoryRecord(Record):
    name: str                     # one of HOST_SIDE_CATEGORIES
    cpu_s: float
    share: float                  # of the host-side CPU time, 0..1


class HostThreadRecord(Record):
    name: str                     # qemu: "CPU 0/TCG", "qemu-system-x86" (main loop), "worker"…; runtimes: per process
    role: str                     # vcpu | main | iothread | worker | vhost | rcu | cli | conmon | shim | daemon | …
    cpu_s: float
    guest_s: float = 0.0          # in guest mode (KVM vCPUs; /proc guest_time)
    perf_samples: int = 0


class HostSideRecord(Record):
    """What the host spent on a VM (qemu, vhost) or a container (its runtime's processes) over the
    profiled window, by category; the categories add up to `cpu_s` (profile/hostside.py)."""

    subject: str                  # "qemu" | "runtime"
    processes: tuple[str, ...] = ()   # "name[pid]"
    accel: str | None = None      # VMs: tcg | kvm
    emulated: bool = False        # TCG: guest execution is qemu's translated code, emulation its translator/helpers
    split: str = "perf"           # "perf": each thread's CPU split by its perf samples; "threads": by thread role
    cpu_s: float                  # the processes' CPU over the window (/proc) = the sum of the categories
    measured_cpu_s: float | None = None   # the same window on the counter the monitor reads (VM: qemu's cgroup)
    measured_by: str | None = None        # what measured it
    monitor_column: str | None = None     # the monitor.csv column for the same CPU (analysis cross-checks it)
    categories: tuple[CategoryRecord, ...] = ()
    threads: tuple[HostThreadRecord, ...] = ()
    perf_samples: int = 0
    notes: tuple[str, ...] = ()


class ProfileRecord(Record):
    """The sensor profiled over the replay and drain of a sample ([profile])."""

    view: str = "sensor"          # "sensor", or "qemu" when the sensor runs inside a VM guest
    window_s: float
    recorded: bool = False        # perf record ran (functions below); perf stat and threads always
    event: str | None = None
    frequency_hz: int = 0
    functions: tuple[FunctionRecord, ...] = ()          # top self time over every thread
    worker_functions: tuple[FunctionRecord, ...] = ()   # top self time of the worker threads (qemu view: the vCPUs)
    threads: tuple[ThreadRecord, ...] = ()
    counters: dict[str, float | None] = Field(default_factory=dict)  # perf stat; None: not supported here
    ratios: dict[str, float | None] = Field(default_factory=dict)    # ipc, cache-miss ratios
    notes: tuple[str, ...] = ()
    start_unix: float | None = None   # the window (a monitor row is written at each end)
    end_unix: float | None = None
    host: HostSideRecord | None = None  # VM / container: the host's side, by category


# A sample's timeline, in order; every second of its wall time lies in exactly one of them
# (docs/sample.md, "The runner"). A warm search trial has setup (its preparation), replay, drain, analysis.
PHASES = ("setup", "sensor_start", "ready", "replay", "drain", "stop", "teardown", "analysis")


class PhaseRecord(Record):
    """One phase of a sample's (or a search trial's) timeline."""

    name: str
    start_unix: float
    duration_s: float


def phase_seconds(phases: tuple[PhaseRecord, ...]) -> dict[str, float]:
    """{name: seconds} (a name that occurs twice is summed)."""
    out: dict[str, float] = {}
    for p in phases:
        out[p.name] = out.get(p.name, 0.0) + p.duration_s
    return out


class SensorCostRecord(Record):
    """What the sensor's packets cost: its CPU time (its cgroup) for them by `definition` (idsbench.cpucost:
    "processing" = from replay start to the end of its processing, nothing subtracted; "quiet-idle" = to the
    end of its drain minus the idle rate of its quiet window, summaries before issue 28), over the packets it
    processed; instructions and cycles where a PMU is visible (`pmu` says why not otherwise). The raw
    readings (seconds since replay start, CPU seconds since replay start) let every definition be
    computed from the same sample (None: not read, e.g. older summaries)."""

    cpu_s: float
    processed_pkts: int
    us_per_pkt: float | None = None
    instructions: int | None = None
    cycles: int | None = None
    pmu: str | None = None            # None: counted; else e.g. "not supported: no hardware PMU visible"
    definition: str = "quiet-idle"    # which idsbench.cpucost definition cpu_s is
    replay_s: float | None = None          # the replay's span
    cpu_replay_s: float | None = None      # the sensor's CPU over it
    processed_s: float | None = None       # replay start → end of its processing (its quiet drain's start)
    cpu_processed_s: float | None = None   # its CPU over that span
    drained_s: float | None = None         # replay start → end of the drain
    cpu_drained_s: float | None = None     # its CPU over that span
    idle_cores: float | None = None        # its CPU rate in the quiet window (or a 0.25-s probe) after the drain
    pre_idle_s: float | None = None        # a benchmark's idle window before the replay (bench_pre_idle_s)
    pre_idle_cores: float | None = None    # its CPU rate over that window

    @property
    def instr_per_pkt(self) -> float | None:
        return self.instructions / self.processed_pkts if self.instructions and self.processed_pkts else None

    @property
    def cycles_per_pkt(self) -> float | None:
        return self.cycles / self.processed_pkts if self.cycles and self.processed_pkts else None


class WitnessRecord(Record):
    """The host-speed witness over a sample's processing span (monitor/witness.py): how fast a fixed piece
    of work ran on the sensor's CPUs while the sensor worked. `rate` is its work rate there (iterations per
    CPU µs, over the pieces that ended inside the span): a host that runs everything 8% slower for a while
    shows a rate 8% lower, and the sensor's CPU per packet 8% higher. Compared across a campaign's samples
    only (analysis/sample.py `host_speed`: relative to the campaign's median)."""

    cpus: tuple[int, ...]             # where it ran (the sensor's CPUs; both slots' in a duet)
    period_s: float                   # a piece every period …
    piece_s: float                    # … of about this much CPU time
    span_s: float                     # the span it is measured over (replay start → end of processing)
    pieces: int                       # pieces that ended inside the span
    rate: float | None = None         # iterations per CPU µs over them (None: no piece inside)
    cpu_share: float | None = None    # the pieces' CPU time over the witness's whole log, per second of wall
                                      # time: what it took from the sensor's CPUs (wake-ups not included)


class SampleSummary(Record):
    """summary.json: written last and atomically; a sample is complete iff it exists."""

    schema_version: int = Field(SUMMARY_SCHEMA, alias="schema")
    campaign: str
    case_id: str
    sample: int
    case: CaseParams
    status: Status = "ok"
    reason: str | None = None
    labels: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    started_unix: float = 0.0
    finished_unix: float = 0.0
    trace: TraceRecord
    placement: Placement | None = None
    sensor_ready_s: float | None = None
    replay: ReplayRecord | None = None
    drained: bool | None = None          # the sensor processed everything it captured before stop
    sensor_stop_unix: float | None = None
    sensor_exit: int | None = None
    sensor_oom_kills: int = 0
    sensor: SensorRecord = Field(default_factory=SensorRecord)
    wire: WireRecord | None = None
    invisible: tuple[str, ...] = ()      # drop points the host cannot count (the setup's)
    eve: ArtifactIntegrity | None = None
    detection: Detection | None = None
    pair: str | None = None              # "sender/sensor" host names of a sample run on hosts
    profile: ProfileRecord | None = None  # [profile]: where the sensor's CPU went in this sample
    phases: tuple[PhaseRecord, ...] = ()  # schema 3: the timeline (PHASES), empty in older summaries
    cost: SensorCostRecord | None = None  # the sensor's CPU (and PMU counts) per processed packet
    witness: WitnessRecord | None = None  # the host's speed on the sensor's CPUs while it worked

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    def to_json(self) -> dict[str, JsonValue]:
        return self.model_dump(mode="json", by_alias=True)

    @property
    def wall_s(self) -> float:
        return max(0.0, self.finished_unix - self.started_unix)

    @property
    def overhead_s(self) -> float | None:
        """The sample's wall time beyond its replay (the fixed cost of a sample); None without a replay.
        Older summaries (no timeline) get it from their start, finish and replay times."""
        replay = phase_seconds(self.phases).get("replay") if self.phases else None
        if replay is None and self.replay is not None:
            replay = max(0.0, self.replay.end_unix - self.replay.start_unix)
        if replay is None or not self.finished_unix:
            return None
        return round(max(0.0, self.wall_s - replay), 3)


class TrialRecord(Record):
    """One trial of a search: a load tried and where its packets went."""

    index: int
    mode: Literal["warm", "cold"]
    value: float                      # the axis value tried (total pps, replayers or cpus)
    offered_pps: float | None         # requested, summed over replayers (None: topspeed)
    achieved_pps: float
    achieved_mbps: float = 0.0
    duration_s: float
    sent_pkts: int
    counters: Counters = Field(default_factory=Counters)
    degraded: dict[str, int] = Field(default_factory=dict)
    waterfall: Waterfall | None = None
    sender_limited: bool = False      # the sender fell short of the offered rate: not a pass
    sensor_cpus_used: float | None = None   # cores the trial's packets needed (replay + drain over the replay)
    backlog_fraction: float | None = None   # work left when the replay ended, over the replay's work
    fell_behind: bool = False         # work beyond the physics allowance was left: behind_pkts > 0
    behind_pkts: int = 0              # the packets of that backlog: not forwarded in time
    tail_work_s: float | None = None  # the sensor's CPU seconds after the replay ended (idle use taken out)
    tail_allowance_s: float | None = None  # what of it was no backlog (search/measure.py TailRule)
    witness_rate: float | None = None  # the host-speed witness's work rate over the replay (store/witness.py;
                                       # warm trials: compare a search's trials with each other)
    accounted: bool = True            # its waterfall closed (else it was repeated, not judged)
    ceiling: bool = False             # the trial that measured the sender's maximum (topspeed)
    repeat: int = 0                   # which whole search (search.repeats) it belongs to
    answered: bool | None = None      # a duet search: its result was given to this side's controller
                                      # (None: a single search, where every trial answers its controller)
    intended_duration_s: float | None = None   # the duration the controller asked for
    sensor_cpu_s: float | None = None          # the sensor's CPU time for its packets (idle use taken out)
    sensor_us_per_pkt: float | None = None     # that over the packets it processed, in µs
    sensor_failed: str | None = None
    started_unix: float = 0.0
    ended_unix: float = 0.0
    phases: tuple[PhaseRecord, ...] = ()    # its timeline: setup (its preparation), replay, drain, analysis

    @property
    def overhead_s(self) -> float | None:
        """The trial's wall time beyond its replay (None without a timeline)."""
        if not self.phases:
            return None
        seconds = phase_seconds(self.phases)
        return round(sum(seconds.values()) - seconds.get("replay", 0.0), 3)

    @property
    def kept_up_lossless(self) -> bool:
        """It lost no packet and did not fall behind."""
        return not self.fell_behind and self.waterfall is not None and self.waterfall.loss_ratio == 0

    @property
    def cpu_s_per_packet(self) -> float | None:
        """The sensor's CPU seconds per packet it processed (None without its CPU time)."""
        if self.sensor_us_per_pkt is not None:
            return self.sensor_us_per_pkt / 1e6
        if not self.sensor_cpus_used or self.achieved_pps <= 0 or self.sensor_failed:
            return None
        return self.sensor_cpus_used / self.achieved_pps


class ToleranceResult(Record):
    tolerance: float
    value: float | None               # the best value found (None: even the first load failed)
    value_pps: float | None = None    # for rate/replayers searches, the load in total pps
    bracket: tuple[float, float] | None = None   # (highest pass, lowest fail) in the axis unit
    lower_bound: bool = False         # limited by the sender: the sensor may take more
    verified: bool | None = None      # the verification trial at the result was lossless within tolerance
    relevant_lower: float | None = None   # MLRsearch's relevant lower bound (axis unit) = value
    relevant_upper: float | None = None   # and relevant upper bound (None: the top met the goal)
    conditional_pps: float | None = None  # conditional throughput: the lower bound's load × (1 − its quantile loss)
    sender_limited: bool = False      # the sender bounded it, not the sensor: the sensor took the sender's
                                      # measured ceiling, or only the sender's shortfall failed the upper bound


class SearchRepeat(Record):
    """One whole search of `search.repeats` (a fresh sensor)."""

    index: int
    results: tuple[ToleranceResult, ...] = ()
    trials: int = 0
    elapsed_s: float = 0.0
    ndr_pps: float | None = None
    sender_ceiling_pps: float | None = None   # the sender's ceiling it searched under (topspeed): one value
                                              # for all repeats, measured once
    ceiling_measured: bool = False            # this repeat ran the ceiling trial (the first one only)
    sender_limited: bool = False              # a goal's result was the sender's limit (ToleranceResult's)


class SearchResult(Record):
    """`<campaign>/search/<case_id>/search.json`."""

    case_id: str
    axis: Literal["rate", "replayers", "cpus"]
    unit: str                          # pps | replayers | cpus
    precision: float
    mode: Literal["warm", "cold"]
    avg_frame_bytes: float = 0.0
    sender_ceiling_pps: float | None = None   # topspeed: the sender's maximum, measured once per search
    fixed_load_pps: float | None = None   # cpus axis: the load held
    results: tuple[ToleranceResult, ...] = ()
    trials: tuple[TrialRecord, ...] = ()
    verification: tuple[TrialRecord, ...] = ()
    elapsed_s: float = 0.0
    trials_s: float = 0.0              # of which the trials (warm: with the sensor's start and stop)
    verification_s: float = 0.0        # and the cold verification samples
    notes: tuple[str, ...] = ()
    repeats: tuple[SearchRepeat, ...] = ()   # each whole search; `results` = their median
    goals: SearchGoals | None = None
    allocation_cpus: float | None = None     # the sensor's cores (quota, else the CPUs it is pinned to)


class GroundTruth(Record):
    """What the engine alerts on the case's traffic offline (`suricata -r` on each replayer's copy of
    the trace, same rules and config): `<campaign>/truth/<case_id>.json`."""

    case_id: str
    engine: str
    engine_version: str
    traces: tuple[str, ...]           # sha256 of each replayer's copy
    alerts_by_sid: dict[int, int] = Field(default_factory=dict)
    packets: int = 0
    elapsed_s: float = 0.0
    # sids only one of the two configurations can fire (the offline run cannot mirror a live setting: the
    # kernel's checksum marks, its IPv4 defrag), with why: left out of the recall (run/truth.py)
    excluded_sids: dict[int, str] = Field(default_factory=dict)


class RunOrderRecord(Record):
    """The order a campaign's samples run in (plan.run_order), as decided when it was created: `order`
    "cases" or "interleaved"; `seed` shuffles the cases inside each round (None: plain round-robin, as
    campaigns made before the shuffle); `rounds` the realized order (case ids per round)."""

    order: Literal["cases", "interleaved"] = "cases"
    seed: int | None = None
    rounds: tuple[tuple[str, ...], ...] = ()


def migrate_summary(doc: dict[str, object]) -> dict[str, object]:
    """A summary.json of any schema as the current one expects it (derived keys are dropped, older engine
    names renamed: idsbench.legacy)."""
    out = legacy.summary_doc(doc)
    status = str(out.get("status") or "ok")
    if status in _OLD_STATUS:
        out["status"] = _OLD_STATUS[status]
        out.setdefault("reason", out.get("error") or status)
    elif status not in STATUSES:
        out["status"] = "failed"
        out.setdefault("reason", status)
    if out.get("reason") is None and out.get("error"):
        out["reason"] = out["error"]
    for derived in ("resources", "stable_after_s"):
        out.pop(derived, None)
    replay = out.get("replay")
    if isinstance(replay, dict) and "sender" not in replay:
        out["replay"] = {**replay, "sender": "tcpreplay"}
    return out


# The metrics of a case: `CaseResult.medians`/`cis` keys and index columns (computed by analysis.sample).
CASE_METRICS = ("trace_pkts", "sent_pkts", "captured_pkts", "dropped_pkts", "decoded_pkts", "decoded_bytes",
                "alerts", "drop_ratio", "sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct", "flows",
                "stable_after_s",
                # the sender: what it achieved, and the host CPU without it
                "sender_pps", "sender_rate_ratio", "sender_lateness_p99_ms", "sender_cpu_pct", "sensor_host_cpu_pct",
                # the loss waterfall: where packets were lost (accounting.py)
                "loss_sender_pkts", "loss_wire_pkts", "loss_nic_pkts", "loss_softnet_pkts", "loss_capture_pkts",
                "unprocessed_pkts", "unaccounted_pkts",
                # dropped by design: packets of bypassed flows, neither lost nor inspected (idsbench.bypass)
                "bypassed_pkts",
                # detection under load, against the offline ground truth (when there is one)
                "alert_recall", "alerts_extra",
                # the sample's wall time beyond its replay (SampleSummary.overhead_s)
                "overhead_s",
                # what a packet cost the sensor (its cgroup's CPU time; PMU counts where visible)
                "sensor_us_per_pkt", "sensor_instr_per_pkt", "sensor_cycles_per_pkt",
                # … without its idle housekeeping over the span (the idle rate before the replay: idsbench.cpucost)
                "sensor_us_per_pkt_net",
                # how fast the host ran the sensor's CPUs (the witness; 1.0 = the campaign's median), and CPU
                # per packet at the campaign's median speed (sensor_us_per_pkt x host_speed)
                "host_speed", "sensor_us_per_pkt_norm",
                # a VM's host-side memory: qemu's peak VmRSS, and VmLck + VmPin (setups vm, vm-vfio)
                "host_mem_bytes", "host_mem_locked_bytes")


class SampleStamp(Record):
    """Which sample a per-sample value came from and when it ran (its replay's start): what pairs the
    samples of two cases round by round (analysis.effect.rounds)."""

    index: int
    start_unix: float


class CaseResult(Record):
    """One case of `idsbench results`: medians over its `ok` samples, their CIs, verdict counts, and the
    figures later analyses add (search, engines, per-signature alerts …).

    `medians`/`cis` are keyed by `CASE_METRICS`; `to_row()` is the flat JSON object of the results
    contract (DESIGN.md)."""

    case: str
    params: CaseParams
    samples: int
    medians: dict[str, float | None] = Field(default_factory=dict)
    cis: dict[str, tuple[float, float] | None] = Field(default_factory=dict)
    ci_level: float = 0.0
    status: str = "ok"
    status_counts: dict[str, int] = Field(default_factory=dict)
    labels: tuple[str, ...] = ()
    samples_failed: int = 0
    samples_incomplete: int = 0
    warnings: tuple[str, ...] = ()
    pairs: tuple[str, ...] = ()  # the host pairs its samples ran on (campaigns on hosts)
    # per degraded counter (memcaps, emergency modes, gaps): its median over the ok samples (absent = 0)
    degraded_sensor: dict[str, Number | None] = Field(default_factory=dict)
    phases: dict[str, float] = Field(default_factory=dict)   # per timeline phase: median seconds (ok samples)
    search: SearchFigures | None = None      # `idsbench search`: NDR/PDR or min CPUs (None: not searched)
    engine_version: str | None = None        # what the sensor binary reported (`engine` is the spec's name)
    engines: EngineFigures | None = None     # the engine's rule share (None: not computed)
    alerts_by_sid: dict[int, Number] = Field(default_factory=dict)  # per signature: median alerts (ok samples)
    recall_excluded_sids: dict[int, str] = Field(default_factory=dict)  # left out of alert_recall, with why
    sensor_threads: int | None = None  # the worker threads the sensor ran (as it reported; else as asked)
    host_side: HostSideFigures | None = None  # [profile]: the host's side of a VM/container (None: not profiled)
    duet_side: str | None = None  # mode = "duet": the side ("a" or "b") this case ran as (analysis.duet)
    duet_pair: str | None = None  # and the id its pair row and both sides' rows share
    capture: str | None = None  # the capture method its sensor read the wire with (asked, else the engine's default)
    capture_options: dict[str, str | int | float | bool] = Field(default_factory=dict)  # effective, defaults written out
    capture_drops: dict[str, Number | None] = Field(default_factory=dict)  # per drop point of the method: median
    bypass: str | None = None  # the flow bypass mode its sensor ran (asked, else "off")
    bypass_settings: dict[str, str | int | float | bool] = Field(default_factory=dict)  # effective, written out
    # each metric's per-sample values (ok samples, in sample order): what effect sizes resample
    # (analysis.effect); not part of `to_row()`
    values: dict[str, tuple[float | None, ...]] = Field(default_factory=dict)
    value_samples: tuple[SampleStamp, ...] = ()  # the sample each position of `values` came from

    def figures(self) -> dict[str, JsonValue]:
        """The later analyses' keys of the row (degraded_sensor … alerts_by_sid), values as computed."""
        out: dict[str, JsonValue] = {"degraded_sensor": dict(self.degraded_sensor), "phases": dict(self.phases)}
        if self.search is not None:
            out.update(self.search.row())
        if self.host_side is not None:
            out.update(self.host_side.row())
        out["engine_version"] = self.engine_version
        if self.engines is not None:
            out.update(self.engines.row())
        out["alerts_by_sid"] = {str(sid): _tidy(n) for sid, n in sorted(self.alerts_by_sid.items())}
        if self.recall_excluded_sids:
            out["alert_recall_excluded_sids"] = {str(sid): why for sid, why in sorted(self.recall_excluded_sids.items())}
        out["capture"] = self.capture if self.capture is not None else self.params.capture
        out["capture_options"] = dict(self.capture_options)
        out["waterfall_capture"] = {k: _tidy(v) for k, v in sorted(self.capture_drops.items())}
        out["bypass"] = self.bypass if self.bypass is not None else (self.params.bypass or "off")
        out["bypass_settings"] = dict(self.bypass_settings)
        if self.duet_side is not None:
            out.update({"duet_side": self.duet_side, "duet_pair": self.duet_pair})
        return out

    def to_row(self) -> dict[str, object]:  # the results contract: a JSON object, handed to the exporters
        p = self.params
        row: dict[str, object] = {"case": self.case, "setup": p.setup, "engine": p.engine, "trace": p.trace,
                               "replayers": p.replayers, "rate": p.rate, "sender": p.sender,
                               "samples": self.samples}
        row.update({k: _tidy(v) for k, v in self.medians.items()})
        row.update({"status": self.status, "status_counts": dict(self.status_counts),
                    "labels": list(self.labels), "loops": p.loops, "cpus": p.cpus, "memory": p.memory,
                    "sensor_threads": self.sensor_threads,
                    "samples_failed": self.samples_failed, "samples_incomplete": self.samples_incomplete,
                    "pair": ",".join(self.pairs) or None})
        row.update({f"{k}_ci": [_tidy(v[0]), _tidy(v[1])] if v else None for k, v in self.cis.items()})
        row["ci_level"] = round(self.ci_level, 4)
        row.update(self.figures())
        row["warnings"] = list(self.warnings)
        return row


def _tidy(value: float | None) -> float | int | None:
    if value is None:
        return None
    if float(value).is_integer() and abs(value) < 2**53:
        return int(value)
    return round(float(value), 6)
