"""`idsbench lab up|down`: test hosts on this machine, reached over SSH like real ones.

Per pair a sender and a sensor host: podman containers (runc) of the lab image, each with its own
root filesystem and network namespace, running sshd on the management network; a veth wire
`eth1`─`eth1` between the pair's namespaces. Keys are generated per lab; the inventory (Ansible
YAML) names the lab's known_hosts file, which holds exactly the keys the lab generated.

While `up` runs, everything is in a teardown stack (a killed `up` is undone by `idsbench
cleanup`); once the lab stands, the records move to `<state_dir>/labs/<name>.json`, which `down`
undoes (containers, namespaces, links, addresses, files).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from idsbench import proc, settings
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.hosts.inventory import HostEntry, Inventory, inventory_yaml
from idsbench.lab import keys, net
from idsbench.lab.image import VENV, ensure_lab_image
from idsbench.setups.container.runtime import ContainerResource, podman_runtime, ulimit_args
from idsbench.teardown import TeardownStack, resource_kind, to_record, undo_records

SSHD_WAIT_S = 30.0
Log = Callable[[str], None]


@resource_kind
@dataclass(frozen=True)
class PathResource:
    """A file or directory the lab wrote."""

    kind: ClassVar[str] = "lab-path"
    path: str

    def undo(self) -> None:
        p = Path(self.path)
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)

    def describe(self) -> str:
        return f"file {self.path}"


class LabHost(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    role: str
    pair: str
    address: str
    netns: str
    container: str
    cpus: tuple[int, ...] | None = None  # its cpuset (None: every CPU)


def lab_cpusets(cpus: list[int], pairs: int) -> dict[int, list[int]]:
    """CPUs per host index (sender, sensor of pair 1, then pair 2, …), like separate machines: with
    enough CPUs every host gets its own block; else senders and sensors get disjoint halves (so a
    busy replayer never takes a sensor's CPU), shared round robin within a role."""
    n, hosts = len(cpus), 2 * pairs
    if n < 2:
        return {}
    if n >= hosts:
        per = n // hosts
        return {k: cpus[k * per:(k + 1) * per] for k in range(hosts)}
    senders, sensors = cpus[: n // 2], cpus[n // 2:]
    out = {}
    for i in range(pairs):
        out[2 * i] = [senders[i % len(senders)]]
        out[2 * i + 1] = [sensors[i % len(sensors)]]
    return out


class LabRecord(BaseModel):
    """`<state_dir>/labs/<name>.json`: what the lab is and what `down` removes (newest last)."""

    model_config = ConfigDict(frozen=True)

    name: str
    subnet: str
    controller: str
    image: str
    inventory: str
    known_hosts: str
    client_key: str
    hosts: tuple[LabHost, ...]
    resources: tuple[dict[str, object], ...] = ()
    created_unix: float = 0.0

    def host(self, name: str) -> LabHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise SpecError(f"lab {self.name} has no host {name!r} (hosts: {', '.join(h.name for h in self.hosts)}).")


def labs_dir(state_dir: Path | None = None) -> Path:
    return (state_dir or settings.state_dir()) / "labs"


def default_name() -> str:
    return f"{settings.name_prefix()}lab"


def record_path(name: str, state_dir: Path | None = None) -> Path:
    return labs_dir(state_dir) / f"{name}.json"


def load(name: str, state_dir: Path | None = None) -> LabRecord:
    path = record_path(name, state_dir)
    try:
        return LabRecord.model_validate_json(path.read_text())
    except FileNotFoundError as exc:
        raise SpecError(f"there is no lab {name!r} (no {path}).", fix="bring one up: `idsbench lab up`.") from exc


def up(pairs: int, inventory: Path, *, name: str | None = None, mtu: int = 1500, cache_dir: Path | None = None,
       state_dir: Path | None = None, log: Log | None = None) -> LabRecord:
    """Build the lab (image cached), write its inventory, return its record."""
    say = log or (lambda _l: None)
    name = name or default_name()
    net.check_name(name)
    if not 1 <= pairs <= 8:
        raise SpecError(f"--pairs {pairs}: the lab builds 1 to 8 pairs.", fix="pass --pairs 1..8.")
    if os.geteuid() != 0:
        raise EnvironmentMissing("idsbench lab needs root (namespaces, links, containers).", fix="run it as root.")
    for program in ("podman", "runc", "ssh", "ssh-keygen", "ip", "ethtool"):
        proc.require_program(program)
    if record_path(name, state_dir).exists():
        raise SpecError(f"lab {name} already exists ({record_path(name, state_dir)}).",
                        fix=f"use it, or remove it first: `idsbench lab down --name {name}`.")
    inventory = inventory.resolve()
    image = ensure_lab_image(cache_dir or settings.cache_dir(), say)
    stack = TeardownStack(state_dir=state_dir or settings.state_dir())
    tokens: list[int] = []
    push = stack.push

    def tracked(res: object) -> int:
        token = push(res)  # type: ignore[arg-type]
        tokens.append(token)
        return token

    stack.push = tracked  # type: ignore[method-assign]
    try:
        record = _build(stack, name, pairs, inventory, image, mtu, state_dir, say)
        # Hand over: the lab outlives this process; `down` undoes the records from now on.
        doc = record.model_copy(update={"resources": tuple(to_record(r) for r in stack.resources()),
                                        "created_unix": time.time()})
        path = record_path(name, state_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(doc.model_dump_json(indent=1))
        os.replace(tmp, path)
        for token in tokens:
            stack.forget(token)
        return doc
    finally:
        stack.close()  # empty after a hand-over; undoes a half-built lab


def _build(stack: TeardownStack, name: str, pairs: int, inventory: Path, image: str, mtu: int,
           state_dir: Path | None, say: Log) -> LabRecord:
    lab_dir = labs_dir(state_dir) / name
    if lab_dir.exists():
        shutil.rmtree(lab_dir)
    lab_dir.mkdir(parents=True, mode=0o700)
    stack.push(PathResource(str(lab_dir)))
    subnet = net.choose_subnet(name, net.used_networks())
    say(f"management network {subnet} (controller {subnet.network_address + 1})")
    controller = net.management(stack, name, subnet)
    client_key = lab_dir / "client_ed25519"
    client_pub = keys.keygen(client_key, f"idsbench-lab-{name}")
    roles = [(f"p{i}-{role}", role, f"p{i}") for i in range(1, pairs + 1) for role in ("sender", "sensor")]
    hosts: list[LabHost] = []
    known: list[str] = []
    rt = podman_runtime()
    cpusets = lab_cpusets(sorted(os.sched_getaffinity(0)), pairs)
    for k, (host, role, pair) in enumerate(roles):
        address = str(subnet.network_address + 11 + k)
        ns = net.host_namespace(stack, name, host, address, subnet.prefixlen)
        files = lab_dir / "hosts" / host
        known.append(keys.known_hosts_line(address, keys.host_files(files, host, address, client_pub)))
        container = f"{name}-{host}"
        say(f"host {host} ({role}) at {address}")
        stack.push(ContainerResource(rt.cli, container, container))  # by name: registered before it exists
        cpuset = cpusets.get(k)
        _create_container(rt.cli, container, host, ns, image, cpuset)
        _run(rt.argv("cp", f"{files}/.", f"{container}:{keys.SSH_DIR_IN_HOST}"), f"copy the SSH files into {container}")
        _run(rt.argv("start", container), f"start {container}")
        hosts.append(LabHost(name=host, role=role, pair=pair, address=address, netns=ns, container=container,
                             cpus=tuple(cpuset) if cpuset else None))
    for i in range(1, pairs + 1):
        net.pair_wire(stack, f"{name}-p{i}sender", f"{name}-p{i}sensor", mtu)
    known_hosts = lab_dir / "known_hosts"
    known_hosts.write_text("\n".join(known) + "\n")
    for h in hosts:
        wait_sshd(h.address, SSHD_WAIT_S)
    inv = Inventory(
        hosts=tuple(HostEntry(name=h.name, role=h.role, address=h.address, user="root", key=str(client_key),
                              pair=h.pair, python=f"{VENV}/bin/python",
                              capture_interface=net.WIRE_IF if h.role == "sensor" else None,
                              transmit_interface=net.WIRE_IF if h.role == "sender" else None) for h in hosts),
        known_hosts=known_hosts, offline=True)
    inventory.parent.mkdir(parents=True, exist_ok=True)
    inventory.write_text(inventory_yaml(inv, f"written by `idsbench lab up` (lab {name}); "
                                             f"`idsbench lab down --name {name}` removes the lab and this file"))
    stack.push(PathResource(str(inventory)))
    return LabRecord(name=name, subnet=str(subnet), controller=controller, image=image, inventory=str(inventory),
                     known_hosts=str(known_hosts), client_key=str(client_key), hosts=tuple(hosts))


def _create_container(cli: tuple[str, ...], container: str, host: str, ns: str, image: str,
                      cpuset: list[int] | None) -> str:
    # A lab host behaves like a machine: root, its own cgroup namespace (the sensor's cgroups
    # live under the container's and go with it), NET_ADMIN for AF_PACKET and ethtool.
    argv = [*cli, "create", "--name", container, "--hostname", host, "--network", f"ns:/var/run/netns/{ns}",
            "--add-host", f"{host}:127.0.1.1",
            "--privileged", "--cgroupns=private", *ulimit_args(), "--pull", "never",
            *(["--cpuset-cpus", ",".join(map(str, cpuset))] if cpuset else []),
            "--label", "org.idsbench.lab=1", image,
            "/usr/sbin/sshd", "-D", "-e", "-f", f"{keys.SSH_DIR_IN_HOST}/sshd_config"]
    done = proc.run(argv, check=False, timeout=120)
    if done.returncode != 0:
        raise EnvironmentMissing(f"podman could not create the lab host {container}: {(done.stderr or done.stdout)[-500:]}",
                                 fix="check `podman --runtime runc info`; remove a leftover with `idsbench cleanup`.")
    return done.stdout.strip().splitlines()[-1]


def _run(argv: list[str], what: str) -> None:
    done = proc.run(argv, check=False, timeout=120)
    if done.returncode != 0:
        raise EnvironmentMissing(f"lab: {what} failed: {(done.stderr or done.stdout)[-500:]}",
                                 fix="see the podman error above; `idsbench lab down` removes the rest.")


def wait_sshd(address: str, timeout_s: float, port: int = 22) -> None:
    deadline = time.monotonic() + timeout_s
    last: OSError | None = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=1.0) as s:
                if s.recv(4).startswith(b"SSH"):
                    return
        except OSError as exc:
            last = exc
        time.sleep(0.1)
    raise EnvironmentMissing(f"sshd of the lab host at {address} did not answer within {timeout_s:.0f} s ({last}).",
                             fix="see `podman logs` of the lab container.")


def down(name: str | None = None, state_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """Remove everything the lab built, newest first; (removed, failures)."""
    name = name or default_name()
    path = record_path(name, state_dir)
    doc = json.loads(path.read_text()) if path.exists() else None
    if doc is None:
        raise SpecError(f"there is no lab {name!r} ({path} does not exist).",
                        fix="`idsbench lab down --all` lists and removes every lab.")
    removed: list[str] = []
    failures: list[str] = []
    if undo_records(doc, removed, failures):
        path.write_text(json.dumps(doc, indent=1))
    else:
        path.unlink()
        try:
            path.parent.rmdir()  # the last lab gone
        except OSError:
            pass
    return removed, failures


def all_labs(state_dir: Path | None = None) -> list[str]:
    d = labs_dir(state_dir)
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def container_pid(record: LabRecord, host: str) -> int:
    """The PID (on this machine) of a lab host's init process (sshd), 0 when it is not running."""
    done = proc.run(podman_runtime().argv("inspect", "--format", "{{.State.Pid}}", record.host(host).container),
                    check=False, timeout=30)
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def restart_host(record: LabRecord, host: str) -> None:
    """Start a lab host that stopped (e.g. killed): same root filesystem, keys and addresses."""
    h = record.host(host)
    _run(podman_runtime().argv("start", h.container), f"start {h.container}")
    wait_sshd(h.address, SSHD_WAIT_S)
