"""The sender host's part of a campaign: the replayers of each sample, out of its transmit NIC.

`open_campaign` makes the per-replayer copies of the traces (distinct flows) before any sample, so
a replay starts at once. `replay` runs `run.replay`'s sender for the case (`traffic.sender`: the
native replayer or tcpreplay, each replayer with its own report file) in the replayers' own cgroup,
with a light monitor of this host (CPU, memory, softnet, the NIC, the replayers' cgroup) beside it
as `sender-monitor.csv`, and answers with the replay record (this host's clock: the controller
moves it onto the sensor host's clock) and the files to fetch.
"""

from __future__ import annotations

import os
import shutil

from idsbench import native
from idsbench.campaign_settings import campaign_settings
from idsbench.errors import EnvironmentMissing, IdsbenchError
from idsbench.hosts.protocol import AgentChannel, AgentEnv, RemoteCampaign, ReplayArgs, ReplayDone, Request, SenderOpened, list_files
from idsbench.monitor import HostCpu, HostMemory, NetDevSource, Sampler, Softnet, Source
from idsbench.plan import plan
from idsbench.proc import Supervisor
from idsbench.run.context import CampaignContext
from idsbench.run.replay import ReplayPlan, TrafficSender
from idsbench.run.session import real_sender_group
from idsbench.store.layout import SENDER_MONITOR_FILE, CampaignDir
from idsbench.teardown import TeardownStack
from idsbench.traffic import native_replay


class SenderSide:
    def __init__(self, agent: AgentEnv, rc: RemoteCampaign):
        if not agent.iface or not os.path.exists(f"/sys/class/net/{agent.iface}"):
            raise EnvironmentMissing(f"the transmit interface {agent.iface!r} does not exist on sender host {agent.name}.",
                                     fix="set idsbench_transmit_interface to an interface of the sender host.")
        self.agent, self.iface = agent, agent.iface
        spec = rc.load_spec()
        self.cases = {c.case_id: c for c in plan(spec)}
        self.settings = campaign_settings(spec)
        traces = {ref: record.model_copy(update={"path": str(agent.path(record.path))})
                  for ref, record in rc.traces.items()}
        self.run_dir = agent.path(f"runs/{rc.key}")
        self.ctx = CampaignContext(settings=self.settings, layout=CampaignDir(self.run_dir), state_dir=agent.state_dir,
                                   cache_dir=agent.cache_dir, engines={}, engine_versions={}, options={},
                                   traces=traces, name_prefix=rc.name_prefix)
        copies = 0
        for case_id in rc.cases:  # distinct-flow copies now, not while a sensor waits
            copies += len(set(self.ctx.replay_paths(self.cases[case_id])))
        if any(self.cases[c].sender == native_replay.SENDER_NAME for c in rc.cases):
            native.program(native_replay.PROGRAM)  # built by provisioning; else now (EnvironmentMissing without cc)
        self.opened = SenderOpened(copies=copies)

    def dispatch(self, request: Request, channel: AgentChannel) -> ReplayDone:
        if request.op == "replay":
            args = request.args_as(ReplayArgs)
            return self.replay(args.case_id, args.index, args.timeout_s)
        raise IdsbenchError(f"a sender host does not do {request.op!r}")

    def replay(self, case_id: str, index: int, timeout_s: float) -> ReplayDone:
        case = self.cases[case_id]
        out_dir = self.run_dir / "sender" / case_id / f"s{index}"
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        with TeardownStack(state_dir=self.agent.state_dir) as stack:
            # the replayers in their own cgroup, as locally (their CPU measured apart, SCHED_FIFO allowed)
            group = real_sender_group(stack, f"{stack.run_id}-s{index}-sender")
            replay_plan = ReplayPlan(case, self.ctx.traces[case.trace], tuple(self.ctx.replay_paths(case)), self.iface,
                                     "", tuple(sorted(os.sched_getaffinity(0))), out_dir, timeout_s,
                                     tuple(group.procs_files))
            sources: list[Source] = [HostCpu(), HostMemory(), Softnet(), NetDevSource("sender", os.getpid(), self.iface)]
            monitor = Sampler(out_dir / SENDER_MONITOR_FILE, float(self.settings.sensor.stats_interval_s),
                              sources + ([group.source] if group.source else []))
            monitor.start()
            try:
                monitor.sample_now()
                outcome = TrafficSender().replay(Supervisor(stack), replay_plan)
                monitor.sample_now()
            finally:
                monitor.stop()
        return ReplayDone(record=outcome.record, facts=tuple(outcome.facts),
                          dir=out_dir.relative_to(self.agent.workdir).as_posix(), files=list_files(out_dir))

    def close(self) -> None:
        return None
