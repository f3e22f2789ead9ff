"""Inventories: Ansible YAML read with group/host variable precedence, pairs, the spec's [hosts]."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from idsbench.errors import SpecError
from idsbench.hosts.inventory import HostEntry, Inventory, inventory_yaml, load_inventory
from idsbench.lab.net import choose_subnet
from idsbench.spec import spec_from_dict

INVENTORY = """\
all:
  vars:
    ansible_user: bench
    idsbench_known_hosts: keys/known_hosts
  children:
    sender:
      vars:
        idsbench_transmit_interface: ens1f0
      hosts:
        gen-a: {ansible_host: 192.0.2.10, idsbench_pair: a}
        gen-b: {ansible_host: 192.0.2.11, idsbench_pair: b, ansible_port: 2222}
    sensor:
      vars:
        idsbench_capture_interface: ens2f0
        ansible_become: true
      hosts:
        ids-a: {ansible_host: 192.0.2.20, idsbench_pair: a, ansible_ssh_private_key_file: ~/.ssh/bench}
        ids-b: {ansible_host: 192.0.2.21, idsbench_pair: b, ansible_user: root, ansible_become: false}
    other:
      hosts:
        unrelated: {}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inv.yml"
    path.write_text(text)
    return path


def test_yaml_inventory_roles_vars_and_pairs(tmp_path):
    inv = load_inventory(_write(tmp_path, INVENTORY))
    assert [h.name for h in inv.hosts] == ["gen-a", "gen-b", "ids-a", "ids-b"]  # `unrelated` has no role
    gen_b, ids_a, ids_b = inv.host("gen-b"), inv.host("ids-a"), inv.host("ids-b")
    assert (gen_b.role, gen_b.port, gen_b.user, gen_b.transmit_interface) == ("sender", 2222, "bench", "ens1f0")
    assert gen_b.endpoint == "[192.0.2.11]:2222" and inv.host("gen-a").endpoint == "192.0.2.10"
    assert (ids_a.become, ids_a.capture_interface, ids_a.user) == ("sudo", "ens2f0", "bench")
    assert ids_a.key == str(Path("~/.ssh/bench").expanduser())
    assert (ids_b.become, ids_b.user) == ("none", "root")  # host vars override group vars
    assert inv.known_hosts == (tmp_path / "keys" / "known_hosts").resolve()
    pairs = inv.pairs()
    assert [(p.name, p.label) for p in pairs] == [("a", "gen-a/ids-a"), ("b", "gen-b/ids-b")]


def test_host_without_pair_is_a_spec_error(tmp_path):
    text = INVENTORY.replace("ids-b: {ansible_host: 192.0.2.21, idsbench_pair: b,", "ids-b: {ansible_host: 192.0.2.21,")
    with pytest.raises(SpecError, match="ids-b .*belongs to no pair"):
        load_inventory(_write(tmp_path, text)).pairs()


def test_pair_without_sensor_is_a_spec_error(tmp_path):
    text = INVENTORY.replace("idsbench_pair: b, ansible_user: root", "idsbench_pair: c, ansible_user: root")
    with pytest.raises(SpecError, match=r"pair 'b' .* 1 sender\(s\) and 0 sensor\(s\)"):
        load_inventory(_write(tmp_path, text)).pairs()


def test_missing_interface_and_two_roles(tmp_path):
    inv = load_inventory(_write(tmp_path, INVENTORY.replace("        idsbench_capture_interface: ens2f0\n", "")))
    with pytest.raises(SpecError, match="idsbench_capture_interface"):
        inv.pairs()
    twice = INVENTORY.replace("    other:\n      hosts:\n        unrelated: {}\n",
                              "    other:\n      children:\n        sensor:\n          hosts:\n            gen-a: {}\n")
    with pytest.raises(SpecError, match="one role"):
        load_inventory(_write(tmp_path, twice))


def test_written_inventory_reads_back(tmp_path):
    hosts = (HostEntry(name="p1-sender", role="sender", address="198.18.5.11", pair="p1", transmit_interface="eth1",
                       key="/k/client"),
             HostEntry(name="p1-sensor", role="sensor", address="198.18.5.12", pair="p1", capture_interface="eth1",
                       key="/k/client", become="sudo", user="bench"))
    inv = Inventory(hosts=hosts, known_hosts=tmp_path / "kh", offline=True)
    path = tmp_path / "out.yml"
    path.write_text(inventory_yaml(inv, "test"))
    back = load_inventory(path)
    assert back.hosts == hosts and back.known_hosts == tmp_path / "kh" and back.offline


def test_spec_hosts_section():
    spec = spec_from_dict({"name": "x", "hosts": {"inventory": "inv.yml", "pool_pairs": True}})
    assert spec.hosts is not None and spec.hosts.inventory == "inv.yml" and spec.hosts.pool_pairs
    inline = spec_from_dict({"name": "x", "hosts": {"host": [
        {"name": "s", "role": "sender", "address": "198.18.0.2", "pair": "p", "transmit_interface": "eth1"}]}})
    assert inline.hosts is not None and inline.hosts.host[0].port == 22
    for bad in ({}, {"inventory": "a", "host": inline.hosts.model_dump()["host"]}, {"inventory": "a", "typo": 1}):
        with pytest.raises(SpecError):
            spec_from_dict({"name": "x", "hosts": bad})
    assert "hosts" not in spec_from_dict({"name": "x"}).model_dump(mode="json")  # old campaigns resume unchanged


def test_lab_subnet_avoids_used_networks():
    used = [ipaddress.IPv4Network("198.18.0.0/16")]
    net = choose_subnet("iblab", used)
    assert net.subnet_of(ipaddress.IPv4Network("198.19.0.0/16")) and net.prefixlen == 24
    assert choose_subnet("iblab", used) == net  # deterministic for a name
    everything = [ipaddress.IPv4Network("198.18.0.0/15")]
    with pytest.raises(Exception, match="in use"):
        choose_subnet("iblab", everything)
