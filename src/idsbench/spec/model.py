"""The spec's model: typed, frozen pydantic sections (`Spec` and its parts), each validating its own
keys. List-valued axes (traces, replayers, rate, setup kinds, cpus, memory …) expand to their cartesian
product in `plan.py`. Unknown keys are errors (a typo must not silently fall back to a default)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from idsbench.hostspec import HostEntry

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """'512m', '2g', '1.5GiB', 1048576 -> bytes."""
    if isinstance(text, int):
        return text
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"{text!r} is not a size; write e.g. '512m' or '2g'")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** " kmgt".index(unit or " "))


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Rate(_Frozen):
    """How fast each replayer sends: as recorded, as fast as possible, or a fixed rate."""

    kind: Literal["recorded", "topspeed", "multiplier", "mbps", "pps"]
    value: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_toml(cls, data: Any) -> Any:
        if isinstance(data, str):
            if data not in ("recorded", "topspeed"):
                raise ValueError(
                    f"{data!r} is not a rate; use \"recorded\", \"topspeed\", {{ multiplier = 2.0 }}, "
                    "{ mbps = 100 } or { pps = 20000 }"
                )
            return {"kind": data}
        if isinstance(data, dict) and "kind" not in data:
            if len(data) != 1 or next(iter(data)) not in ("multiplier", "mbps", "pps"):
                raise ValueError(
                    f"{data!r} is not a rate; a fixed rate is one of {{ multiplier = X }}, "
                    "{ mbps = X } or { pps = X }"
                )
            (kind, value), = data.items()
            return {"kind": kind, "value": value}
        return data

    @model_validator(mode="after")
    def _positive(self) -> Rate:
        if self.kind in ("multiplier", "mbps", "pps") and (self.value is None or self.value <= 0):
            raise ValueError(f"rate {self.kind} must be a positive number, got {self.value!r}")
        return self

    @property
    def label(self) -> str:
        if self.value is None:
            return self.kind
        return f"{self.kind}={self.value:g}"

    @classmethod
    def from_label(cls, label: str) -> Rate:
        """The rate a `label` names ("recorded", "pps=2000"): the inverse of `label`."""
        kind, _, value = label.partition("=")
        return cls.model_validate({"kind": kind, "value": float(value) if value else None})


SenderName = Literal["native", "tcpreplay"]


class TraceEntry(_Frozen):
    """A trace that names its own rules: `{ path = "x.pcap", rules = ["x.rules"] }`. Its cases run with
    those rules only (they replace the sensor.rules axis for this trace)."""

    path: str = Field(min_length=1)
    rules: list[str] = Field(min_length=1)

    @field_validator("rules", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]


class Traffic(_Frozen):
    # a capture reference ("x.pcap", "builtin:web") or one with its own rules (TraceEntry); mixing is allowed
    traces: list[str | TraceEntry] = Field(default_factory=lambda: list[str | TraceEntry](["builtin:mixed"]),
                                           min_length=1)
    replayers: list[Annotated[int, Field(ge=1, le=64)]] = Field(default_factory=lambda: [1], min_length=1)
    rate: list[Rate] = Field(default_factory=lambda: [Rate(kind="recorded")], min_length=1)
    loops: int = Field(1, ge=1)
    duration_s: float | None = Field(None, gt=0)  # loop the trace until this many seconds passed
    flows: Literal["distinct", "identical"] = "distinct"  # each replayer its own flows, or copies
    # who sends: "native" (idsbench's replayer: absolute schedule, exact rates) or "tcpreplay"; a list is an axis
    sender: list[SenderName] = Field(default_factory=lambda: list[SenderName](["native"]), min_length=1)

    @model_validator(mode="after")
    def _loops_or_duration(self) -> Traffic:
        if self.duration_s is not None and self.loops != 1:
            raise ValueError("give either loops or duration_s, not both")
        return self

    @field_validator("traces", "replayers", "rate", "sender", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @field_validator("traces", mode="before")
    @classmethod
    def _entries(cls, v: Any) -> Any:
        """A table is a trace with its own rules; its error names the entry and the form (not the union's parts)."""
        out = []
        for i, item in enumerate(v if isinstance(v, list) else [v]):
            if isinstance(item, dict):
                try:
                    item = TraceEntry.model_validate(item)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    where = ".".join(str(p) for p in err["loc"]) or "it"
                    raise ValueError(f"entry {i} is not a trace with its own rules, "
                                     f'{{ path = "x.pcap", rules = ["x.rules"] }} ({where}: {err["msg"]})') from exc
            out.append(item)
        return out

    def trace_refs(self) -> list[str]:
        """The capture references of `traces` (each once, in order)."""
        return list(dict.fromkeys(t if isinstance(t, str) else t.path for t in self.traces))


Scalar = str | int | float | bool
DEFAULT_CONFIG = "default"  # sensor.config: the engine's own configuration, no overlay
DEFAULT_RULESET = "default"  # a case's ruleset when sensor.rules is one list (no ruleset axis)
AUTO_THREADS = "auto"  # sensor.threads: the engine's own worker count (Suricata: one per online CPU)
MAX_THREADS = 256
Threads = int | Literal["auto"] | None  # None: as many workers as CPUs the sensor is given (run/facts.py)


def ruleset_label(refs: list[Any]) -> str:
    """A ruleset's name made from its files: their stems joined by "+"."""
    return "+".join(Path(str(r)).stem for r in refs) or "none"


class Sensor(_Frozen):
    engine: list[str] = Field(default_factory=lambda: ["suricata"], min_length=1)  # an axis
    rules: list[str] = Field(default_factory=lambda: ["builtin:events"])
    # engine config overlays (e.g. `idsbench tune plan --format yaml`); "default" = none; a list is an
    # axis (an A/B of configurations: ["default", "tuned.yaml"])
    config: list[str] = Field(default_factory=lambda: [DEFAULT_CONFIG], min_length=1)
    # Engine settings: plain keys go to every engine of the campaign; a table named after an engine
    # ([sensor.set.snort]) to that engine only, and wins over a plain key of the same name.
    set: dict[str, Scalar | dict[str, Scalar]] = Field(default_factory=dict)
    stats_interval_s: int = Field(1, ge=1, le=60)
    ready_timeout_s: float = Field(120.0, gt=0)
    # engine "capture": its reader (`method` in the spec is the same key, as issue 15 names it)
    capture_method: Literal["afpacket", "libpcap"] = Field(
        "afpacket", validation_alias=AliasChoices("capture_method", "method"))
    ground_truth: bool = True  # alerts per signature offline, for the recall of every sample (loops = 1)
    # rulesets as an axis, by name: `rules = [["a.rules"], ["a.rules", "b.rules"]]` (names from the file
    # stems) or `rules = {"et" = [...], "et-minus-policy" = [...]}` fill it, and `rules` then holds every
    # reference of all sets; empty: `rules` is the one ruleset (case ids unchanged)
    rulesets: dict[str, list[str]] = Field(default_factory=dict)
    # worker threads (Suricata's af-packet workers, Snort's packet threads, the capture engine's readers):
    # unset = the CPUs the sensor is pinned to, or its quota rounded up; a count; or "auto" (the
    # engine's own choice); a list is an axis
    threads: list[Threads] = Field(default_factory=lambda: list[Threads]([None]), min_length=1)
    # how the engine reads the wire (idsbench.capture): a method name, or a list (an axis); None: the
    # engine's default (Suricata "af-packet", Snort "afpacket", the capture engine its `capture_method`)
    capture: list[str | None] = Field(default_factory=lambda: list[str | None]([None]), min_length=1)
    # the methods' options: plain keys for every method of the axis, a table per method for its own
    capture_options: dict[str, Scalar | dict[str, Scalar]] = Field(default_factory=dict)
    # flow bypass (idsbench.bypass): "off", "local", "xdp", "ebpf", or a list (an axis); None: "off"
    bypass: list[str | None] = Field(default_factory=lambda: list[str | None]([None]), min_length=1)

    @model_serializer(mode="wrap")
    def _without_unset_threads(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:  # Any: pydantic's dump
        """A spec without `threads`, `capture` or `capture_options` dumps as before they existed (resume
        compares dumps)."""
        data: dict[str, Any] = handler(self)  # Any: pydantic's dump
        if data.get("threads") == [None]:
            data.pop("threads")
        if data.get("capture") == [None]:
            data.pop("capture")
        if not data.get("capture_options"):
            data.pop("capture_options", None)
        if data.get("bypass") == [None]:
            data.pop("bypass")
        return data

    @field_validator("capture", mode="before")
    @classmethod
    def _capture_names(cls, v: Any) -> Any:
        values = v if isinstance(v, list) else [v]
        for c in values:
            if c is not None and (not isinstance(c, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", c)):
                raise ValueError(f"capture = {c!r} is not a capture method name (e.g. \"af-packet\", \"pcap\")")
        return values

    @field_validator("bypass", mode="before")
    @classmethod
    def _bypass_list(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @field_validator("threads", mode="before")
    @classmethod
    def _thread_counts(cls, v: Any) -> Any:
        for t in v if isinstance(v, list) else [v]:
            count = isinstance(t, int) and not isinstance(t, bool) and 1 <= t <= MAX_THREADS
            if not (count or t == AUTO_THREADS or t is None):
                raise ValueError(f"threads = {t!r} is not a worker count (1..{MAX_THREADS}) nor \"{AUTO_THREADS}\"")
        return v if isinstance(v, list) else [v]

    @model_validator(mode="before")
    @classmethod
    def _ruleset_axis(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        rules = data.get("rules")
        if isinstance(rules, dict):
            sets = {str(k): (v if isinstance(v, list) else [v]) for k, v in rules.items()}
        elif isinstance(rules, list) and rules and all(isinstance(r, list) for r in rules):
            sets = {}
            for refs in rules:
                label = ruleset_label(refs)
                sets[label if label not in sets else f"{label}#{len(sets) + 1}"] = refs
        else:
            return data
        if data.get("rulesets"):
            raise ValueError("give the rulesets either as rules = [[...], ...] / {name = [...]} or as rulesets, "
                             "not both")
        return {**data, "rules": list(dict.fromkeys(r for refs in sets.values() for r in refs)), "rulesets": sets}

    def ruleset_axis(self) -> list[tuple[str, list[str]]]:
        """(name, rule references) per ruleset of the axis; ("default", rules) without one."""
        return list(self.rulesets.items()) if self.rulesets else [(DEFAULT_RULESET, self.rules)]

    @field_validator("rules", "engine", "config", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        if v is None:
            return [DEFAULT_CONFIG]  # config = null in specs written before it was an axis
        return v if isinstance(v, list) else [v]

    @field_validator("config")
    @classmethod
    def _configs(cls, v: list[str]) -> list[str]:
        if any(not c.strip() for c in v):
            raise ValueError(f'an empty config name; use "{DEFAULT_CONFIG}" for the engine\'s own configuration')
        return v

    def overlays(self) -> list[str]:
        """The config overlay files named (the configs other than "default")."""
        return [c for c in self.config if c != DEFAULT_CONFIG]

    def overrides(self, engine: str = "suricata") -> dict[str, str]:
        """`engine`'s settings as strings (booleans as yes/no): the plain keys, then its own table."""
        out: dict[str, str] = {}
        own = self.set.get(engine)
        plain = {k: v for k, v in self.set.items() if not isinstance(v, dict)}
        for key, value in [*plain.items(), *(own.items() if isinstance(own, dict) else ())]:
            out[key] = ("yes" if value else "no") if isinstance(value, bool) else str(value)
        return out


def _no_limit() -> list[Any]:
    return [None]


class Setup(_Frozen):
    kinds: list[str] = Field(default_factory=lambda: ["baremetal"], min_length=1)
    cpus: list[float | None] = Field(default_factory=_no_limit)
    memory: list[str | None] = Field(default_factory=_no_limit)
    cpuset: list[int] | None = None
    runtime: Literal["auto", "podman", "docker"] = "auto"  # container setups; auto: podman if usable
    swappiness: int | None = Field(None, ge=0, le=100)  # the sensor cgroup's memory.swappiness
    vcpus: int | None = Field(None, ge=1, le=256)  # vm: guest vCPUs (default: cpus rounded up)
    accel: Literal["auto", "kvm", "tcg"] = "auto"  # vm: auto = KVM if it boots the guest, else TCG
    # vm-vfio (setups/vfio): the PCI function the sensor VM owns — a whole NIC by its BDF, or a VF that
    # idsbench makes of an SR-IOV PF (an interface name) and sets up: MAC, port VLAN, spoofchk off, trust on
    vfio_device: str | None = Field(None, pattern=r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
    sriov_pf: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,14}$")
    sriov_mac: str = Field("02:69:64:73:00:01", pattern=r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
    sriov_vlan: int | None = Field(None, ge=1, le=4094)
    hugepages: bool = False  # vm-vfio: guest RAM from /dev/hugepages (reserved beforehand)
    boot_timeout_s: float = Field(240.0, gt=0)  # vm, vm-vfio: how long the guest may take to boot

    @model_validator(mode="after")
    def _vfio_device_named(self) -> Setup:
        if "vm-vfio" in self.kinds and (self.vfio_device is None) == (self.sriov_pf is None):
            raise ValueError("setup kind 'vm-vfio' needs exactly one of setup.vfio_device (a PCI function, e.g. "
                             "\"0000:3b:00.1\") or setup.sriov_pf (an SR-IOV PF interface, e.g. \"ens2f0\")")
        return self

    @field_validator("kinds", "cpus", "memory", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @field_validator("cpus")
    @classmethod
    def _cpus_positive(cls, v: list[float | None]) -> list[float | None]:
        for cpus in v:
            if cpus is not None and cpus <= 0:
                raise ValueError(f"cpus must be > 0 (a fraction of one core, e.g. 0.5), got {cpus}")
        return v

    @field_validator("memory")
    @classmethod
    def _memory_size(cls, v: list[str | None]) -> list[str | None]:
        for mem in v:
            if mem is not None and parse_size(mem) < 16 * 1024**2:
                raise ValueError(f"memory {mem!r} is below 16 MiB; write e.g. '512m' or '2g'")
        return v


class Timing(_Frozen):
    settle_s: float = Field(0.0, ge=0)  # at least this long after the replay before stopping the sensor
    drain_timeout_s: float = Field(30.0, gt=0)  # at most this long waiting for it to process its backlog
    replay_timeout_s: float = Field(3600.0, gt=0)
    stop_timeout_s: float = Field(60.0, gt=0)


class Hosts(_Frozen):
    """Run on real hosts (sender/sensor pairs over SSH) instead of this machine's namespaces."""

    inventory: str | None = None         # an Ansible inventory (relative to the spec file)
    host: list[HostEntry] = Field(default_factory=list)  # or the hosts inline
    known_hosts: str | None = None       # default: the inventory's idsbench_known_hosts, else idsbench's own
    pool_pairs: bool = False             # allow a case's samples on pairs whose hardware differs
    tune: str | None = None              # an Ansible role (`idsbench tune plan --format ansible`) for sensors

    @model_validator(mode="after")
    def _one_source(self) -> Hosts:
        if (self.inventory is None) == (not self.host):
            raise ValueError("give either inventory = \"FILE\" or [[hosts.host]] tables, not both or neither")
        return self
class Impairment(_Frozen):
    """netem on the sender's end of the wire: a lossy SPAN port or tap."""

    loss: float = Field(0.0, ge=0, le=1)         # fraction of packets lost (0.02 = 2%)
    delay_ms: float = Field(0.0, ge=0, le=10_000)
    jitter_ms: float = Field(0.0, ge=0, le=10_000)
    reorder: float = Field(0.0, ge=0, le=1)      # fraction of packets sent out of order (needs delay)

    @property
    def active(self) -> bool:
        return bool(self.loss or self.delay_ms or self.jitter_ms or self.reorder)


class Wire(_Frozen):
    impair: Impairment = Field(default_factory=Impairment)
    # Two NIC ports of this host cabled together (wire/nic.py) instead of the veth pair: the replayers send
    # out of `sender_interface`; `sensor_interface` (default: setup.sriov_pf) is the sensor side's NIC.
    sender_interface: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,14}$")
    sensor_interface: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,14}$")


class Search(_Frozen):
    """`idsbench search`: the highest load each case takes within a drop tolerance (NDR, PDRs), or the
    fewest CPUs that stay lossless at the case's load (`axis = "cpus"`)."""

    tolerances: list[float] = Field(default_factory=lambda: [0.0], min_length=1)  # drop ratios: 0 = NDR
    # The goals of the MLRsearch controller (one per tolerance; docs/architecture.md "Search"):
    precision: float = Field(0.05, gt=0, lt=1)   # relative width between the relevant lower and upper bound
    exceed_ratio: float = Field(0.5, ge=0, lt=1)  # share of a load's trial seconds that may be bad trials
    axis: Literal["rate", "replayers", "cpus"] = "rate"
    trial_s: float = Field(5.0, gt=0)            # final trial duration (what a bound rests on)
    initial_trial_s: float = Field(1.0, gt=0)    # shortest trial duration (the first, coarse targets)
    duration_sum: float = Field(15.0, gt=0)      # trial seconds at final length that decide a bound
    repeats: int = Field(1, ge=1, le=20)         # whole searches, a fresh sensor each: median, CI
    max_search_s: float = Field(1800.0, gt=0)    # the controller gives up after this long
    final_s: float = Field(20.0, gt=0)           # length of the verification trial at the result
    warm: bool = True                            # search trials on one running sensor
    max_trials: int = Field(60, ge=2, le=500)    # trials per search at most (then its bounds so far)
    min_cpus: float = Field(0.05, gt=0)          # cpus axis: the smallest allocation tried
    max_replayers: int = Field(16, ge=1, le=64)  # replayers axis: the upper bound

    @field_validator("tolerances", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @field_validator("tolerances")
    @classmethod
    def _ratios(cls, v: list[float]) -> list[float]:
        if any(not 0 <= t < 1 for t in v):
            raise ValueError(f"tolerances are drop ratios in [0, 1), got {v}")
        return sorted(set(v))


class Profile(_Frozen):
    """[profile]: where the sensor's CPU goes during each sample's replay and drain."""

    perf: bool = False                                 # perf stat + per-thread CPU in every sample
    record_samples: int = Field(1, ge=0, le=1000)      # and perf record (top functions) in the first N
    frequency_hz: int = Field(999, ge=10, le=20000)    # perf record sampling frequency
    top: int = Field(25, ge=1, le=500)                 # functions kept per sample


class Spec(_Frozen):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    samples: int = Field(6, ge=1, le=1000)  # 6: the fewest whose min..max CI of the median covers 95%
    # The order samples run in: "cases" (each case's samples in a row) or "interleaved" (rounds: s0 of every
    # case, then s1 …, the cases of each round in a seeded random order), so a host's drift over minutes
    # falls on every case alike and the analysis can pair them round by round. None (unset): interleaved
    # when more than one case has more than one sample (run/order.py). The order a campaign runs in is
    # recorded in campaign.json's `order`, not in its spec dump (older campaigns: their spec's, else "cases").
    order: Literal["cases", "interleaved"] | None = None
    # "duet": two sensors side by side on the one replay (docs/architecture.md, "Duet"): exactly one axis of
    # idsbench.spec.duet.SIDE_AXES has two values (sides a and b, in the order written), or none (an A/A duet)
    mode: Literal["single", "duet"] = "single"
    traffic: Traffic = Field(default_factory=Traffic)
    sensor: Sensor = Field(default_factory=Sensor)
    setup: Setup = Field(default_factory=Setup)
    timing: Timing = Field(default_factory=Timing)
    hosts: Hosts | None = None  # None: this machine (namespaces); else the hosts of an inventory
    wire: Wire = Field(default_factory=Wire)
    search: Search = Field(default_factory=Search)
    profile: Profile = Field(default_factory=Profile)
    base_dir: Path = Field(default=Path("."), exclude=True)

    @model_serializer(mode="wrap")
    def _without_absent_hosts(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """Specs without [hosts] dump as before it existed (resume compares dumps); `order` is never in the
        dump: campaign.json records the order a campaign runs in (run/order.py), and an older campaign
        whose spec said "interleaved" resumes with a spec that leaves it to the default."""
        data: dict[str, object] = handler(self)
        if data.get("hosts", 0) is None:
            data.pop("hosts")
        data.pop("order", None)
        if data.get("mode") == "single":
            data.pop("mode")
        return data

    def trace_rulesets(self) -> list[tuple[str, list[tuple[str, list[str]]]]]:
        """Per entry of traffic.traces: its capture reference and the rulesets (name, rule references) its
        cases run with: the sensor.rules axis, or the trace's own rules — one set named after its files'
        stems (`#k` added when another set of the campaign has that name with other files)."""
        axis = self.sensor.ruleset_axis()
        taken = dict(axis)
        out: list[tuple[str, list[tuple[str, list[str]]]]] = []
        for entry in self.traffic.traces:
            if isinstance(entry, str):
                out.append((entry, axis))
                continue
            base = name = ruleset_label(entry.rules)
            k = 1
            while name in taken and taken[name] != entry.rules:
                k += 1
                name = f"{base}#{k}"
            taken[name] = entry.rules
            out.append((entry.path, [(name, entry.rules)]))
        return out

    def rulesets_used(self) -> dict[str, list[str]]:
        """Every ruleset some case runs with: name -> rule references (what preflight resolves and tests)."""
        return {name: refs for _, sets in self.trace_rulesets() for name, refs in sets}

    def resolve_path(self, ref: str) -> Path:
        """A file reference from the spec, relative to the spec file's directory."""
        path = Path(ref).expanduser()
        return path if path.is_absolute() else (self.base_dir / path)
