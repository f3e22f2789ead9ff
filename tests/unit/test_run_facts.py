"""One builder of per-case run facts (run/facts.py) for the local runner, the search and the `[hosts]`
sensor side: the CPU placement, the allocation in cores (the quota, else the CPUs the sensor is pinned
to — never the host's CPU count), the worker threads, the case's options; and the axes a campaign on
hosts cannot run refused with a SpecError before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.campaign_settings import campaign_settings
from idsbench.errors import SpecError
from idsbench.hosts.prepare import check_hosts_spec
from idsbench.hosts.protocol import RemoteCampaign
from idsbench.hosts.sensor_side import SensorSide
from idsbench.plan import plan
from idsbench.run.context import CampaignContext
from idsbench.run.facts import (
    allocation_cores,
    case_facts,
    case_options,
    engine_options,
    place_cpus,
    worker_threads,
)
from idsbench.run.session import SampleDeps
from idsbench.search.axis import axis_for
from idsbench.search.measure import Measurer
from idsbench.sensors import registry
from idsbench.spec import Spec, spec_from_dict
from idsbench.store.layout import CampaignDir
from idsbench.store.schema import TraceRecord
from tests.unit.test_run_sample import SpecContext

TRACE = TraceRecord(ref="t.pcap", path="/nonexistent/t.pcap", sha256="0" * 64, packets=100, bytes=60_000,
                    duration_s=1.0, max_frame=600)


class FakeEngine:
    name = "suricata"

    def require(self) -> None:
        return None

    def version(self) -> str:
        return "7.0.10"

    def build_info(self) -> dict[str, object]:
        return {"version": "7.0.10"}

    def resolve_rules(self, refs: list[str]) -> list[Path]:
        return [Path(r) for r in refs]

    def host_paths(self) -> tuple[Path, ...]:
        return (Path("/opt/suricata"),)


def test_placement_splits_the_sender_from_the_sensor():
    assert place_cpus([0, 1], None).sender == (0,) and place_cpus([0, 1], None).sensor == (1,)
    assert place_cpus([0, 1, 2, 3], None).sensor == (1, 2, 3)
    one = place_cpus([0], None)
    assert (one.sender, one.sensor, one.pinned, one.sensor_affinity) == ((0,), (0,), False, None)
    chosen = place_cpus([0, 1, 2], [2])
    assert (chosen.sender, chosen.sensor, chosen.sensor_affinity) == ((0, 1), (2,), [2])
    # a [hosts] sensor host: the replayers are on the sender host, the sensor has every CPU
    remote = place_cpus([0, 1], None, sender_here=False)
    assert (remote.sender, remote.sensor, remote.pinned) == ((), (0, 1), True)
    assert place_cpus([0, 1, 2], [2], sender_here=False).sensor == (2,)


def test_the_allocation_is_the_quota_else_the_pinned_cpus():
    assert allocation_cores(None, 1) == 1.0        # a 2-CPU host: the sensor is pinned to one CPU, not two
    assert allocation_cores(None, 3) == 3.0
    assert allocation_cores(0.3, 1) == 0.3
    assert allocation_cores(4.0, 1) == 1.0         # a quota above the pinned CPUs cannot be used


def test_workers_follow_the_allocation():
    assert worker_threads(None, None, 1) == 1
    assert worker_threads(None, 0.3, 1) == 1       # a fraction of a core: one worker, at least
    assert worker_threads(None, 1.0, 3) == 1
    assert worker_threads(None, 1.5, 3) == 2       # the ceiling of a fractional quota
    assert worker_threads(None, 2.5, 2) == 2       # never more than the CPUs it runs on
    assert worker_threads(None, None, 4) == 4
    assert worker_threads(2, None, 1) == 2         # sensor.threads = 2 asks for two
    assert worker_threads("auto", 1.0, 1) is None  # the engine's own choice


def _ctx(tmp_path: Path, **spec: object) -> CampaignContext:
    s = spec_from_dict({"name": "x", "traffic": {"traces": ["t.pcap"], "rate": {"pps": 1000}}, **spec},
                       base_dir=tmp_path)
    engine = FakeEngine()
    options = engine_options(campaign_settings(s).sensor, "suricata", engine,  # type: ignore[arg-type]
                             lambda ref: str(s.resolve_path(ref)))
    overlays = {c: s.resolve_path(c) for c in s.sensor.overlays()}
    return SpecContext(settings=campaign_settings(s), spec=s, layout=CampaignDir(tmp_path / "c"), state_dir=tmp_path, cache_dir=tmp_path,
                           engines={"suricata": engine}, engine_versions={"suricata": "7.0.10"},  # type: ignore[dict-item]
                           options=options, traces={"t.pcap": TRACE}, overlays=overlays)


def test_case_facts_on_a_two_cpu_host(tmp_path: Path):
    ctx = _ctx(tmp_path, sensor={"rules": ["a.rules"], "config": ["default", "tuned.yaml"]},
               setup={"cpus": [None, 0.5]})
    cases = plan(ctx.spec)
    plain = case_facts(ctx, next(c for c in cases if c.cpus is None and c.config == "default"), [0, 1])
    assert (plain.cpus.sender, plain.cpus.sensor, plain.quota, plain.allocation) == ((0,), (1,), None, 1.0)
    assert plain.workers == 1 and plain.options.threads == 1 and plain.options.config_overlay is None
    assert plain.read_only_paths == (tmp_path / "a.rules", Path("/opt/suricata"))
    tuned = case_facts(ctx, next(c for c in cases if c.cpus == 0.5 and c.config == "tuned.yaml"), [0, 1])
    assert (tuned.quota, tuned.allocation, tuned.workers) == (0.5, 0.5, 1)
    assert tuned.options.config_overlay == tmp_path / "tuned.yaml"
    assert tuned.read_only_paths[-1] == tmp_path / "tuned.yaml"
    # the offline read (ground truth) gets the same options without a worker count
    assert case_options(ctx, cases[1]).threads is None


def test_case_facts_of_a_ruleset_and_a_threads_axis(tmp_path: Path):
    ctx = _ctx(tmp_path, sensor={"rules": {"small": ["a.rules"], "big": ["a.rules", "b.rules"]},
                                 "threads": [2, "auto"]})
    by = {(c.rules, c.threads): case_facts(ctx, c, [0, 1, 2, 3]) for c in plan(ctx.spec)}
    assert by[("big", 2)].options.rules == (tmp_path / "a.rules", tmp_path / "b.rules")
    assert by[("small", 2)].options.rules == (tmp_path / "a.rules",)
    assert by[("small", 2)].workers == 2 and by[("small", "auto")].workers is None
    assert by[("small", "auto")].allocation == 3.0


def test_the_search_uses_the_same_allocation(tmp_path: Path):
    ctx = _ctx(tmp_path, search={"axis": "cpus"})
    (case,) = plan(ctx.spec)
    # the cpus axis starts at the CPUs the sensor is pinned to (one of two), not at the host's count
    assert axis_for(ctx, case, [0, 1]).high == 1.0
    assert axis_for(ctx, case, [0, 1, 2, 3]).high == 3.0
    deps = SampleDeps(available_cpus=lambda: [0, 1])
    measurer = Measurer(ctx, case, deps, axis_for(ctx, case, [0, 1]), tmp_path, warm=False)
    assert measurer.allocation(None).cores == 1.0 and not measurer.allocation(None).quota
    assert (measurer.allocation(0.3).cores, measurer.allocation(0.3).quota) == (0.3, True)
    # the tail allowance: 110 ms of capture latency at one core, + a 100-ms quota period under a quota
    assert measurer.allocation(None).tail_allowance_s == pytest.approx(0.11)
    assert measurer.allocation(0.3).tail_allowance_s == pytest.approx(0.3 * 0.21)


# --- [hosts] ----------------------------------------------------------------------------------------
HOSTS = {"host": [{"name": "sen-a", "role": "sensor", "address": "192.0.2.1", "pair": "p", "capture_interface": "eth1"},
                  {"name": "gen-a", "role": "sender", "address": "192.0.2.2", "pair": "p",
                   "transmit_interface": "eth1"}]}


class Agent:
    name, role, iface = "sen-a", "sensor", "eth1"

    def __init__(self, root: Path):
        self.workdir = self.state_dir = self.cache_dir = root

    def path(self, rel: str) -> Path:
        return self.workdir / rel


@pytest.mark.parametrize(("section", "named"), [
    ({"sensor": {"rules": {"a": ["a.rules"], "b": ["b.rules"]}}}, "the ruleset axis"),
    ({"sensor": {"config": ["x.yaml", "y.yaml"]}}, "the sensor.config axis"),
    ({"setup": {"kinds": ["baremetal", "container"]}}, "setup kind"),
    ({"wire": {"impair": {"loss": 0.01}}}, r"\[wire.impair\]"),
])
def test_what_hosts_cannot_run_is_a_spec_error_naming_it(section: dict[str, object], named: str):
    spec = Spec.model_validate({"name": "x", "hosts": HOSTS, **section})
    with pytest.raises(SpecError, match=named) as err:
        check_hosts_spec(spec)
    assert err.value.fix


def test_a_ruleset_axis_on_hosts_is_refused_before_anything_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Before: it passed the controller's checks and the sensor host ended in KeyError('suricata a') at
    run/context.py's options_for (measured on main, 0c08791: its options were keyed by engine only)."""
    from idsbench.hosts.campaign import run_on_hosts

    spec = Spec.model_validate({"name": "x", "hosts": HOSTS, "sensor": {"rules": {"a": ["a.rules"], "b": ["b.rules"]}}})
    with pytest.raises(SpecError, match="the ruleset axis"):
        run_on_hosts(spec, tmp_path / "out")  # before any host key, inventory, trace or connection
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(registry, "engine", lambda name: FakeEngine())
    rc = RemoteCampaign(key="k", spec=spec.model_dump(mode="json"), traces={}, rules=("runs/k/rules/0/a.rules",
                                                                                      "runs/k/rules/1/b.rules"))
    with pytest.raises(SpecError, match="the ruleset axis"):  # the sensor host refuses it too: no KeyError
        SensorSide(Agent(tmp_path), rc)  # type: ignore[arg-type]


def test_the_sensor_host_builds_its_run_facts_like_the_controller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(registry, "engine", lambda name: FakeEngine())
    spec = Spec.model_validate({"name": "x", "hosts": HOSTS, "sensor": {"rules": ["builtin:events", "a.rules"],
                                                                         "config": ["default", "tuned.yaml"]},
                                "setup": {"cpus": [None, 0.5]}})
    rc = RemoteCampaign(key="k", spec=spec.model_dump(mode="json"), traces={"builtin:mixed": TRACE},
                        rules=("builtin:events", "runs/k/rules/1/a.rules"), config_overlay="runs/k/overlay/tuned.yaml")
    side = SensorSide(Agent(tmp_path), rc)  # type: ignore[arg-type]
    facts = {(c.config, c.cpus): case_facts(side.ctx, c, [0, 1]) for c in side.cases.values()}
    assert facts[("default", None)].options.rules == (Path("builtin:events"), tmp_path / "runs/k/rules/1/a.rules")
    assert facts[("default", None)].options.config_overlay is None
    assert facts[("tuned.yaml", None)].options.config_overlay == tmp_path / "runs/k/overlay/tuned.yaml"
    # no sender on the sensor host: both CPUs are the sensor's (no CPU kept for a sender that is not there)
    assert facts[("default", None)].cpus.sensor == (0, 1) and facts[("default", None)].cpus.sender == ()
    assert (facts[("default", None)].allocation, facts[("default", None)].workers) == (2.0, 2)
    assert (facts[("default", 0.5)].allocation, facts[("default", 0.5)].workers) == (0.5, 1)
