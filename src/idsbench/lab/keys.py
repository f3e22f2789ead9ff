"""The lab's SSH keys: one client key, one ed25519 host key per host (generated per lab), the sshd
configuration each host runs with, and the known_hosts lines of the lab's own hosts."""

from __future__ import annotations

from pathlib import Path

from idsbench import proc

SSH_DIR_IN_HOST = "/etc/ssh/idsbench"
SSHD_CONFIG = """\
# written by `idsbench lab up`
Port 22
ListenAddress {address}
HostKey {dir}/ssh_host_ed25519_key
AuthorizedKeysFile {dir}/authorized_keys .ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PidFile /run/sshd.pid
MaxSessions 32
MaxStartups 64:30:128
X11Forwarding no
PrintMotd no
"""


def keygen(path: Path, comment: str) -> str:
    """A new ed25519 key pair at `path` (no passphrase); returns the public key line."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.unlink(missing_ok=True)
    path.with_name(path.name + ".pub").unlink(missing_ok=True)
    proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])
    return path.with_name(path.name + ".pub").read_text().strip()


def host_files(dest: Path, host: str, address: str, client_pub: str) -> str:
    """sshd config, host key and authorized_keys of one host in `dest`; returns its public host key."""
    dest.mkdir(parents=True, exist_ok=True, mode=0o700)
    pub = keygen(dest / "ssh_host_ed25519_key", f"idsbench-lab-{host}")
    (dest / "sshd_config").write_text(SSHD_CONFIG.format(address=address, dir=SSH_DIR_IN_HOST))
    auth = dest / "authorized_keys"
    auth.write_text(client_pub + "\n")
    auth.chmod(0o600)
    return pub


def known_hosts_line(endpoint: str, public_key: str) -> str:
    key_type, key = public_key.split()[:2]
    return f"{endpoint} {key_type} {key}"
