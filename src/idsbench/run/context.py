"""What every sample of a campaign shares: the spec, the resolved inputs, the sensor adapter."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from idsbench.monitor import Sampler, Source, standard_sources
from idsbench.monitor.sensor import CgroupStats
from idsbench.plan import Case
from idsbench.sensors.suricata import Suricata
from idsbench.spec import Spec
from idsbench.traffic.rewrite import distinct_copy
from idsbench.store.layout import CampaignDir
from idsbench.wire.netns import WireEnds


def default_cache_dir() -> Path:
    return Path(os.environ.get("IDSBENCH_CACHE", Path.home() / ".cache" / "idsbench"))


@dataclass(frozen=True)
class TraceEntry:
    """A resolved trace: where it is and what is in it (from traffic.pcap.read_info)."""

    ref: str
    path: Path
    sha256: str
    packets: int
    bytes: int
    duration_s: float
    max_frame: int
    per_second: tuple[dict, ...] = ()
    markers: int | None = None  # marker alerts one copy should raise (synthesized traces only)

    def summary(self) -> dict:
        return {"ref": self.ref, "path": str(self.path), "sha256": self.sha256,
                "packets": self.packets, "bytes": self.bytes, "duration_s": self.duration_s,
                "max_frame": self.max_frame, "markers": self.markers,
                "per_second": list(self.per_second)}


@dataclass
class CampaignContext:
    spec: Spec
    layout: CampaignDir
    state_dir: Path
    cache_dir: Path
    sensor: Suricata
    sensor_version: str
    rules: list[Path]
    overrides: dict[str, str]
    traces: dict[str, TraceEntry] = field(default_factory=dict)
    name_prefix: str = "ib"

    def replay_paths(self, case: Case) -> list[Path]:
        """The capture each replayer sends: its own rewritten copy (distinct flows), or the same."""
        original = self.traces[case.trace].path
        if case.flows == "identical" or case.replayers == 1:
            return [original] * case.replayers
        return [distinct_copy(original, i, self.cache_dir) for i in range(case.replayers)]

    def make_sampler(self, out_csv: Path, wire: WireEnds, stats: CgroupStats,
                     extra: list[Source]) -> Sampler:
        """Host, sensor, both wire ends and the setup's own sources, at the stats interval."""
        netdevs = [("sender", wire.sender_holder_pid, wire.sender_if),
                   ("sensor", wire.sensor_holder_pid, wire.sensor_if)]
        return Sampler(out_csv, float(self.spec.sensor.stats_interval_s),
                       standard_sources(stats, netdevs) + list(extra))
