"""Tuning plans for the fixture topologies (tests/data/probes/, written by generate.py there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from idsbench.cli.main import main
from idsbench.errors import SpecError
from idsbench.probe.diff import load
from idsbench.probemodel import HostProbe
from idsbench.tune import PlanOptions, TuningPlan, make_plan
from idsbench.tune.ansible import write_role
from idsbench.tune.apply import default_route_interfaces
from idsbench.tune.overlay import complete_sections
from idsbench.tune.render import overlay_yaml, to_shell

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "probes"


def probe(name: str) -> HostProbe:
    return load(FIXTURES / f"{name}.json")


def plan_for(name: str, **options: object) -> TuningPlan:
    return make_plan(probe(name), PlanOptions.model_validate(options))


def affinity(plan: TuningPlan, key: str) -> list[str]:
    sets = plan.suricata["threading"]["cpu-affinity"]  # type: ignore[index]
    for entry in sets:  # type: ignore[union-attr]
        if key in entry:
            return entry[key]["cpu"]
    raise AssertionError(f"no {key} in {sets}")


def afp(plan: TuningPlan) -> dict[str, object]:
    return plan.suricata["af-packet"][0]  # type: ignore[index,return-value]


def irq_targets(plan: TuningPlan) -> dict[int, list[int]]:
    return {s.irq: s.cpus for s in plan.host if s.kind == "irq" and s.irq is not None and s.cpus}


def test_two_sockets_i40e_ten_cpus():
    p = probe("two_socket_i40e")
    plan = make_plan(p, PlanOptions(cpus=10))
    node0 = set(p.numa_nodes[0].cpus)
    assert len(plan.layout.workers) == 10 and set(plan.layout.workers) <= node0
    assert len({(p.cpu.topology[c].socket, p.cpu.topology[c].core) for c in plan.layout.workers}) == 10  # no HT pair
    assert plan.layout.management == [0] and 0 not in plan.layout.workers
    assert affinity(plan, "worker-cpu-set") == ["1-10"] and affinity(plan, "management-cpu-set") == ["0"]
    assert afp(plan)["threads"] == 10 and afp(plan)["cluster-type"] == "cluster_qm"
    assert plan.suricata["runmode"] == "workers" and afp(plan)["tpacket-v3"] is True
    commands = [s.command for s in plan.host]
    assert "ethtool -L ens1f0 combined 10" in commands
    assert f"ethtool -X ens1f0 hkey {':'.join(['6D', '5A'] * 26)} equal 10" in commands
    assert "ethtool -N ens1f0 rx-flow-hash udp4 sdfn" in commands  # tcp4 already sdfn
    assert "ethtool -A ens1f0 rx off tx off" in commands and "ethtool -G ens1f0 rx 4096" in commands
    targets = irq_targets(plan)
    assert targets == {100 + q: [plan.layout.workers[q]] for q in range(10)}  # queue q -> worker q
    assert 99 not in targets  # the misc vector stays
    assert commands.index("systemctl disable --now irqbalance") < commands.index("echo 1 > /proc/irq/100/smp_affinity_list")
    assert plan.boot_args == "isolcpus=1-10 nohz_full=1-10 rcu_nocbs=1-10"
    assert not plan.warnings


def test_contract_is_exactly_suricata_host_knobs():
    doc = plan_for("two_socket_i40e", cpus=10).contract()
    assert list(doc) == ["suricata", "host", "knobs"]
    assert all(isinstance(c, str) for c in doc["host"])  # type: ignore[union-attr]
    for knob in doc["knobs"]:  # type: ignore[union-attr]
        assert set(knob) == {"name", "value", "why"} and knob["why"]  # type: ignore[index,operator]
    names = {k["name"] for k in doc["knobs"]}  # type: ignore[index,union-attr]
    assert {"runmode", "af-packet.cluster-type", "af-packet.ring-size", "flow.memcap",
            "threading.worker-cpu-set", "boot.isolcpus", "nic.rss-key"} <= names


def test_every_host_step_says_why_and_how_to_undo_reversible_ones():
    plan = plan_for("two_socket_i40e", cpus=10)
    for step in plan.host:
        assert step.why
        if step.kind in ("ethtool", "irq", "service", "boot"):
            assert step.undo, step.command
    assert all(not s.safe for s in plan.host if s.kind in ("service", "boot"))


def test_one_socket_already_symmetric_needs_no_key_change():
    plan = plan_for("one_socket_ixgbe")
    assert plan.layout.management == [0]
    assert plan.layout.workers == list(range(1, 16))  # the whole node but management's CPU
    assert plan_for("one_socket_ixgbe", cpus=7).layout.workers == list(range(1, 8))  # cores before siblings
    assert plan_for("one_socket_ixgbe", cpus=9).layout.workers == [1, 2, 3, 4, 5, 6, 7, 9, 10]
    assert afp(plan)["cluster-type"] == "cluster_qm"
    assert afp(plan)["threads"] == 15 and plan.queues == 15
    assert "ethtool -L eth1 combined 15" in [s.command for s in plan.host]
    plan8 = plan_for("one_socket_ixgbe", cpus=8)
    commands = [s.command for s in plan8.host]
    assert not any(c.startswith("ethtool -X") for c in commands)  # symmetric and even over 8 already
    assert not any(c.startswith("ethtool -L") for c in commands)
    assert not any(c.startswith("systemctl") for c in commands)  # irqbalance not running


def test_nic_on_node_one_keeps_everything_on_node_one():
    p = probe("nic_on_node1")
    plan = make_plan(p, PlanOptions(cpus=4))
    node1 = set(p.numa_nodes[1].cpus)
    assert plan.layout.node == 1 and plan.layout.management == [8] and plan.layout.workers == [9, 10, 11, 12]
    assert set(plan.layout.workers) <= node1 and not plan.layout.spilled
    assert irq_targets(plan) == {200 + q: [plan.layout.workers[q]] for q in range(4)}


def test_fewer_cpus_on_the_node_spill_with_a_warning():
    p = probe("nic_on_node1")
    plan = make_plan(p, PlanOptions(cpus=20))
    node0 = set(p.numa_nodes[0].cpus)
    assert len(plan.layout.workers) == 20 and len(plan.layout.spilled) == 5
    assert set(plan.layout.spilled) <= node0 and 0 not in plan.layout.spilled
    assert any("spill" in w for w in plan.warnings)
    assert any(k.name == "threading.worker-cpu-set.spilled" for k in plan.knobs)
    with pytest.raises(SpecError, match="more worker CPUs than this host has"):
        make_plan(p, PlanOptions(cpus=64))


def test_nic_without_rss_uses_cluster_flow_and_one_queue_irq_on_management():
    plan = plan_for("no_rss_e1000e", cpus=2)
    assert afp(plan)["cluster-type"] == "cluster_flow" and afp(plan)["threads"] == 2
    assert plan.queues is None
    commands = [s.command for s in plan.host]
    assert not any(c.startswith(("ethtool -L", "ethtool -X", "ethtool -N")) for c in commands)
    assert irq_targets(plan) == {30: plan.layout.management}


def test_vm_has_no_irq_control_and_says_so():
    plan = plan_for("vm_virtio")
    assert not any(s.kind in ("irq", "service") for s in plan.host)
    assert any("VM" in w and "IRQ" in w for w in plan.warnings)
    knob = next(k for k in plan.knobs if k.name == "irq-affinity")
    assert knob.value == "not applicable" and "kvm" in knob.why
    assert afp(plan)["cluster-type"] == "cluster_flow"  # virtio: no readable RSS table
    assert any("speed unknown" in w for w in plan.warnings)


def test_veth_has_no_channels_and_no_irqs():
    plan = plan_for("veth", iface="ibrx0")
    assert afp(plan)["cluster-type"] == "cluster_flow" and afp(plan)["interface"] == "ibrx0"
    kinds = {s.kind for s in plan.host}
    assert kinds == {"ethtool", "boot"}
    assert [s.command for s in plan.host if s.kind == "ethtool"] == [
        "ethtool -K ibrx0 gro off tso off gso off sg off rx off tx off rxvlan off txvlan off"]
    assert next(k for k in plan.knobs if k.name == "irq-affinity").value == "none"


def test_memory_and_rate_drive_the_sizes():
    small = plan_for("two_socket_i40e", cpus=10, memory_bytes=2 * 2**30, rate_pps=100_000)
    large = plan_for("two_socket_i40e", cpus=10, memory_bytes=64 * 2**30, rate_pps=5_000_000)
    assert small.sizing.ring_size < large.sizing.ring_size
    assert small.sizing.flow_memcap < large.sizing.flow_memcap
    assert small.sizing.ring_size * small.sizing.frame_bytes * 10 <= 0.25 * 2 * 2**30
    for s in (small.sizing, large.sizing):
        assert s.block_size >= 128 * 1024 and s.block_size & (s.block_size - 1) == 0
        assert s.ring_size * s.frame_bytes >= 8 * s.block_size
        assert s.flow_hash_size >= s.flows and s.flow_hash_size & (s.flow_hash_size - 1) == 0
    starved = plan_for("two_socket_i40e", cpus=10, memory_bytes=256 * 2**20, rate_pps=5_000_000, flows=10**7)
    assert any("capture rings limited" in w for w in starved.warnings)
    assert any("expected flows do not fit" in w for w in starved.warnings)


def test_unknown_interface_is_a_spec_error():
    with pytest.raises(SpecError, match="no interface 'eth9'"):
        plan_for("two_socket_i40e", iface="eth9")


def test_yaml_overlay_completes_sections_from_the_base_config():
    plan = plan_for("two_socket_i40e", cpus=10)
    base = {"stream": {"memcap": "64mb", "reassembly": {"memcap": "256mb", "depth": "1mb"}, "inline": "auto"},
            "af-packet": [{"interface": "eth0"}, {"interface": "default"}], "vars": {"x": 1}}
    merged = complete_sections(plan.suricata, base)
    assert merged["stream"]["reassembly"]["depth"] == "1mb"  # type: ignore[index]
    assert merged["stream"]["reassembly"]["memcap"] == plan.suricata["stream"]["reassembly"]["memcap"]  # type: ignore[index]
    assert merged["af-packet"] == plan.suricata["af-packet"] and "vars" not in merged
    text = overlay_yaml(plan.suricata, base)
    assert text.startswith("%YAML 1.1\n---\n")
    assert yaml.safe_load(text.split("---\n", 1)[1])["stream"]["inline"] == "auto"


def test_shell_script_lists_undo_in_reverse_and_comments_out_the_boot_line():
    text = to_shell(plan_for("two_socket_i40e", cpus=10))
    lines = text.splitlines()
    assert lines[0] == "#!/bin/sh" and "set -e" in lines
    undo = [line for line in lines if line.startswith("#   ")]
    assert undo[-1] == "#   ethtool -L ens1f0 combined 16"  # the first change is undone last
    assert any(line.startswith("# printf") and "isolcpus=1-10" in line for line in lines)
    assert not any(line.startswith("printf") for line in lines)


def test_ansible_role_files(tmp_path):
    plan = plan_for("two_socket_i40e", cpus=10)
    written = write_role(plan, tmp_path / "idsbench_tune")
    names = {p.relative_to(tmp_path).as_posix() for p in written}
    assert names == {"idsbench_tune/tasks/main.yml", "idsbench_tune/handlers/main.yml",
                     "idsbench_tune/defaults/main.yml", "idsbench_tune/templates/suricata-tuning.yaml.j2",
                     "idsbench-tune.yml"}
    defaults = yaml.safe_load((tmp_path / "idsbench_tune/defaults/main.yml").read_text())
    assert defaults["idsbench_tune_interface"] == "ens1f0" and defaults["idsbench_tune_boot_line"] is False
    assert ["ethtool", "-L", "ens1f0", "combined", "10"] in defaults["idsbench_tune_ethtool"]
    assert {"irq": 100, "cpus": "1"} in defaults["idsbench_tune_irq_affinity"]
    tasks = yaml.safe_load((tmp_path / "idsbench_tune/tasks/main.yml").read_text())
    handlers = {h["name"] for h in yaml.safe_load((tmp_path / "idsbench_tune/handlers/main.yml").read_text())}
    assert {t["notify"] for t in tasks if "notify" in t} <= handlers


def test_cli_plan_json_from_a_probe_file(capsys):
    assert main(["tune", "plan", "--host", str(FIXTURES / "two_socket_i40e.json"), "--cpus", "10",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == ["suricata", "host", "knobs"]
    assert doc["suricata"]["af-packet"][0]["cluster-type"] == "cluster_qm"
    assert main(["tune", "plan", "--host", str(FIXTURES / "veth.json"), "--apply", "--yes"]) == 2


def test_default_route_interfaces(tmp_path):
    (tmp_path / "proc/net").mkdir(parents=True)
    (tmp_path / "proc/net/route").write_text(
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        "eth1\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
    assert default_route_interfaces(tmp_path) == {"eth0"}
