"""Getting a host ready for a campaign: its agent's facts checked, the inputs of its role copied to
it (sha256 checked there), the campaign opened on it, its probe stored in the campaign."""

from __future__ import annotations

import threading
from pathlib import Path

from idsbench.errors import EnvironmentMissing, InputError, SpecError
from idsbench.hosts.assign import hardware
from idsbench.hosts.inventory import HostEntry, Pair
from idsbench.hosts.link import HostLink
from idsbench.hosts.protocol import (
    Empty,
    EngineInfo,
    Hello,
    PathArgs,
    ProbeResult,
    RemoteCampaign,
    SenderOpened,
    SensorOpened,
    Stat,
)
from idsbench.plan import Case
from idsbench.sensors.rulesets import rule_files
from idsbench.spec import Spec
from idsbench.store.environment import sha256_file
from idsbench.store.layout import CampaignDir
from idsbench.store.reader import host_probe_file, read_host_probe
from idsbench.store.schema import TraceRecord
from idsbench.store.writers import write_host_probe

PROVISION_FIX = "install it with `idsbench hosts provision --inventory FILE` (or SPEC), then retry."
SUPPORTED_SETUPS = ("baremetal",)


def check_hosts_spec(spec: Spec) -> None:
    """SpecError naming the first axis or section of `spec` that a campaign on hosts cannot run, and the
    fix — called before anything connects or starts (and again by the sensor host's agent)."""
    unsupported = [k for k in spec.setup.kinds if k not in SUPPORTED_SETUPS]
    if unsupported:
        raise SpecError(f"setup kind(s) {', '.join(unsupported)} do not run on remote hosts yet.",
                        fix=f"use [setup] kinds = {list(SUPPORTED_SETUPS)} with [hosts], or run them on this machine.")
    if spec.wire.impair.active:
        raise SpecError("[wire.impair] emulates loss on this machine's veth wire; on hosts the wire is real.",
                        fix="remove [wire.impair] from a spec with [hosts] (a lossy mirror shows up as wire loss).")
    overlays = spec.sensor.overlays()
    if len(overlays) > 1:
        raise SpecError(f"the sensor.config axis: a campaign on hosts runs one config overlay, this spec names "
                        f"{len(overlays)}.", fix="run one campaign per overlay and `idsbench compare` them.")
    if spec.sensor.rulesets:
        raise SpecError(f"the ruleset axis (sensor.rules with {len(spec.sensor.rulesets)} rulesets: "
                        f"{', '.join(spec.sensor.rulesets)}) does not run on hosts yet.",
                        fix="run one campaign per ruleset (sensor.rules = [\"a.rules\", …]) and `idsbench compare` "
                            "them, or run the ruleset axis on this machine (without [hosts]).")
    own = [t.path for t in spec.traffic.traces if not isinstance(t, str)]
    if own:  # the sensor hosts get sensor.rules only (CampaignUploads)
        raise SpecError(f"traffic.traces: {', '.join(own)} name their own rules; on hosts every trace runs with "
                        "sensor.rules.", fix="give those rules as sensor.rules (one campaign per trace), or run the "
                                             "campaign on this machine (without [hosts]).")


def check_hello(host: HostEntry, hello: Hello, local_digest: str) -> None:
    """EnvironmentMissing listing everything the host lacks for its role (nothing is run)."""
    problems = []
    if hello.digest != local_digest:
        problems.append(f"it runs idsbench build {hello.digest} (version {hello.version}), the controller "
                        f"{local_digest}: results must come from the same code")
    if hello.uid != 0:
        problems.append(f"the agent runs as uid {hello.uid}, not root (namespaces, cgroups, AF_PACKET need root)")
    if host.role == "sensor" and not hello.suricata:
        problems.append("Suricata is not installed")
    if host.role == "sender" and not hello.tcpreplay:
        problems.append("tcpreplay is not installed")
    if host.interface and not hello.interface.exists:
        problems.append(f"its interface {host.interface} does not exist")
    if problems:
        fix = PROVISION_FIX
        if hello.uid != 0:
            fix = "log in as root, or set `ansible_become: true` (sudo) for it; " + fix
        raise EnvironmentMissing(f"host {host.name} ({host.role}) is not ready: " + "; ".join(problems) + ".", fix=fix)


class CampaignUploads:
    """What every host of a campaign receives; shared by the pairs' threads."""

    def __init__(self, spec: Spec, traces: dict[str, TraceRecord], cases: list[Case], *, key: str, name_prefix: str):
        self.spec, self.traces, self.key, self.name_prefix = spec, traces, key, name_prefix
        self.trace_of = {c.case_id: c.trace for c in cases}
        self.rule_refs: list[str] = []
        self.rule_files: list[tuple[Path, str]] = []
        self.rule_inputs: list[dict[str, str]] = []
        for i, ref in enumerate(spec.sensor.rules):
            if ref.startswith("builtin:"):
                self.rule_refs.append(ref)
                continue
            path = spec.resolve_path(ref)
            remote = f"runs/{key}/rules/{i}"
            files = rule_files(str(path))  # a file, or a directory's *.rules
            self.rule_refs.append(remote if path.is_dir() else f"{remote}/{path.name}")
            self.rule_files += [(f, f"{remote}/{f.name}") for f in files]
            self.rule_inputs += [{"path": str(f), "sha256": sha256_file(f)} for f in files]
        self.overlay: tuple[Path, str] | None = None
        check_hosts_spec(spec)
        overlays = spec.sensor.overlays()
        if overlays:
            local = spec.resolve_path(overlays[0])
            if not local.is_file():
                raise InputError(f"sensor.config {local} does not exist.", fix="give the path of a config overlay file.")
            self.overlay = (local, f"runs/{key}/overlay/{local.name}")
        self.engines_seen: dict[str, dict[str, EngineInfo]] = {}  # sensor host -> its engines
        self._lock = threading.Lock()

    def remote_campaign(self, traces: dict[str, TraceRecord], pair: Pair, host: HostEntry,
                        case_ids: tuple[str, ...]) -> RemoteCampaign:
        peer = pair.sender if host.role == "sensor" else pair.sensor
        return RemoteCampaign(key=self.key, spec=self.spec.model_dump(mode="json"), traces=traces,
                              rules=tuple(self.rule_refs) if host.role == "sensor" else (),
                              config_overlay=self.overlay[1] if self.overlay and host.role == "sensor" else None,
                              name_prefix=self.name_prefix, cases=case_ids, peer_interface=peer.interface)

    def open_on(self, link: HostLink, host: HostEntry, pair: Pair, case_ids: tuple[str, ...]) -> None:
        if host.role == "sensor":
            for local, remote in self.rule_files + ([self.overlay] if self.overlay else []):
                link.put(local, remote)
            got = link.call("open_campaign", self.remote_campaign(self.traces, pair, host, case_ids), SensorOpened,
                            timeout=300)
            with self._lock:
                self.engines_seen[host.name] = got.engines
            return
        needed = {self.trace_of[c] for c in case_ids}
        on_host = {}
        for ref in sorted(needed):
            t = self.traces[ref]
            remote = f"traces/{t.sha256}/{Path(t.path).name}"
            stat = link.call("stat", PathArgs(path=remote), Stat)
            if stat.file is None or stat.file.sha256 != t.sha256:
                link.put(Path(t.path), remote)
            on_host[ref] = t.model_copy(update={"path": remote})
        link.call("open_campaign", self.remote_campaign(on_host, pair, host, case_ids), SenderOpened, timeout=1800)


def store_probe(link: HostLink, host: HostEntry, layout: CampaignDir, resume: bool) -> str | None:
    """The host's probe in the campaign (the first probe of the host in this campaign is kept); a
    warning when the host's hardware changed since."""
    probe = link.call("probe", Empty(), ProbeResult, timeout=300).probe
    path = host_probe_file(layout, host.name)
    if path.exists():
        before = read_host_probe(layout, host.name)
        if before is not None and hardware(before) != hardware(probe):
            return f"host {host.name}: hardware changed since the campaign started ({path} kept)"
        return None
    write_host_probe(layout, host.name, probe)
    return None
