"""The host probe: every fact about a host that can change a benchmark result (frozen, versioned).

Absent facts are None (an interface ethtool does not answer for, a file the kernel lacks): never
guessed. `HostProbe.model_dump(mode="json")` is the `idsbench probe --json` contract object.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA = 1


class _Frozen(BaseModel):
    # Unknown keys are ignored so a newer probe file still loads (and diffs) in an older idsbench.
    model_config = ConfigDict(frozen=True, extra="ignore")


class LogicalCpu(_Frozen):
    cpu: int
    socket: int | None = None
    core: int | None = None
    node: int | None = None
    siblings: list[int] = Field(default_factory=list)  # hyperthreads sharing the core (incl. itself)


class CpuInfo(_Frozen):
    model: str | None = None
    vendor: str | None = None
    count: int  # online logical CPUs
    flags: list[str] = Field(default_factory=list)
    sockets: int | None = None
    cores_per_socket: int | None = None
    threads_per_core: int | None = None
    online: list[int] = Field(default_factory=list)
    topology: list[LogicalCpu] = Field(default_factory=list)


class NumaNode(_Frozen):
    id: int
    cpus: list[int]
    memory_bytes: int | None = None


class BootParams(_Frozen):
    """Tuning parameters of the kernel command line (the raw value; None = not given)."""

    isolcpus: str | None = None
    nohz_full: str | None = None
    rcu_nocbs: str | None = None
    intel_iommu: str | None = None
    iommu: str | None = None
    processor_max_cstate: str | None = None
    intel_idle_max_cstate: str | None = None
    mitigations: str | None = None
    default_hugepagesz: str | None = None
    hugepages: str | None = None


class CpuFreq(_Frozen):
    driver: str | None = None
    governor: str | None = None  # the one governor of every CPU, or "mixed: a,b"
    min_khz: int | None = None
    max_khz: int | None = None
    cur_khz: int | None = None  # volatile: ignored by diff
    cpuidle_driver: str | None = None
    cpuidle_governor: str | None = None


class Thp(_Frozen):
    enabled: str | None = None
    defrag: str | None = None


class TimerCosts(_Frozen):
    """ns per call, median over rounds (ibtimer); None when not measured (see `error`)."""

    cpuid_rdtsc_ns: float | None = None   # upstream Suricata's profiling clock read
    lfence_rdtsc_ns: float | None = None  # idsbench's Suricata builds' (scripts/patches)
    rdtsc_ns: float | None = None
    rdtscp_ns: float | None = None
    clock_gettime_ns: float | None = None
    rounds: int = 0
    cpuid_hypervisor_vendor: str | None = None
    error: str | None = None


class TscRate(_Frozen):
    """The time-stamp counter's rate (ibtsc: rdtsc against CLOCK_MONOTONIC_RAW, median of a few rounds):
    what turns Suricata's rule-profiling ticks into seconds. None off x86 or when not measured (`error`)."""

    hz: float | None = None
    rounds: int = 0
    round_ms: int = 0
    spread_ppm: float | None = None   # (max - min) / median over the rounds
    error: str | None = None


class SensorBuild(_Frozen):
    """A sensor build found in idsbench's cache: a Suricata source build (`suricata@8.0.6[+…]`,
    `<cache>/suricata/*/.built`) or the Snort 3 build (`make snort`, `<cache>/snort/*/.built`).
    None: the build's record does not say."""

    engine: str                       # "suricata" or "snort"
    version: str | None = None
    prefix: str
    current: bool = False             # Snort: the build `current` points at (the one runs use)
    build_id: str | None = None       # the digest in the cache key (sources + flags + recipe)
    configure_flags: str | None = None
    source: str | None = None
    source_sha256: str | None = None
    options: str | None = None        # Suricata's build options (profiling, nohyperscan)
    profiling_rules: bool | None = None
    hyperscan: bool | None = None
    daq_version: str | None = None    # Snort's libdaq
    build_s: int | None = None
    completed_from: str | None = None  # where keys the stamp lacks came from (an older Snort stamp)


class Channels(_Frozen):
    rx: int | None = None
    tx: int | None = None
    other: int | None = None
    combined: int | None = None
    rx_max: int | None = None
    tx_max: int | None = None
    other_max: int | None = None
    combined_max: int | None = None


class Rings(_Frozen):
    rx: int | None = None
    tx: int | None = None
    rx_max: int | None = None
    tx_max: int | None = None


class Rss(_Frozen):
    hash_key: str | None = None  # "6d:5a:..." as ethtool prints it
    indirection: list[int] | None = None
    hash_function: str | None = None
    symmetric: bool | None = None  # Toeplitz with a key of period 2 bytes (e.g. 6D:5A repeated)


class Coalesce(_Frozen):
    adaptive_rx: bool | None = None
    adaptive_tx: bool | None = None
    rx_usecs: int | None = None
    rx_frames: int | None = None
    tx_usecs: int | None = None
    tx_frames: int | None = None


class Pause(_Frozen):
    autoneg: bool | None = None
    rx: bool | None = None
    tx: bool | None = None


class Irq(_Frozen):
    number: int  # volatile across boots: ignored by diff
    name: str
    affinity: list[int] | None = None
    queue: bool = False  # a per-queue vector (not the device's config/misc vector)


class PassthroughProbe(_Frozen):
    """A NIC's PCI function as VFIO sees it (probe/iommu.py)."""

    iommu_group: int | None = None
    group_size: int | None = None
    vfio_viable: bool | None = None      # every other member of its group unbound, on vfio-pci, or a bridge
    sriov_totalvfs: int | None = None    # None: not SR-IOV capable
    sriov_numvfs: int | None = None
    physfn: str | None = None            # a VF: its PF


class IommuProbe(_Frozen):
    """The host's IOMMU and VFIO (probe/iommu.py)."""

    groups: int = 0
    dmar_table: bool = False
    ivrs_table: bool = False
    cmdline: dict[str, str] = Field(default_factory=dict)
    vfio_pci_loaded: bool = False
    vfio_pci_available: bool = False
    hugepages_total: int | None = None
    hugepages_free: int | None = None
    hugepage_bytes: int | None = None


class InterfaceProbe(_Frozen):
    name: str
    netns: str | None = None
    driver: str | None = None
    driver_version: str | None = None
    firmware: str | None = None
    bus_info: str | None = None
    numa_node: int | None = None
    speed_mbps: int | None = None
    mtu: int | None = None
    operstate: str | None = None
    queues: int | None = None  # RX queues in use (channels rx + combined, else sysfs rx-* queues)
    offloads: dict[str, bool] | None = None  # ethtool -k: feature -> active
    offloads_fixed: list[str] = Field(default_factory=list)  # features the driver cannot change
    rings: Rings | None = None
    channels: Channels | None = None
    rss: Rss | None = None
    rx_flow_hash: dict[str, str] | None = None  # flow type -> ethtool letters ("sdfn"), "" = none
    coalesce: Coalesce | None = None
    pause: Pause | None = None
    irqs: list[Irq] = Field(default_factory=list)
    passthrough: PassthroughProbe | None = None  # a PCI NIC's IOMMU group and SR-IOV


class SensorProbe(_Frozen):
    engine: str = "suricata"
    binary: str = "suricata"
    version: str | None = None
    profiling: bool = False
    profiling_locks: bool | None = None
    profiling_rules: bool | None = None
    capture_methods: list[str] = Field(default_factory=list)
    hyperscan: bool | None = None
    features: list[str] = Field(default_factory=list)
    simd: list[str] = Field(default_factory=list)


class NoiseProbe(_Frozen):
    """How quiet the host was when a campaign started (probe/noise.py)."""

    steal_pct: float = 0.0                 # steal time over the probe, % of all CPU time
    loop_cv: float | None = None           # CV of a calibrated CPU-bound loop on the sensor's CPUs, pieces of piece_s
    piece_s: float | None = None           # the pieces' length: the campaign's trial length (within 1-2 s)
    loop_cv_10ms: float | None = None      # the same loop's CV over 10-ms pieces (context; never a label)
    freq_changes: int | None = None        # CPU frequency changes seen (None: cpufreq not visible)
    cpus: tuple[int, ...] = ()
    other_load_pct: float | None = None    # busy CPU time of other processes over the probe, % of all CPUs

    @model_validator(mode="before")
    @classmethod
    def _older(cls, data: Any) -> Any:
        """A probe.json written before the trial scale (no `piece_s`): its `loop_cv` was over 10-ms pieces."""
        if isinstance(data, dict) and "piece_s" not in data and "loop_cv_10ms" not in data and "loop_cv" in data:
            data = {**data, "loop_cv_10ms": data["loop_cv"], "loop_cv": None}
        return data


class HostProbe(_Frozen):
    schema_: int = Field(SCHEMA, alias="schema")
    created_unix: float = 0.0
    hostname: str | None = None
    cpu: CpuInfo
    numa_nodes: list[NumaNode] = Field(default_factory=list)
    memory_bytes: int | None = None
    hypervisor: str | None = None
    hypervisor_evidence: list[str] = Field(default_factory=list)
    kernel: str | None = None
    os: str | None = None
    cmdline: str | None = None
    boot: BootParams = Field(default_factory=BootParams)
    cpufreq: CpuFreq = Field(default_factory=CpuFreq)
    clocksource: str | None = None
    clocksources_available: list[str] = Field(default_factory=list)
    thp: Thp = Field(default_factory=Thp)
    cgroup_version: int | None = None
    cgroup_controllers: list[str] = Field(default_factory=list)
    irqbalance: bool | None = None
    timers: TimerCosts = Field(default_factory=TimerCosts)
    tsc: TscRate | None = None          # None: a probe written before the rate was measured
    interfaces: dict[str, InterfaceProbe] = Field(default_factory=dict)
    sensor: SensorProbe | None = None
    builds: list[SensorBuild] = Field(default_factory=list)  # sensor builds in idsbench's cache
    notes: list[str] = Field(default_factory=list)  # what could not be read, and why
    noise: NoiseProbe | None = None     # a campaign's quietness probe (probe/noise.py)
    iommu: IommuProbe | None = None     # IOMMU groups, vfio-pci, hugepages (probe/iommu.py)

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)

