"""The spec's model: typed, frozen pydantic sections (`Spec` and its parts), each validating its own
keys. List-valued axes (traces, replayers, rate, setup kinds, cpus, memory …) expand to their cartesian
product in `plan.py`. Unknown keys are errors (a typo must not silently fall back to a default)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from idsbench import legacy
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
            got = "nothing" if self.value is None else f"{self.value:g}"
            raise ValueError(f"rate {self.kind} must be a positive number, got {got}")
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

    path: str = Field(min_length=1, description="The capture (pcap or pcapng), relative to the spec file.")
    rules: list[str] = Field(min_length=1, description="Rule files this trace's cases run with, instead of "
                             "sensor.rules.")

    @field_validator("rules", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]


class Traffic(_Frozen):
    """[traffic]: what is replayed into the sensor, and how fast."""

    traces: list[str | TraceEntry] = Field(
        default_factory=lambda: list[str | TraceEntry](["builtin:mixed"]), min_length=1,
        description="Captures to replay (an axis): pcap/pcapng paths relative to the spec file, generated "
        "traffic `builtin:mixed|web|dns|small-packets|bulk|elephants[?packets=N&rate_pps=R&...]`, or a table "
        "`{ path = \"x.pcap\", rules = [\"x.rules\"] }` for a trace with its own rules. Strings and tables mix.")
    replayers: list[Annotated[int, Field(ge=1, le=64)]] = Field(
        default_factory=lambda: [1], min_length=1,
        description="Parallel replayers (\"NX load\"), each sending the whole trace (an axis).")
    rate: list[Rate] = Field(
        default_factory=lambda: [Rate(kind="recorded")], min_length=1,
        description="Each replayer's rate (an axis): \"recorded\" (the capture's own timing), \"topspeed\", "
        "{ multiplier = X }, { mbps = X } or { pps = X }.")
    loops: int = Field(1, ge=1, description="How many times each replayer sends the trace.")
    duration_s: float | None = Field(None, gt=0, description="Loop the trace until this many seconds passed "
                                     "(instead of `loops`).")
    flows: Literal["distinct", "identical"] = Field(
        "distinct", description="\"distinct\": each replayer's copy has its own addresses (its own flows); "
        "\"identical\": every replayer sends the same packets.")
    sender: list[SenderName] = Field(
        default_factory=lambda: list[SenderName](["native"]), min_length=1,
        description="Who sends (an axis): \"native\" (idsbench's replayer, an absolute schedule: exact "
        "rates) or \"tcpreplay\".")

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
    """[sensor]: which engine runs, with which rules and settings."""

    engine: list[str] = Field(
        default_factory=lambda: ["suricata"], min_length=1,
        description="The engine (an axis): \"suricata\" (the installed one), \"snort\" (Snort 3, built by "
        "`make snort`), \"nodetect\" (no detection: the capture path alone; \"capture\" before); a Suricata "
        "build from source "
        "\"suricata@8.0.6\"; options after `+`: \"suricata@8.0.6+profiling\", \"+nohyperscan\", "
        "\"snort+profiling\" (docs/engines.md).")
    rules: list[str] = Field(
        default_factory=lambda: ["builtin:events"],
        description="Rule files or directories of *.rules; \"builtin:events\" (each engine's own protocol-event "
        "rules), \"builtin:markers\" (the marker rules of generated traffic). A ruleset axis: a list of lists "
        "`[[\"a.rules\"], [\"a.rules\", \"b.rules\"]]` or a table of named sets "
        "`{ base = [\"a.rules\"], more = [\"a.rules\", \"b.rules\"] }`.")
    config: list[str] = Field(
        default_factory=lambda: [DEFAULT_CONFIG], min_length=1,
        description="Config overlays (an axis): \"default\" = none, or a file (Suricata: `--include FILE`, which "
        "replaces whole top-level sections; Snort: `include` after idsbench's settings), e.g. "
        "[\"default\", \"tuned.yaml\"] for an A/B (docs/configuration.md).")
    set: dict[str, Scalar | dict[str, Scalar]] = Field(
        default_factory=dict,
        description="Engine settings applied last (Suricata: `--set key=value`; Snort: a Lua assignment). Plain "
        "keys go to every engine; a table named after an engine ([sensor.set.snort]) to that engine only and wins "
        "over a plain key of the same name. Booleans become yes/no.")
    stats_interval_s: int = Field(1, ge=1, le=60, description="Seconds between the engine's counter records "
                                  "(the counter series of every sample).")
    ready_timeout_s: float = Field(120.0, gt=0, description="How long the sensor may take to start (rule "
                                   "load included) before the sample fails.")
    ground_truth: bool = Field(True, description="Read each replayed copy offline with the same rules and "
                               "config (cases with one loop): alerts per signature, for every sample's alert "
                               "recall.")
    rulesets: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Named rulesets (an axis), name -> rule references. Usually filled from `rules` given as a "
        "list of lists or a table (then `rules` holds every reference of all sets); empty: `rules` is the one "
        "ruleset.")
    threads: list[Threads] = Field(
        default_factory=lambda: list[Threads]([None]), min_length=1,
        description="Worker threads (Suricata's af-packet workers, Snort's packet threads, the nodetect engine's "
        "readers; an axis): unset = as many as CPUs the sensor is given (pinned CPUs, or its quota rounded up); "
        "a count; or \"auto\" (the engine's own choice).")
    capture: list[str | None] = Field(
        default_factory=lambda: list[str | None]([None]), min_length=1,
        description="How the engine reads the wire (an axis). Suricata: \"af-packet\" (default), "
        "\"af-packet-v2\", \"af-xdp\", \"pcap\"; Snort: \"afpacket\" (default), \"pcap\"; nodetect: "
        "\"afpacket\" (default, ibcapture), \"libpcap\" (tcpdump to /dev/null) — each engine declares its "
        "methods (sensors/<engine>/capture.py). Unset: the engine's default (docs/capture.md). `capture_method` "
        "(or `method`) of older specs is read as this (idsbench.legacy).")
    capture_options: dict[str, Scalar | dict[str, Scalar]] = Field(
        default_factory=dict,
        description="Capture method options: plain keys for every method of the axis, a table "
        "[sensor.capture_options.<method>] for one method (e.g. ring-size, block-size, cluster-type, xdp-mode, "
        "buffer-size; docs/capture.md).")
    bypass: list[str | None] = Field(
        default_factory=lambda: list[str | None]([None]), min_length=1,
        description="Suricata flow bypass (an axis): \"off\" (default), \"local\" (the stream engine's), "
        "\"xdp\" or \"ebpf\" (a kernel program drops a bypassed flow's packets; bare metal, af-packet).")

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

    @model_validator(mode="before")
    @classmethod
    def _legacy_names(cls, data: Any) -> Any:
        """Older names (engine "capture", `capture_method`) as they are now (idsbench.legacy)."""
        return legacy.sensor_doc(data) if isinstance(data, dict) else data

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
        return engine_overrides(self.set, engine)


def engine_overrides(table: Mapping[str, Scalar | Mapping[str, Scalar]], engine: str) -> dict[str, str]:
    """`engine`'s settings of a `sensor.set` table as strings (booleans as yes/no): the plain keys, then
    the engine's own table, which wins."""
    out: dict[str, str] = {}
    own = table.get(engine)
    plain = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    for key, value in [*plain.items(), *(own.items() if isinstance(own, Mapping) else ())]:
        out[key] = ("yes" if value else "no") if isinstance(value, bool) else str(value)
    return out


def _no_limit() -> list[Any]:
    return [None]


class Setup(_Frozen):
    """[setup]: how the sensor is isolated, and its limits."""

    kinds: list[str] = Field(
        default_factory=lambda: ["baremetal"], min_length=1,
        description="Isolation (an axis): \"baremetal\", \"container\", \"container-vtap\" (a container fed by "
        "a macvtap), \"vm\" (a VM fed by a macvtap), \"vm-vfio\" (a VM owning a PCI function; docs/setups.md).")
    cpus: list[float | None] = Field(default_factory=_no_limit,
                                     description="The sensor's CPU limit in cores, e.g. 0.5 (an axis); unset: none.")
    memory: list[str | None] = Field(default_factory=_no_limit,
                                     description="The sensor's memory limit, e.g. \"512m\", \"2g\" (an axis; swap "
                                     "prevented); unset: none.")
    cpuset: list[int] | None = Field(None, description="The CPUs the sensor is pinned to; unset: every CPU but "
                                     "the sender's first one.")
    runtime: Literal["auto", "podman", "docker"] = Field(
        "auto", description="Container setups: the runtime; \"auto\" = podman if usable, else docker.")
    swappiness: int | None = Field(None, ge=0, le=100, description="The sensor cgroup's memory.swappiness.")
    vcpus: int | None = Field(None, ge=1, le=256, description="vm: guest vCPUs; unset: `cpus` rounded up.")
    accel: Literal["auto", "kvm", "tcg"] = Field(
        "auto", description="vm: \"auto\" = KVM if it boots the guest, else TCG (results labelled emulated).")
    vfio_device: str | None = Field(
        None, pattern=r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$",
        description="vm-vfio: a whole PCI function the VM owns, by its address (\"0000:3b:00.1\"). Exactly one of "
        "vfio_device and sriov_pf.")
    sriov_pf: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,14}$",
        description="vm-vfio: an SR-IOV PF interface (\"ens2f0\"); idsbench makes a VF of it, gives it to the VM "
        "and restores the PF afterwards.")
    sriov_mac: str = Field("02:69:64:73:00:01", pattern=r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$",
                           description="vm-vfio: the VF's MAC address (the sender port rewrites frames to it).")
    sriov_vlan: int | None = Field(None, ge=1, le=4094, description="vm-vfio: the VF's port VLAN; unset: none.")
    hugepages: bool = Field(False, description="vm-vfio: guest RAM from /dev/hugepages (reserved beforehand).")
    boot_timeout_s: float = Field(240.0, gt=0, description="vm, vm-vfio: how long the guest may take to boot.")

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
    """[timing]: the waits around each sample's replay."""

    settle_s: float = Field(0.0, ge=0, description="At least this long after the replay before the sensor is "
                            "stopped.")
    drain_timeout_s: float = Field(30.0, gt=0, description="At most this long waiting for the sensor to process "
                                   "what it captured (what is left counts as unprocessed_pkts).")
    replay_timeout_s: float = Field(3600.0, gt=0, description="A replay still running after this long is stopped "
                                    "and the sample fails.")
    stop_timeout_s: float = Field(60.0, gt=0, description="How long a graceful stop of the sensor may take before "
                                  "it is killed.")
    idle_window_s: float = Field(1.0, ge=0, le=60, description="The sensor's idle CPU rate is read over this window "
                                 "before each sample's replay (whole periods of its housekeeping: Suricata wakes every "
                                 "1 s and 100 ms; 1 s is one whole period of each and adds 1 s to every sample) for the "
                                 "CPU per packet without it, sensor_us_per_pkt_net; 0: not read, no net figure.")


class Hosts(_Frozen):
    """Run on real hosts (sender/sensor pairs over SSH) instead of this machine's namespaces."""

    inventory: str | None = Field(None, description="An Ansible inventory (YAML), relative to the spec file "
                                  "(docs/hosts.md). Exactly one of inventory and [[hosts.host]].")
    host: list[HostEntry] = Field(default_factory=list, description="The hosts inline, as [[hosts.host]] tables.")
    known_hosts: str | None = Field(None, description="The known_hosts file host keys are checked against; "
                                    "unset: the inventory's idsbench_known_hosts, else "
                                    "~/.cache/idsbench/hosts/known_hosts.")
    pool_pairs: bool = Field(False, description="Allow a case's samples on pairs whose hardware differs.")
    tune: str | None = Field(None, description="An Ansible role (`idsbench tune plan --format ansible`) applied "
                             "to the sensors.")

    @model_validator(mode="after")
    def _one_source(self) -> Hosts:
        if (self.inventory is None) == (not self.host):
            raise ValueError("give either inventory = \"FILE\" or [[hosts.host]] tables, not both or neither")
        return self
class Impairment(_Frozen):
    """[wire.impair]: an emulated lossy SPAN port or tap on the sender's end of the wire."""

    loss: float = Field(0.0, ge=0, le=1, description="Fraction of packets lost (0.02 = 2%), by an eBPF "
                        "classifier; booked as wire loss.")
    delay_ms: float = Field(0.0, ge=0, le=10_000, description="Added delay (needs the kernel's netem).")
    jitter_ms: float = Field(0.0, ge=0, le=10_000, description="Jitter of the delay (needs netem).")
    reorder: float = Field(0.0, ge=0, le=1, description="Fraction of packets sent out of order (needs netem and "
                           "a delay).")

    @property
    def active(self) -> bool:
        return bool(self.loss or self.delay_ms or self.jitter_ms or self.reorder)


class Wire(_Frozen):
    """[wire]: the link between sender and sensor (by default a veth pair between two namespaces)."""

    impair: Impairment = Field(default_factory=Impairment, description="An emulated lossy tap ([wire.impair]).")
    sender_interface: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,14}$",
        description="Two NIC ports of this host cabled together instead of the veth pair: the port the replayers "
        "send out of.")
    sensor_interface: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,14}$",
        description="The sensor side's NIC port of that cable; unset: setup.sriov_pf.")


class Search(_Frozen):
    """`idsbench search`: the highest load each case takes within a drop tolerance (NDR, PDRs), or the
    fewest CPUs that stay lossless at the case's load (`axis = "cpus"`)."""

    tolerances: list[float] = Field(default_factory=lambda: [0.0], min_length=1,
                                    description="Goal loss ratios in [0, 1), one MLRsearch goal each: 0 = NDR, "
                                    "e.g. [0, 0.001, 0.01] adds PDRs.")
    precision: float = Field(0.05, gt=0, lt=1, description="Relative width between the relevant lower and upper "
                             "bound at which a goal is found; also the noise level the host probe warns above.")
    exceed_ratio: float = Field(0.5, ge=0, lt=1, description="Share of a load's trial seconds that may be bad "
                                "trials while the load still passes.")
    axis: Literal["rate", "replayers", "cpus"] = Field(
        "rate", description="What is searched: the offered \"rate\", the number of \"replayers\", or the fewest "
        "\"cpus\" that stay lossless at the case's load.")
    trial_s: float = Field(5.0, gt=0, description="Final trial duration (what a bound rests on).")
    initial_trial_s: float = Field(1.0, gt=0, description="Shortest trial duration (the first, coarse loads).")
    duration_sum: float = Field(15.0, gt=0, description="Trial seconds at final length that decide whether a load "
                                "is a bound.")
    repeats: int = Field(1, ge=1, le=20, description="Whole searches, a fresh sensor each: the result is their "
                         "median, with a CI.")
    max_search_s: float = Field(1800.0, gt=0, description="The controller gives up after this long (the bounds "
                                "found so far are kept).")
    final_s: float = Field(20.0, gt=0, description="Length of the cold verification sample at the result.")
    warm: bool = Field(True, description="Trials on one running sensor (false: a fresh sensor per trial).")
    max_trials: int = Field(60, ge=2, le=500, description="Trials per search at most (then its bounds so far).")
    min_cpus: float = Field(0.05, gt=0, description="axis = \"cpus\": the smallest allocation tried.")
    max_replayers: int = Field(16, ge=1, le=64, description="axis = \"replayers\": the upper bound.")

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

    perf: bool = Field(False, description="perf stat and per-thread CPU in every sample (docs/profiling.md).")
    record_samples: int = Field(1, ge=0, le=1000, description="perf record (top functions) in the first N "
                                "samples.")
    frequency_hz: int = Field(999, ge=10, le=20000, description="perf record's sampling frequency.")
    top: int = Field(25, ge=1, le=500, description="Functions kept per sample.")


class DuetPrecision(_Frozen):
    """`[duet]` of a mode = "duet" spec: the precision asked of every pair's cost ratio, and the time it
    may take (run/duet/precision.py plans the samples' number and length for it); whether a side may run
    without rules."""

    precision: float | None = Field(None, gt=0, lt=0.5, description="The CI half-width asked of every pair's cost "
                                    "ratio (0.01 = ±1%): a calibration sample per pair, then samples lengthened "
                                    "or added until each pair's CI is within it, or budget_s ends (then "
                                    "`inconclusive` with the samples that would settle it). Unset: the spec's "
                                    "samples as they are.")
    budget_s: float | None = Field(None, gt=0, description="The campaign's wall time at most when precision is "
                                   "asked (unset: 1800 s); the plan printed at the start says whether it suffices.")
    allow_empty: bool = Field(False, description="A ruleset side with no rule files (`rules = { base = [...], "
                              "none = [] }`) runs only with this set: without it such a side is refused, since an "
                              "empty list is more often a mistake than a wish to measure the engine without rules.")

    @model_validator(mode="after")
    def _budget_needs_precision(self) -> DuetPrecision:
        if self.budget_s is not None and self.precision is None:
            raise ValueError("budget_s bounds the samples added to reach `precision`; give precision too "
                             "(e.g. precision = 0.01), or remove budget_s")
        return self


class Spec(_Frozen):
    """An idsbench spec (TOML): the top-level keys and one table per section."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="The campaign's name.")
    description: str = Field("", description="Free text, kept in campaign.json.")
    samples: int = Field(6, ge=1, le=1000, description="Samples per case; 6 is the fewest whose min..max CI of "
                         "the median covers 95%.")
    order: Literal["cases", "interleaved"] | None = Field(
        None, description="The order samples run in: \"cases\" (each case's samples in a row) or \"interleaved\" "
        "(rounds: s0 of every case, then s1 …, the cases of each round in a seeded random order, so a host's "
        "drift falls on every case alike and compare pairs them round by round). Unset: interleaved when more "
        "than one case has more than one sample. The order run is recorded in campaign.json, not in the spec's "
        "dump.")
    mode: Literal["single", "duet"] = Field(
        "single", description="\"duet\": two sensors side by side on one replay (docs/duet.md): at most one side "
        "axis (sensor.engine, rules, config, capture, setup.kinds) has several values — its first is the reference, "
        "side a, and every other value runs against it as side b — or none (an A/A duet); every other axis may "
        "have several values, each combination one cell of the matrix of duets.")
    duet: DuetPrecision = Field(default_factory=DuetPrecision, description="[duet]: the precision asked of every "
                                "pair's ratio and the time it may take (mode = \"duet\").")
    traffic: Traffic = Field(default_factory=Traffic, description="What is replayed.")
    sensor: Sensor = Field(default_factory=Sensor, description="The engine, rules and settings.")
    setup: Setup = Field(default_factory=Setup, description="Isolation and limits.")
    timing: Timing = Field(default_factory=Timing, description="The waits around each replay.")
    hosts: Hosts | None = Field(None, description="Run on sender/sensor host pairs over SSH; unset: this "
                                "machine (namespaces).")
    wire: Wire = Field(default_factory=Wire, description="The link between sender and sensor.")
    search: Search = Field(default_factory=Search, description="`idsbench search` only.")
    profile: Profile = Field(default_factory=Profile, description="Profiling of the sensor in each sample.")
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
        duet = data.get("duet")
        if isinstance(duet, dict):  # [duet] keys at their defaults are left out (dumps of older specs unchanged)
            if duet.get("allow_empty") is False:
                duet.pop("allow_empty")
            if duet == {"precision": None, "budget_s": None}:
                data.pop("duet")
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
        return resolve_ref(self.base_dir, ref)


def resolve_ref(base_dir: Path, ref: str) -> Path:
    """A file reference of a spec whose file is in `base_dir` (absolute, `~` or relative to it)."""
    path = Path(ref).expanduser()
    return path if path.is_absolute() else (base_dir / path)
