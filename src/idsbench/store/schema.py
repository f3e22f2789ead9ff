"""The results contract: what the runner writes and every reader (analysis, report, index, compare)
reads. Versioned pydantic models; older files are migrated on read (`migrate_summary`).

Only RAW facts are stored here: counters, replay figures, times, verdicts. Everything derived
(resources over the replay window, time to stable, ratios, medians) is computed by `analysis` from
these records and the raw series (monitor.csv, counters.csv), so an analysis fix reaches every
existing campaign.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from idsbench.counters import Counters

SUMMARY_SCHEMA = 3  # 3: `phases` (the sample's timeline)
CAMPAIGN_SCHEMA = 2

# A sample's verdict (docs/architecture.md, "Sample verdicts"). Only `ok` samples enter medians.
Status = Literal["ok", "invalid", "failed", "oom", "incomplete"]
STATUSES: tuple[Status, ...] = ("ok", "invalid", "failed", "oom", "incomplete")
_OLD_STATUS: dict[str, Status] = {"sensor-failed": "failed", "replay-failed": "failed"}


class Record(BaseModel):
    """Frozen; unknown keys of newer or older files are ignored (never an error when reading)."""

    model_config = ConfigDict(frozen=True, extra="ignore")


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
    duet_side: str | None = None  # mode = "duet": the side ("a" or "b") this case is (idsbench.duet)


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
    sensor_cpus: tuple[int, ...] | None = None
    mtu: int = 1500


class Lateness(Record):
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
    role: str                     # worker | management
    cpu_s: float
    cpu_pct: float                # of one core over the profiled window


class ProfileRecord(Record):
    """The sensor profiled over the replay and drain of a sample ([profile])."""

    view: str = "sensor"          # "sensor", or "qemu" when the sensor runs inside a VM guest
    window_s: float
    recorded: bool = False        # perf record ran (functions below); perf stat and threads always
    event: str | None = None
    frequency_hz: int = 0
    functions: tuple[FunctionRecord, ...] = ()          # top self time over every thread
    worker_functions: tuple[FunctionRecord, ...] = ()   # top self time of the worker threads
    threads: tuple[ThreadRecord, ...] = ()
    counters: dict[str, float | None] = Field(default_factory=dict)  # perf stat; None: not supported here
    ratios: dict[str, float | None] = Field(default_factory=dict)    # ipc, cache-miss ratios
    notes: tuple[str, ...] = ()


# A sample's timeline, in order; every second of its wall time lies in exactly one of them
# (docs/architecture.md "Runner"). A warm search trial has setup (its preparation), replay, drain, analysis.
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
    """What the sensor's packets cost: its CPU time (its cgroup) from replay start to the end of its
    drain, idle use taken out, over the packets it processed; instructions and cycles where a PMU
    is visible (`pmu` says why not otherwise)."""

    cpu_s: float
    processed_pkts: int
    us_per_pkt: float | None = None
    instructions: int | None = None
    cycles: int | None = None
    pmu: str | None = None            # None: counted; else e.g. "not supported: no hardware PMU visible"

    @property
    def instr_per_pkt(self) -> float | None:
        return self.instructions / self.processed_pkts if self.instructions and self.processed_pkts else None

    @property
    def cycles_per_pkt(self) -> float | None:
        return self.cycles / self.processed_pkts if self.cycles and self.processed_pkts else None


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

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
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


class WaterfallRecord(Record):
    """Where the packets of a trial went (accounting.Waterfall)."""

    sent: int
    loss_sender_pkts: int = 0
    loss_wire_pkts: int = 0
    loss_nic_pkts: int = 0
    loss_softnet_pkts: int = 0
    loss_capture_pkts: int = 0
    unprocessed_pkts: int = 0
    decoded_pkts: int = 0
    unaccounted_pkts: int = 0
    invisible: tuple[str, ...] = ()
    loss_ratio: float = 0.0


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
    waterfall: WaterfallRecord | None = None
    sender_limited: bool = False      # the sender fell short of the offered rate: not a pass
    sensor_cpus_used: float | None = None   # cores the trial's packets needed (replay + drain over the replay)
    backlog_fraction: float | None = None   # work left when the replay ended, over the replay's work
    fell_behind: bool = False         # work beyond the physics allowance was left: behind_pkts > 0
    behind_pkts: int = 0              # the packets of that backlog: not forwarded in time
    accounted: bool = True            # its waterfall closed (else it was repeated, not judged)
    ceiling: bool = False             # the trial that measured the sender's maximum (topspeed)
    repeat: int = 0                   # which whole search (search.repeats) it belongs to
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


class SearchGoals(Record):
    """The goal parameters a search ran with (one MLRsearch goal per tolerance)."""

    tolerances: tuple[float, ...]
    exceed_ratio: float
    relative_width: float
    initial_trial_s: float
    final_trial_s: float
    duration_sum_s: float
    controller: str = ""


class SearchRepeat(Record):
    """One whole search of `search.repeats` (a fresh sensor)."""

    index: int
    results: tuple[ToleranceResult, ...] = ()
    trials: int = 0
    elapsed_s: float = 0.0
    ndr_pps: float | None = None


class SearchResult(Record):
    """`<campaign>/search/<case_id>/search.json`."""

    case_id: str
    axis: Literal["rate", "replayers", "cpus"]
    unit: str                          # pps | replayers | cpus
    precision: float
    mode: Literal["warm", "cold"]
    avg_frame_bytes: float = 0.0
    sender_ceiling_pps: float | None = None
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
    allocation_cpus: float | None = None     # the sensor's CPUs (quota, else the host's): capacity estimates


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


class CampaignDoc(Record):
    """campaign.json: the spec as resolved, the environment, the inputs, the plan."""

    schema_version: int = Field(CAMPAIGN_SCHEMA, alias="schema")
    created_unix: float | None = None
    spec: dict[str, Any] = Field(default_factory=dict)
    environment: dict[str, Any] = Field(default_factory=dict)
    inputs: dict[str, Any] = Field(default_factory=dict)
    cases: tuple[PlannedCase, ...] = ()

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    @property
    def name(self) -> str:
        return str(self.spec.get("name") or "")

    @property
    def stats_interval_s(self) -> float:
        return float((self.spec.get("sensor") or {}).get("stats_interval_s") or 1.0)

    @property
    def settle_s(self) -> float:
        return float((self.spec.get("timing") or {}).get("settle_s") or 0.0)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def migrate_summary(doc: dict[str, Any]) -> dict[str, Any]:
    """A summary.json of any schema as the current one expects it (derived keys are dropped)."""
    out = dict(doc)
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
                # detection under load, against the offline ground truth (when there is one)
                "alert_recall", "alerts_extra",
                # the sample's wall time beyond its replay (SampleSummary.overhead_s)
                "overhead_s",
                # what a packet cost the sensor (its cgroup's CPU time; PMU counts where visible)
                "sensor_us_per_pkt", "sensor_instr_per_pkt", "sensor_cycles_per_pkt")


class CaseResult(Record):
    """One case of `idsbench results`: medians over its `ok` samples, their CIs, verdict counts.

    `medians`/`cis` are keyed by `CASE_METRICS` (+ any added by later analyses); `to_row()` is the
    flat JSON object of the results contract (DESIGN.md)."""

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
    extra: dict[str, Any] = Field(default_factory=dict)  # results of later analyses (search…)
    # each metric's per-sample values (ok samples, in sample order): what effect sizes resample
    # (analysis.effect); not part of `to_row()`
    values: dict[str, tuple[float | None, ...]] = Field(default_factory=dict)

    def to_row(self) -> dict[str, Any]:
        p = self.params
        row: dict[str, Any] = {"case": self.case, "setup": p.setup, "engine": p.engine, "trace": p.trace,
                               "replayers": p.replayers, "rate": p.rate, "sender": p.sender,
                               "samples": self.samples}
        row.update({k: _tidy(v) for k, v in self.medians.items()})
        row.update({"status": self.status, "status_counts": dict(self.status_counts),
                    "labels": list(self.labels), "loops": p.loops, "cpus": p.cpus, "memory": p.memory,
                    "samples_failed": self.samples_failed, "samples_incomplete": self.samples_incomplete,
                    "pair": ",".join(self.pairs) or None})
        row.update({f"{k}_ci": [_tidy(v[0]), _tidy(v[1])] if v else None for k, v in self.cis.items()})
        row["ci_level"] = round(self.ci_level, 4)
        row.update(self.extra)
        row["warnings"] = list(self.warnings)
        return row


def _tidy(value: float | None) -> float | int | None:
    if value is None:
        return None
    if float(value).is_integer() and abs(value) < 2**53:
        return int(value)
    return round(float(value), 6)
