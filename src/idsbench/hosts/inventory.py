"""Which hosts a campaign runs on: roles, addresses, SSH login, become, interfaces, pairing.

Read from an Ansible inventory (YAML; other formats through `ansible-inventory --list`) or from
the spec's inline `[[hosts.host]]` tables. Inventory variables (host vars override group vars,
nearer groups override `all`):

    ansible_host, ansible_port, ansible_user, ansible_ssh_private_key_file,
    ansible_become (bool), ansible_become_method (sudo),
    idsbench_pair (pairs a sender with a sensor), idsbench_capture_interface (sensor),
    idsbench_transmit_interface (sender), idsbench_python, idsbench_workdir, idsbench_vfio_device or
    idsbench_sriov_pf and idsbench_hugepages (a sensor's NIC for vm-vfio, checked by `hosts check`),
    idsbench_known_hosts (all: the known_hosts file host keys are checked against)

Roles are the groups `sender`, `sensor` and `collector`.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from idsbench import proc
from idsbench.errors import InputError, SpecError

# The host model lives in the leaf idsbench.hostspec (the spec uses it); re-exported here.
from idsbench.hostspec import DEFAULT_PYTHON, DEFAULT_WORKDIR, ROLES, HostEntry, Role

__all__ = ["DEFAULT_PYTHON", "DEFAULT_WORKDIR", "ROLES", "HostEntry", "Inventory", "Pair", "Role", "inventory_yaml",
           "load_inventory"]


class Pair(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    sender: HostEntry
    sensor: HostEntry

    @property
    def label(self) -> str:
        """What every sample summary and results row records as `pair`."""
        return f"{self.sender.name}/{self.sensor.name}"


class Inventory(BaseModel):
    model_config = ConfigDict(frozen=True)

    hosts: tuple[HostEntry, ...]
    known_hosts: Path | None = None
    source: str = "spec"
    offline: bool = False  # hosts without a package index (install idsbench with --no-index)

    def host(self, name: str) -> HostEntry:
        for h in self.hosts:
            if h.name == name:
                return h
        raise SpecError(f"{self.source} has no host {name!r}.", fix="use a host name of the inventory.")

    def pairs(self) -> list[Pair]:
        """Sender/sensor pairs by `pair` name (sorted); every sender and sensor must be in one."""
        groups: dict[str, dict[str, list[HostEntry]]] = {}
        for h in self.hosts:
            if h.role == "collector":
                continue
            if not h.pair:
                raise SpecError(f"host {h.name} ({h.role}) in {self.source} belongs to no pair.",
                                fix="give it `idsbench_pair: NAME` (the same name on its sender and sensor).")
            groups.setdefault(h.pair, {"sender": [], "sensor": []})[h.role].append(h)
        pairs = []
        for name, roles in sorted(groups.items()):
            if len(roles["sender"]) != 1 or len(roles["sensor"]) != 1:
                raise SpecError(f"pair {name!r} in {self.source} has {len(roles['sender'])} sender(s) and "
                                f"{len(roles['sensor'])} sensor(s); a pair is one of each.",
                                fix="set idsbench_pair so that each pair names one sender and one sensor.")
            pairs.append(Pair(name=name, sender=roles["sender"][0], sensor=roles["sensor"][0]))
        if not pairs:
            raise SpecError(f"{self.source} defines no sender/sensor pair.",
                            fix="put hosts in the groups `sender` and `sensor` with idsbench_pair set.")
        for p in pairs:
            for h, what in ((p.sensor, "idsbench_capture_interface"), (p.sender, "idsbench_transmit_interface")):
                if not h.interface:
                    raise SpecError(f"host {h.name} ({h.role}) in {self.source} names no interface.",
                                    fix=f"set {what} for it.")
        return pairs


# --- Ansible inventories ------------------------------------------------------------------------

_VAR_FIELDS = {
    "ansible_host": "address", "ansible_port": "port", "ansible_user": "user",
    "ansible_ssh_private_key_file": "key", "idsbench_pair": "pair",
    "idsbench_capture_interface": "capture_interface", "idsbench_transmit_interface": "transmit_interface",
    "idsbench_python": "python", "idsbench_workdir": "workdir",
    "idsbench_vfio_device": "vfio_device", "idsbench_sriov_pf": "sriov_pf", "idsbench_hugepages": "hugepages",
}


def load_inventory(path: Path) -> Inventory:
    """An Ansible inventory file as an Inventory (SpecError naming the file and host when wrong)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"inventory {path} cannot be read: {exc}.",
                         fix="give the inventory file `idsbench lab up --inventory FILE` wrote, or your own.") from exc
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        doc = None
    if isinstance(doc, dict) and "all" in doc:
        hostvars, groups = _walk_yaml(doc)
    else:
        hostvars, groups = _ansible_inventory_list(path)
    all_vars = hostvars.pop("\0all", {})
    return _build(path, hostvars, groups, all_vars)


Vars = dict[str, object]  # an inventory's variables (YAML/JSON values)


def _table(value: object) -> Vars:
    """A YAML mapping as variables (None or anything else: empty)."""
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def _walk_yaml(doc: Vars) -> tuple[dict[str, Vars], dict[str, set[str]]]:
    """(host -> merged vars, group -> hosts) of a YAML inventory (group vars nearer win)."""
    hostvars: dict[str, Vars] = {}
    groups: dict[str, set[str]] = {}

    def visit(name: str, group: Vars, inherited: Vars) -> set[str]:
        merged = {**inherited, **_table(group.get("vars"))}
        members: set[str] = set()
        for host, hvars in _table(group.get("hosts")).items():
            hostvars[host] = {**merged, **hostvars.get(host, {}), **_table(hvars)}
            members.add(host)
        for child, sub in _table(group.get("children")).items():
            members |= visit(child, _table(sub), merged)
        groups.setdefault(name, set()).update(members)
        return members

    top = _table(doc["all"])
    visit("all", top, {})
    hostvars["\0all"] = _table(top.get("vars"))
    return hostvars, groups


def _ansible_inventory_list(path: Path) -> tuple[dict[str, Vars], dict[str, set[str]]]:
    done = proc.run(["ansible-inventory", "-i", str(path), "--list"], timeout=60, check=False)
    if done.returncode != 0:
        raise SpecError(f"{path} is not an Ansible inventory ansible-inventory can read: "
                        f"{(done.stderr or done.stdout).strip()[:400]}", fix="write it in YAML (see the README).")
    doc = _table(json.loads(done.stdout))
    hostvars = {h: _table(v) for h, v in _table(_table(doc.get("_meta")).get("hostvars")).items()}
    groups: dict[str, set[str]] = {}

    def members(name: str) -> set[str]:
        entry = _table(doc.get(name))
        found = set(map(str, _list(entry.get("hosts"))))
        for child in _list(entry.get("children")):
            found |= members(str(child))
        groups[name] = found
        return found

    members("all")
    return hostvars, groups


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _build(path: Path, hostvars: dict[str, Vars], groups: dict[str, set[str]], all_vars: Vars) -> Inventory:
    hosts = []
    for name, hvars in sorted(hostvars.items()):
        roles = [r for r in ROLES if name in groups.get(r, set())]
        if not roles:
            continue  # a host of another purpose in the same inventory
        if len(roles) > 1:
            raise SpecError(f"host {name} of {path} is in the groups {', '.join(roles)}; a host has one role.",
                            fix="use separate hosts (or names) per role.")
        fields: Vars = {"name": name, "role": roles[0], "address": hvars.get("ansible_host", name)}
        for var, field in _VAR_FIELDS.items():
            if var in hvars and var != "ansible_host":
                fields[field] = str(hvars[var]) if field != "port" else _port(hvars[var])
        if _truthy(hvars.get("ansible_become")):
            method = str(hvars.get("ansible_become_method", "sudo"))
            if method != "sudo":
                raise SpecError(f"host {name} of {path}: become method {method!r} is not supported.",
                                fix="use ansible_become_method: sudo (or log in as root).")
            fields["become"] = "sudo"
        if fields.get("key"):
            fields["key"] = str((path.parent / Path(str(fields["key"])).expanduser()).resolve())
        try:
            hosts.append(HostEntry.model_validate(fields))
        except ValidationError as exc:
            raise SpecError(f"host {name} of {path}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}.",
                            fix="correct its variables in the inventory.") from exc
    known = all_vars.get("idsbench_known_hosts")
    return Inventory(hosts=tuple(hosts), source=str(path), offline=_truthy(all_vars.get("idsbench_offline")),
                     known_hosts=(path.parent / Path(str(known)).expanduser()).resolve() if known else None)


def _port(value: object) -> object:
    """An inventory's port as an int when it is one (else left for the model to refuse)."""
    try:
        return int(str(value))
    except ValueError:
        return value


def _truthy(value: object) -> bool:
    return value is True or str(value).lower() in ("true", "yes", "1")


def inventory_yaml(inv: Inventory, header: str) -> str:
    """An Inventory as an Ansible YAML inventory (what `lab up` writes)."""
    all_vars: Vars = {}
    if inv.known_hosts:
        all_vars["idsbench_known_hosts"] = str(inv.known_hosts)
    if inv.offline:
        all_vars["idsbench_offline"] = True
    children: Vars = {}
    for role in ROLES:
        members = {}
        for h in inv.hosts:
            if h.role != role:
                continue
            hv: Vars = {"ansible_host": h.address, "ansible_port": h.port, "ansible_user": h.user}
            if h.key:
                hv["ansible_ssh_private_key_file"] = h.key
            if h.become == "sudo":
                hv.update(ansible_become=True, ansible_become_method="sudo")
            for var, field in _VAR_FIELDS.items():
                value = getattr(h, field)
                if var not in hv and value is not None and field not in ("python", "workdir", "address"):
                    hv[var] = value
            hv["idsbench_python"], hv["idsbench_workdir"] = h.python, h.workdir
            members[h.name] = hv
        if members:
            children[role] = {"hosts": members}
    doc = {"all": {"vars": all_vars, "children": children}}
    return f"# {header}\n" + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
