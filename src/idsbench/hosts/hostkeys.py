"""Host keys: every host's key must be in a known_hosts file before anything runs on it.

`check(hosts, known_hosts)` scans each host's keys (ssh-keyscan) and compares them with the file
(`ssh-keygen -F`, hashed entries included); `require_known` turns unknown or changed keys into one
error that shows the fingerprints and runs nothing. `trust` records scanned keys (what `idsbench
hosts trust` does after showing them). The scan only informs: ssh itself then connects with
StrictHostKeyChecking=yes against the same file, so a key swapped after the scan is refused too.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from idsbench import proc, settings
from idsbench.errors import EnvironmentMissing
from idsbench.hosts.inventory import HostEntry

KEY_TYPES = "ed25519,ecdsa,rsa"
SCAN_TIMEOUT_S = 5


class HostKeyError(EnvironmentMissing):
    who = "host key"


@dataclass(frozen=True)
class ScannedKey:
    key_type: str
    key: str

    @property
    def fingerprint(self) -> str:
        """SHA256:… as `ssh-keygen -l` prints it."""
        digest = hashlib.sha256(base64.b64decode(self.key)).digest()
        return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


@dataclass(frozen=True)
class KeyStatus:
    host: HostEntry
    state: Literal["known", "unknown", "changed", "unreachable"]
    scanned: tuple[ScannedKey, ...]
    detail: str = ""

    def describe(self) -> str:
        fps = ", ".join(f"{k.key_type} {k.fingerprint}" for k in self.scanned)
        where = f"{self.host.name} ({self.host.endpoint})"
        if self.state == "unknown":
            return f"{where}: unknown host key {fps}"
        if self.state == "changed":
            return f"{where}: host key CHANGED, now {fps} (known_hosts holds another key: possible impostor)"
        if self.state == "unreachable":
            return f"{where}: no host key could be read ({self.detail})"
        return f"{where}: known ({fps})"


def default_known_hosts() -> Path:
    return settings.cache_dir() / "hosts" / "known_hosts"


def scan(host: HostEntry) -> tuple[list[ScannedKey], str]:
    done = proc.run(["ssh-keyscan", "-T", str(SCAN_TIMEOUT_S), "-p", str(host.port), "-t", KEY_TYPES, host.address],
                    timeout=SCAN_TIMEOUT_S * 4, check=False)
    keys = []
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and not line.startswith("#"):
            keys.append(ScannedKey(parts[1], parts[2]))
    return keys, (done.stderr.strip().splitlines() or ["no answer"])[-1]


def known_keys(known_hosts: Path, endpoint: str) -> list[ScannedKey]:
    if not known_hosts.is_file():
        return []
    done = proc.run(["ssh-keygen", "-F", endpoint, "-f", str(known_hosts)], check=False)
    keys = []
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and not line.startswith("#"):
            keys.append(ScannedKey(parts[1], parts[2]))
    return keys


def check(hosts: Sequence[HostEntry], known_hosts: Path) -> list[KeyStatus]:
    out = []
    for h in hosts:
        scanned, why = scan(h)
        if not scanned:
            out.append(KeyStatus(h, "unreachable", (), why))
            continue
        known = known_keys(known_hosts, h.endpoint)
        if any(k in known for k in scanned):
            state: Literal["known", "unknown", "changed"] = "known"
        else:
            state = "changed" if known else "unknown"
        out.append(KeyStatus(h, state, tuple(scanned)))
    return out


def require_known(hosts: Sequence[HostEntry], known_hosts: Path) -> None:
    """HostKeyError (nothing run) unless every host's key is recorded in `known_hosts`."""
    bad = [s for s in check(hosts, known_hosts) if s.state in ("unknown", "changed")]
    if not bad:
        return
    changed = any(s.state == "changed" for s in bad)
    fix = (f"verify the fingerprints out of band (on the host: `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`), "
           f"then record them: `idsbench hosts trust --inventory FILE` (known_hosts: {known_hosts}).")
    if changed:
        fix += " A CHANGED key is only replaced with `idsbench hosts trust --replace` after you know why it changed."
    raise HostKeyError("Host keys not verified, nothing was run: " + "; ".join(s.describe() for s in bad) + ".", fix=fix)


def trust(statuses: Sequence[KeyStatus], known_hosts: Path, *, replace: bool = False) -> list[str]:
    """Append the scanned keys of unknown (and, with `replace`, changed) hosts; returns what was added."""
    known_hosts.parent.mkdir(parents=True, exist_ok=True)
    added = []
    for s in statuses:
        if s.state == "changed" and replace:
            proc.run(["ssh-keygen", "-R", s.host.endpoint, "-f", str(known_hosts)], check=False)
            known_hosts.with_name(known_hosts.name + ".old").unlink(missing_ok=True)
        elif s.state != "unknown":
            continue
        with open(known_hosts, "a") as fh:
            for k in s.scanned:
                fh.write(f"{s.host.endpoint} {k.key_type} {k.key}\n")
        added.append(s.describe())
    return added
