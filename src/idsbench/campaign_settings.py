"""What a campaign runs with beside its cases: the spec's campaign-wide settings, resolved once, typed
and frozen.

The spec is read twice, both at the start: `plan.plan(spec)` makes the cases (every axis value a case
carries) and `campaign_settings(spec)` this object (everything else a stage needs: the setups' and
the wire's options, the sensor's timeouts and rule sets, the timing, the search and profile goals).
Every stage after them — preflight's checks, the runner, a duet, the search, a `[hosts]` side — reads
cases and `CampaignSettings`, never the spec; campaign.json stores the spec as written.

Above the spec only (it imports spec's model): stages of every layer can take it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from idsbench.spec.model import Impairment, Profile, Scalar, Search, Spec, Timing, engine_overrides, resolve_ref

MARKER_RULES = "builtin:markers"  # the marker trace's own rules: each sample counts its marker alerts


@dataclass(frozen=True)
class SetupSettings:
    """What every setup of the campaign is made with beyond the case's own axes (`[setup]`)."""

    cpuset: tuple[int, ...] | None  # the sensors' CPUs (None: every CPU but the sender's)
    runtime: str                    # container setups: "auto" | "podman" | "docker"
    swappiness: int | None
    vcpus: int | None               # vm: guest vCPUs
    accel: str                      # vm: "auto" | "kvm" | "tcg"
    vfio_device: str | None         # vm-vfio: a PCI function …
    sriov_pf: str | None            # … or an SR-IOV PF to make a VF of
    sriov_mac: str
    sriov_vlan: int | None
    hugepages: bool
    boot_timeout_s: float


@dataclass(frozen=True)
class WireSettings:
    """The wire between sender and sensor (`[wire]`)."""

    impair: Impairment              # netem on the sender's end
    sender_interface: str | None    # a NIC wire's sender port (None: the veth pair)
    sensor_interface: str | None    # its sensor port: wire.sensor_interface, else setup.sriov_pf

    @property
    def impaired(self) -> bool:
        return self.impair.active


@dataclass(frozen=True)
class SensorSettings:
    """The sensor's campaign-wide settings (`[sensor]` without its axes)."""

    rules: tuple[str, ...]          # every rule reference of the campaign (sensor.rules)
    rulesets: Mapping[str, tuple[str, ...]]  # every ruleset some case runs with: name -> rule references
    stats_interval_s: int
    ready_timeout_s: float
    capture_options: Mapping[str, Scalar | Mapping[str, Scalar]]  # per capture method (idsbench.capture)
    engine_set: Mapping[str, Scalar | Mapping[str, Scalar]]       # sensor.set: plain keys and engine tables
    ground_truth: bool              # alerts per signature offline, for the recall of every sample

    def overrides(self, engine: str) -> dict[str, str]:
        """`engine`'s settings as strings: the plain keys of sensor.set, then its own table."""
        return engine_overrides(self.engine_set, engine)

    @property
    def counts_markers(self) -> bool:
        """The marker rules are loaded: a sample counts the marker alerts its trace should raise."""
        return MARKER_RULES in self.rules


@dataclass(frozen=True)
class CampaignSettings:
    name: str
    samples: int                    # per case
    order: str | None               # the order the spec asks for (None: run/order.py decides)
    base_dir: Path                  # the spec file's directory: its file references are relative to it
    setup: SetupSettings
    wire: WireSettings
    sensor: SensorSettings
    timing: Timing
    search: Search
    profile: Profile

    def resolve_path(self, ref: str) -> Path:
        """A file reference of the spec (rules, overlays, traces) as a path on this host."""
        return resolve_ref(self.base_dir, ref)


def campaign_settings(spec: Spec) -> CampaignSettings:
    s = spec.setup
    return CampaignSettings(
        name=spec.name, samples=spec.samples, order=spec.order, base_dir=spec.base_dir,
        setup=SetupSettings(
            cpuset=tuple(s.cpuset) if s.cpuset else None, runtime=s.runtime, swappiness=s.swappiness,
            vcpus=s.vcpus, accel=s.accel, vfio_device=s.vfio_device, sriov_pf=s.sriov_pf, sriov_mac=s.sriov_mac,
            sriov_vlan=s.sriov_vlan, hugepages=s.hugepages, boot_timeout_s=s.boot_timeout_s),
        wire=WireSettings(impair=spec.wire.impair, sender_interface=spec.wire.sender_interface,
                          sensor_interface=spec.wire.sensor_interface or s.sriov_pf),
        sensor=SensorSettings(
            rules=tuple(spec.sensor.rules),
            rulesets=MappingProxyType({name: tuple(refs) for name, refs in spec.rulesets_used().items()}),
            stats_interval_s=spec.sensor.stats_interval_s, ready_timeout_s=spec.sensor.ready_timeout_s,
            capture_options=MappingProxyType(dict(spec.sensor.capture_options)),
            engine_set=MappingProxyType(dict(spec.sensor.set)), ground_truth=spec.sensor.ground_truth),
        timing=spec.timing, search=spec.search, profile=spec.profile,
    )
