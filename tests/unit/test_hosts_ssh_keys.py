"""SSH as idsbench calls it (strict host keys, no prompts) and host-key bookkeeping with the real
ssh-keygen on local files (no network: the scan is replaced by keys generated here)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from idsbench.hosts import hostkeys
from idsbench.hosts.hostkeys import HostKeyError, ScannedKey
from idsbench.hosts.inventory import HostEntry
from idsbench.hosts.ssh import agent_argv, ssh_argv

SENSOR = HostEntry(name="ids-a", role="sensor", address="192.0.2.20", port=2222, user="bench", key="/k/id",
                   become="sudo", capture_interface="ens2f0", pair="a")
ROOT = HostEntry(name="gen-a", role="sender", address="192.0.2.10", transmit_interface="eth1", pair="a")


def _opt(argv: list[str], name: str) -> list[str]:
    return [argv[i + 1].split("=", 1)[1] for i, a in enumerate(argv) if a == "-o" and argv[i + 1].startswith(name + "=")]


def test_ssh_argv_checks_host_keys_strictly(tmp_path):
    argv = ssh_argv(ROOT, tmp_path / "kh", agent_argv(ROOT))
    assert _opt(argv, "StrictHostKeyChecking") == ["yes"] and _opt(argv, "BatchMode") == ["yes"]
    assert _opt(argv, "UserKnownHostsFile") == [str(tmp_path / "kh")] and _opt(argv, "GlobalKnownHostsFile") == ["/dev/null"]
    assert "no" not in _opt(argv, "StrictHostKeyChecking") and "accept-new" not in " ".join(argv)
    assert argv[argv.index("-l") + 1] == "root" and argv[-2:-1] == ["--"]
    remote = shlex.split(argv[-1])
    assert remote[:3] == ["/opt/idsbench/venv/bin/python", "-m", "idsbench.hosts.agent"]
    assert remote[remote.index("--iface") + 1] == "eth1" and "--password-line" not in remote


def test_become_with_and_without_password(tmp_path):
    plain = shlex.split(ssh_argv(SENSOR, tmp_path / "kh", agent_argv(SENSOR))[-1])
    assert plain[:3] == ["sudo", "-n", "--"]
    argv = ssh_argv(SENSOR, tmp_path / "kh", agent_argv(SENSOR, sudo_password=True), sudo_password=True)
    remote = shlex.split(argv[-1])
    assert remote[:5] == ["sudo", "-S", "-p", "", "--"] and remote[-1] == "--password-line"
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-i") + 1] == "/k/id"


@pytest.fixture
def host_key(tmp_path) -> ScannedKey:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "hk")], check=True)
    key_type, key = (tmp_path / "hk.pub").read_text().split()[:2]
    return ScannedKey(key_type, key)


def test_fingerprint_matches_ssh_keygen(tmp_path, host_key):
    shown = subprocess.run(["ssh-keygen", "-l", "-f", str(tmp_path / "hk.pub")], capture_output=True, text=True,
                           check=True).stdout.split()[1]
    assert host_key.fingerprint == shown


def test_unknown_changed_known_and_trust(tmp_path, host_key, monkeypatch):
    known = tmp_path / "known_hosts"
    scanned = {"192.0.2.10": [host_key]}
    monkeypatch.setattr(hostkeys, "scan", lambda h: (scanned.get(h.address, []), "connection refused"))
    assert [s.state for s in hostkeys.check([ROOT], known)] == ["unknown"]
    with pytest.raises(HostKeyError) as err:
        hostkeys.require_known([ROOT], known)
    assert host_key.fingerprint in str(err.value) and "hosts trust" in str(err.value)
    added = hostkeys.trust(hostkeys.check([ROOT], known), known)
    assert len(added) == 1 and known.read_text().startswith("192.0.2.10 ssh-ed25519 ")
    hostkeys.require_known([ROOT], known)  # known now
    # hashed entries are found too (ssh-keygen -F)
    subprocess.run(["ssh-keygen", "-H", "-f", str(known)], check=True, capture_output=True)
    assert "192.0.2.10" not in known.read_text()
    assert hostkeys.check([ROOT], known)[0].state == "known"
    # another key at the same address: CHANGED, refused, and `trust` leaves it alone without --replace
    other = ScannedKey("ssh-ed25519", _other_key(tmp_path))
    scanned["192.0.2.10"] = [other]
    status = hostkeys.check([ROOT], known)
    assert status[0].state == "changed"
    with pytest.raises(HostKeyError, match="CHANGED"):
        hostkeys.require_known([ROOT], known)
    assert hostkeys.trust(status, known) == []
    assert hostkeys.trust(status, known, replace=True) and hostkeys.check([ROOT], known)[0].state == "known"
    scanned.clear()
    assert hostkeys.check([ROOT], known)[0].state == "unreachable"


def _other_key(tmp_path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "hk2")], check=True)
    return (tmp_path / "hk2.pub").read_text().split()[1]
