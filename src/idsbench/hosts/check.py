"""`idsbench hosts check`: per host, what is ready and what is missing, each with its fix.

Needs nothing installed on the hosts but python3: `facts.py` is sent to `python3 -` over SSH.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench import proc
from idsbench.hosts import hostkeys
from idsbench.hosts.digest import digest
from idsbench.hosts.inventory import HostEntry
from idsbench.hosts.protocol import HostFacts
from idsbench.hosts.ssh import ssh_argv

FACTS_SCRIPT = Path(__file__).with_name("facts.py")
PROVISION = "`idsbench hosts provision --inventory FILE`"


@dataclass(frozen=True)
class Item:
    host: str
    what: str
    ok: bool
    detail: str
    fix: str = ""


def remote_facts(host: HostEntry, known_hosts: Path) -> tuple[HostFacts | None, str]:
    # as the login user: the facts say themselves whether sudo works without a password
    login = host.model_copy(update={"become": "none"})
    argv = ssh_argv(login, known_hosts, ["python3", "-", host.role, host.interface or "", host.python])
    done = proc.run(argv, input=FACTS_SCRIPT.read_text(), timeout=90, check=False)
    if done.returncode != 0:
        return None, (done.stderr or done.stdout).strip()[-300:] or f"ssh exit {done.returncode}"
    try:
        return HostFacts.model_validate_json(done.stdout.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):  # ValidationError is a ValueError
        return None, f"unexpected output {done.stdout[-200:]!r}"


def check_hosts(hosts: Sequence[HostEntry], known_hosts: Path) -> list[Item]:
    items: list[Item] = []
    local = digest()
    for status in hostkeys.check(hosts, known_hosts):
        h = status.host
        if status.state == "unreachable":
            items.append(Item(h.name, "reachable", False, f"{h.endpoint}: {status.detail}",
                              "check the address/port, that sshd runs and the network path"))
            continue
        if status.state != "known":
            items.append(Item(h.name, "host key", False, status.describe(),
                              f"verify the fingerprint, then `idsbench hosts trust` (known_hosts: {known_hosts})"))
            continue
        items.append(Item(h.name, "host key", True, status.describe()))
        facts, why = remote_facts(h, known_hosts)
        if facts is None:
            items.append(Item(h.name, "ssh login", False, why,
                              f"allow key login for {h.user} (key {h.key or 'ssh defaults'}); python3 must be installed"))
            continue
        items.append(Item(h.name, "ssh login", True, f"{h.user}@{h.address}, python {facts.python3}"))
        items += _role_items(h, facts, local)
    return items


def _role_items(h: HostEntry, f: HostFacts, local: str) -> list[Item]:
    out = []
    root = f.uid == 0
    if root:
        out.append(Item(h.name, "root", True, "logs in as root"))
    elif h.become == "sudo":
        quiet = f.sudo_without_password
        out.append(Item(h.name, "root", True, "sudo without a password" if quiet else
                        "sudo asks for a password: pass --ask-become-pass to `hosts provision` and `run`"))
    else:
        out.append(Item(h.name, "root", False, f"logs in as uid {f.uid} and no become is set",
                        "log in as root or set ansible_become: true"))
    program = "suricata" if h.role == "sensor" else "tcpreplay"
    version = f.suricata if h.role == "sensor" else f.tcpreplay
    out.append(Item(h.name, program, bool(version), version or "missing", "" if version else f"{PROVISION} installs it"))
    tools = f.ip and f.ethtool
    out.append(Item(h.name, "ip, ethtool", bool(tools), "present" if tools else "missing",
                    "" if tools else "apt-get install iproute2 ethtool"))
    nic = f.interface
    if nic.exists:
        out.append(Item(h.name, f"interface {nic.name}", True,
                        f"mtu {nic.mtu}, {nic.operstate}, carrier {'yes' if nic.carrier else 'no'}"))
    else:
        what = "idsbench_capture_interface" if h.role == "sensor" else "idsbench_transmit_interface"
        out.append(Item(h.name, f"interface {h.interface}", False, "does not exist", f"set {what} to a NIC of the host"))
    installed = f.idsbench_digest
    if installed == local:
        out.append(Item(h.name, "idsbench", True, f"build {installed} in {h.python}"))
    else:
        detail = f"build {installed} (controller {local})" if installed else f"not installed ({h.python})"
        out.append(Item(h.name, "idsbench", False, detail, f"{PROVISION} installs this build"))
    return out


def render(items: Sequence[Item]) -> str:
    width = max((len(i.host) for i in items), default=4)
    lines = []
    for i in items:
        mark = "ok  " if i.ok else "MISS"
        line = f"{mark} {i.host:<{width}}  {i.what}: {i.detail}"
        if not i.ok and i.fix:
            line += f"\n     {'':<{width}}  fix: {i.fix}"
        lines.append(line)
    return "\n".join(lines)
