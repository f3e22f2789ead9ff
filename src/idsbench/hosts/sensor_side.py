"""The sensor host's part of a campaign: `run.sample.SampleRun` itself, with the parts that differ
on a real host injected through `SampleDeps`:

- wire: the host's capture NIC (nothing is created; its MTU must fit the trace);
- sender: an upcall — the controller runs the replayers on the paired sender host and answers
  with their record, its times already on this host's clock;
- wire snapshot: the sender NIC's tx counters (an upcall) with this host's rx and softnet counters;
- monitor: host, sensor cgroup and the capture NIC, as locally; no sender cgroup here (the
  replayers' own cgroup is on the sender host).

So setup, sensor, monitor, drain, stop, counters, the verdict and the sample summary are the same code
as a local sample; the controller copies the sample directory back and adds the pair.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from idsbench.campaign_settings import campaign_settings
from idsbench.errors import EnvironmentMissing, IdsbenchError, SpecError
from idsbench.hosts.prepare import check_hosts_spec
from idsbench.hosts.protocol import (
    AgentChannel,
    AgentEnv,
    Empty,
    EngineInfo,
    NicArgs,
    NicCounters,
    RemoteCampaign,
    ReplayArgs,
    Replayed,
    Request,
    SampleArgs,
    SampleDone,
    SensorOpened,
    list_files,
)
from idsbench.monitor import Sampler, Source, standard_sources
from idsbench.monitor.netdev import IfCounters
from idsbench.monitor.sensor import CgroupStats
from idsbench.plan import Case, axis_values, plan
from idsbench.proc import Supervisor
from idsbench.run.context import CampaignContext
from idsbench.run.drain import WireSnapshot, iface_counters, softnet_counts
from idsbench.run.facts import case_options, engine_options
from idsbench.run.replay import ReplayOutcome, ReplayPlan
from idsbench.run.sample import SampleRun
from idsbench.run.session import Monitor, SampleDeps, SenderGroup
from idsbench.sensors import registry
from idsbench.sensors.base import SensorEngine, SensorOptions
from idsbench.spec import DEFAULT_CONFIG
from idsbench.store.layout import CampaignDir
from idsbench.wire.netns import ETH_HEADER, WireEnds


def nic_counters(iface: str) -> IfCounters | None:
    return iface_counters(os.getpid(), iface)


class NicWire:
    """The wire as the sensor host sees it: its capture NIC, as it is."""

    def __init__(self, iface: str, peer: str, needed_mtu: int):
        self.iface, self.peer, self.needed_mtu = iface, peer, needed_mtu

    def up(self) -> WireEnds:
        base = Path("/sys/class/net") / self.iface
        if not base.exists():
            raise EnvironmentMissing(f"the capture interface {self.iface} does not exist on this host.",
                                     fix="set idsbench_capture_interface to an interface of the sensor host.")
        mtu = int((base / "mtu").read_text())
        if mtu < self.needed_mtu:
            raise EnvironmentMissing(f"the capture interface {self.iface} has MTU {mtu}; the trace's largest frame "
                                     f"needs {self.needed_mtu}.",
                                     fix=f"raise the MTU of both NICs of the pair to {self.needed_mtu} or more.")
        return WireEnds(sender_ns="", sender_if=self.peer, sensor_ns="", sensor_if=self.iface, mtu=mtu,
                        sender_holder_pid=0, sensor_holder_pid=os.getpid())


class RemoteSender:
    """The sample's replay step, run by the controller on the paired sender host."""

    name = "remote"

    def __init__(self, channel: AgentChannel, index: int):
        self.channel, self.index = channel, index

    def replay(self, sup: Supervisor, plan: ReplayPlan) -> ReplayOutcome:
        got = self.channel.upcall("replay", ReplayArgs(case_id=plan.case.case_id, index=self.index,
                                                       timeout_s=plan.timeout_s), Replayed)
        return ReplayOutcome(got.record, got.facts)


class RemoteSensorContext(CampaignContext):
    """The campaign as the sensor host holds it: the traces' packets are on the sender host."""

    def replay_paths(self, case: Case) -> list[Path]:
        return [Path(self.traces[case.trace].path)] * case.replayers


class SensorSide:
    def __init__(self, agent: AgentEnv, rc: RemoteCampaign):
        if not agent.iface:
            raise EnvironmentMissing(f"sensor host {agent.name} has no capture interface.",
                                     fix="set idsbench_capture_interface in the inventory.")
        self.agent, self.iface, self.peer = agent, agent.iface, rc.peer_interface or "peer"
        spec = rc.load_spec()
        check_hosts_spec(spec)  # the controller checked it too: what this side cannot run is a SpecError
        cases = plan(spec)
        self.cases = {c.case_id: c for c in cases}
        settings = campaign_settings(spec)
        # the spec's rule references -> the copies the controller uploaded (RemoteCampaign.rules, in order)
        uploaded = dict(zip(settings.sensor.rules, rc.rules, strict=False))
        engines: dict[str, SensorEngine] = {}
        options: dict[str, SensorOptions] = {}
        info: dict[str, EngineInfo] = {}
        for name in axis_values(cases, "engine"):
            engine = registry.engine(name)
            engine.require()
            engines[name] = engine
            mine = engine_options(settings.sensor, name, engine, lambda ref: str(agent.path(uploaded.get(ref, ref))))
            options.update(mine)
            info[name] = EngineInfo.model_validate({"version": engine.version(), "build_info": engine.build_info(),
                                                    "rules": [str(p) for o in mine.values() for p in o.rules]})
        overlays = [c for c in axis_values(cases, "config") if c != DEFAULT_CONFIG]
        traces = dict(rc.traces)
        self.ctx = RemoteSensorContext(
            settings=settings, layout=CampaignDir(agent.path(f"runs/{rc.key}")), state_dir=agent.state_dir,
            cache_dir=agent.cache_dir, engines=engines, engine_versions={n: i.version for n, i in info.items()},
            options=options, traces=traces, name_prefix=rc.name_prefix,
            overlays={overlays[0]: agent.path(rc.config_overlay)} if overlays and rc.config_overlay else {},
            sender_here=False)  # the replayers run on the paired sender host: the sensor has every CPU
        self.opened = SensorOpened(engines=info)

    def dispatch(self, request: Request, channel: AgentChannel) -> Empty | SampleDone:
        if request.op == "config_test":
            for case in {(c.engine, c.rules, c.config): c for c in self.cases.values()}.values():
                with tempfile.TemporaryDirectory(prefix="idsbench-check-", dir=self.agent.workdir) as tmp:
                    self.ctx.engine(case).config_test(case_options(self.ctx, case), Path(tmp))
            return Empty()
        if request.op == "sample":
            args = request.args_as(SampleArgs)
            return self.sample(args.case_id, args.index, channel)
        raise IdsbenchError(f"a sensor host does not do {request.op!r}")

    def sample(self, case_id: str, index: int, channel: AgentChannel) -> SampleDone:
        case = self.cases[case_id]
        # An untagged frame of the trace's largest size must fit the NIC (a real NIC is not resized).
        needed = self.ctx.traces[case.trace].max_frame - ETH_HEADER
        iface = self.iface

        def make_wire(sup: Supervisor, prefix: str, mtu: int, sensor_ns: str | None) -> NicWire:
            return NicWire(iface, self.peer, needed)

        def make_monitor(out_csv: Path, interval_s: float, wire: WireEnds, stats: CgroupStats,
                         extra: Sequence[Source]) -> Monitor:
            netdevs = [("sensor", wire.sensor_holder_pid, wire.sensor_if)]
            return Sampler(out_csv, interval_s, standard_sources(stats, netdevs) + list(extra))

        def snapshot(wire: WireEnds) -> WireSnapshot:
            sender = channel.upcall("nic", NicArgs(), NicCounters).counters
            return WireSnapshot(sender, nic_counters(wire.sensor_if), softnet_counts())

        def no_impairment(*args: object, **kwargs: object) -> None:
            raise SpecError("wire impairment is emulated on this machine's veth wire only, not on hosts.",
                            fix="remove [wire.impair] from a spec with [hosts].")

        deps = SampleDeps(make_wire=make_wire, sender=RemoteSender(channel, index),
                          make_monitor=make_monitor, snapshot=snapshot, impair=no_impairment,
                          make_sender_group=lambda _stack, _name: SenderGroup((), None))  # replayers are remote
        outcome = SampleRun(self.ctx, case, index, deps, phase=channel.phase).run()
        sample_dir = self.ctx.layout.sample_dir(case_id, index)
        return SampleDone(summary=outcome.summary, warnings=list(outcome.warnings),
                          dir=sample_dir.relative_to(self.agent.workdir).as_posix(), files=list_files(sample_dir))

    def close(self) -> None:
        return None
