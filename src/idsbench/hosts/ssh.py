"""How idsbench calls ssh: argv only, keys checked against one known_hosts file, never a prompt.

StrictHostKeyChecking=yes with idsbench's (or the spec's) known_hosts file; BatchMode (no
password prompts: keys or an agent); no connection sharing with the user's own ssh; keepalives so a
host that disappears is noticed within ~15 s.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from idsbench.hosts.inventory import HostEntry

CONNECT_TIMEOUT_S = 10


def ssh_options(host: HostEntry, known_hosts: Path) -> list[str]:
    opts = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known_hosts}",
            "-o", "GlobalKnownHostsFile=/dev/null", "-o", "UpdateHostKeys=no", "-o", "LogLevel=ERROR",
            "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
            "-o", "ControlMaster=no", "-o", "ControlPath=none", "-p", str(host.port)]
    if host.key:
        opts += ["-i", host.key, "-o", "IdentitiesOnly=yes"]
    return opts


def remote_command(host: HostEntry, argv: Sequence[str], *, sudo_password: bool = False) -> str:
    """The command line the remote shell runs (ssh always hands the host a string): quoted argv,
    behind sudo when the host needs become."""
    full = list(argv)
    if host.become == "sudo":
        full = ["sudo", "-S", "-p", "", "--", *full] if sudo_password else ["sudo", "-n", "--", *full]
    return shlex.join(full)


def ssh_argv(host: HostEntry, known_hosts: Path, argv: Sequence[str], *, sudo_password: bool = False) -> list[str]:
    return ["ssh", *ssh_options(host, known_hosts), "-l", host.user, host.address, "--",
            remote_command(host, argv, sudo_password=sudo_password)]


def agent_argv(host: HostEntry, *, sudo_password: bool = False) -> list[str]:
    """The agent as started on the host (by the venv's python)."""
    return [host.python, "-m", "idsbench.hosts.agent", "--name", host.name, "--role", host.role,
            "--workdir", host.workdir, *(["--iface", host.interface] if host.interface else []),
            *(["--password-line"] if sudo_password and host.become == "sudo" else [])]
