"""`idsbench hosts provision`: the shipped playbook (hosts/ansible/provision.yml) run by ansible-runner.

Suricata on sensors and tcpreplay on senders where missing (apt; not with idsbench_offline), a venv
with this very idsbench build (the wheel is built here, copied, pip-installed; a host already at
this build is left alone), the tuning role on sensors when the spec names one. SSH as idsbench
does it: host keys checked against the same known_hosts file, never added automatically; become
with sudo, with a password only when one is given (`--ask-become-pass`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from idsbench.errors import EnvironmentMissing
from idsbench.hosts import hostkeys
from idsbench.hosts.digest import digest
from idsbench.hosts.inventory import Inventory, inventory_yaml
from idsbench.hosts.wheel import build_wheel

PLAYBOOK = Path(__file__).with_name("ansible") / "provision.yml"
TIMEOUT_S = 1800


@dataclass
class ProvisionResult:
    ok: bool
    changed: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    log: Path | None = None


def ansible_ssh_args(known_hosts: Path) -> str:
    return shlex.join(["-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
                       "-o", "StrictHostKeyChecking=yes", "-o", "UpdateHostKeys=no"])


def provision(inv: Inventory, inventory_file: Path | None, known_hosts: Path, cache_dir: Path, *,
              tune_role: Path | None = None, become_password: str | None = None,
              log_dir: Path | None = None) -> ProvisionResult:
    try:
        import ansible_runner
    except ImportError as exc:
        raise EnvironmentMissing("ansible-runner is not installed in idsbench's venv.",
                                 fix="pip install 'idsbench[hosts]' (or `make setup`).") from exc
    hostkeys.require_known(list(inv.hosts), known_hosts)
    wheel = build_wheel(cache_dir)
    binary = Path(sys.executable).with_name("ansible-playbook")
    if not binary.exists():
        raise EnvironmentMissing(f"ansible-playbook is not in {binary.parent}.",
                                 fix="pip install 'idsbench[hosts]' into idsbench's venv.")
    extravars: dict[str, object] = {
        "idsbench_wheel": str(wheel), "idsbench_digest": digest(),
        "ansible_ssh_common_args": ansible_ssh_args(known_hosts),
    }
    if inv.offline:
        extravars["idsbench_offline"] = True
    if tune_role is not None:
        extravars["idsbench_tune_role"] = str(tune_role.resolve())
    with tempfile.TemporaryDirectory(prefix="idsbench-ansible-") as tmp:
        private = Path(tmp)
        if inventory_file is None:
            inventory_file = private / "inventory.yml"
            inventory_file.write_text(inventory_yaml(inv, "the spec's [hosts], for ansible"))
        run = ansible_runner.run(
            private_data_dir=str(private), playbook=str(PLAYBOOK), inventory=str(inventory_file),
            extravars=extravars, quiet=True, timeout=TIMEOUT_S,
            cmdline="--ask-become-pass" if become_password is not None else None,
            passwords={r"^BECOME password.*:\s*?$": become_password} if become_password is not None else {},
            envvars={"PATH": f"{binary.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",  # this venv's ansible
                     "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_PIPELINING": "True",
                     "ANSIBLE_SSH_ARGS": "-o ControlMaster=no -o ControlPath=none",  # no lingering masters
                     "ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_NOCOLOR": "True"},
        )
        failures = _failures(run.events)
        log = None
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            log = log_dir / "provision.log"
            stdout = private / "artifacts" / run.config.ident / "stdout"
            if stdout.exists():
                shutil.copyfile(stdout, log)
        stats = run.stats or {}
        changed = {str(h): int(n) for h, n in (stats.get("changed") or {}).items()}
        if run.status != "successful" and not failures:
            failures.append(f"ansible-playbook ended {run.status} (rc {run.rc})")
        return ProvisionResult(run.status == "successful", changed, failures, log)


def _failures(events: Any) -> list[str]:  # Any: ansible-runner's event dicts (untyped, no stubs)
    out = []
    for ev in events:
        if ev.get("event") not in ("runner_on_failed", "runner_on_unreachable"):
            continue
        data = ev.get("event_data", {})
        if data.get("ignore_errors"):
            continue
        res = data.get("res", {}) or {}
        msg = res.get("msg") or res.get("stderr") or res.get("stdout") or ""
        out.append(f"{data.get('host')}: {data.get('task')}: {str(msg).strip()[:400]}")
    return out
