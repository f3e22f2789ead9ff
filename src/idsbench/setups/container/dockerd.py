"""A dockerd of idsbench's own, for hosts where none runs (e.g. no systemd).

Images persist in `<cache>/docker` (its data-root: an image is imported once per machine); the
socket, pidfile and exec-root live in a short-lived `/run/ibdocker-<id>` directory. The daemon is
registered in the teardown stack as kind `dockerd` (stop by PID, then remove the run directory),
so `idsbench cleanup` stops one a killed run left behind. It manages no firewall or bridge.
A host dockerd that already answers on the default socket is used as is (never stopped).
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.proc import Child, Supervisor
from idsbench.procinfo import children_of, process_starttime, same_process_alive
from idsbench.setups.container.runtime import Runtime, docker_runtime, require_runtime_program
from idsbench.teardown import resource_kind, transient

RUN_BASE = Path("/run")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


@resource_kind
@dataclass(frozen=True)
class DockerdResource:
    """A dockerd idsbench started: SIGTERM (it stops its containers and containerd), wait, SIGKILL;
    then its owner file and short-lived run directory (netns bind mounts, shm) go."""

    kind: ClassVar[str] = "dockerd"
    pid: int
    starttime: int | None
    run_dir: str
    data_root: str | None = None
    child: Child | None = transient()

    def undo(self) -> None:
        if self.pid:
            child = self.child
            reaped = (lambda: child.poll() is not None) if child is not None else None
            proc.terminate(self.pid, self.starttime, group=False, first=signal.SIGTERM, grace_s=STOP_TIMEOUT_S,
                           reaped=reaped)
            if self.child is not None:
                self.child.wait(10)
        if self.data_root:
            _owner_file(Path(self.data_root)).unlink(missing_ok=True)
        _remove_run_dir(Path(self.run_dir))

    def describe(self) -> str:
        return f"dockerd (pid {self.pid}, {self.run_dir})"


def host_dockerd_answers() -> bool:
    """True when `docker info` works without idsbench starting anything (default socket/DOCKER_HOST)."""
    if shutil.which("docker") is None:
        return False
    if not os.environ.get("DOCKER_HOST") and not Path("/var/run/docker.sock").exists():
        return False
    return proc.run(["docker", "info", "--format", "{{.ServerVersion}}"], check=False, timeout=20).returncode == 0


def start_dockerd(sup: Supervisor, cache_dir: Path, log_path: Path | None = None) -> Runtime:
    """The host's dockerd if one answers; else start ours and wait for its socket."""
    require_runtime_program("docker")
    if host_dockerd_answers():
        return docker_runtime(None)
    require_runtime_program("dockerd")
    data_root = Path(cache_dir) / "docker"
    data_root.mkdir(parents=True, exist_ok=True)
    _claim_data_root(data_root)
    run_dir = RUN_BASE / f"ibdocker-{secrets.token_hex(4)}"
    run_dir.mkdir(mode=0o700)
    sock = f"unix://{run_dir}/docker.sock"
    argv = ["dockerd", "--data-root", str(data_root), "--exec-root", str(run_dir / "exec"),
            "--pidfile", str(run_dir / "dockerd.pid"), "-H", sock, "--iptables=false",
            "--ip6tables=false", "--ip-forward=false", "--ip-masq=false", "--bridge=none",
            "--log-level=warn"]
    # Registered before start: if starting fails half-way the run dir still goes.
    token = sup.teardown.push(DockerdResource(0, None, str(run_dir)))
    # In its run dir: nothing dockerd, containerd or a shim drop into their cwd lands in the user's.
    child = sup.start(argv, name="dockerd", stdout=log_path, grace_s=STOP_TIMEOUT_S, cwd=run_dir)
    sup.teardown.forget(token)
    # The process entry (from start) stops it too; this one also removes the run dir.
    _write_owner(data_root, child.pid)
    sup.teardown.push(DockerdResource(child.pid, process_starttime(child.pid), str(run_dir), str(data_root),
                                      child=child))
    rt = docker_runtime(sock, child.pid)
    _wait_ready(rt, child, log_path)
    return docker_runtime(sock, child.pid, children_of(child.pid))


def _wait_ready(rt: Runtime, child: Child, log_path: Path | None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if child.poll() is not None:
            break
        if proc.run(rt.argv("version", "--format", "{{.Server.Version}}"), check=False, timeout=20).returncode == 0:
            return
        time.sleep(0.2)
    tail = ""
    if log_path and log_path.exists():
        tail = " ".join(log_path.read_text(errors="replace").strip().splitlines()[-5:])[-600:]
    raise EnvironmentMissing(
        f"dockerd did not come up within {START_TIMEOUT_S:.0f} s "
        f"(exit status {child.returncode}): {tail or 'no output'}",
        fix="run `dockerd` by hand to see why, or set [setup] runtime = \"podman\".",
    )


def _owner_file(data_root: Path) -> Path:
    return data_root.with_name(data_root.name + ".owner")


def _claim_data_root(data_root: Path) -> None:
    """Two daemons must never share a data-root: refuse while the recorded one is alive."""
    lock_path = data_root.with_name(data_root.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            owner = json.loads(_owner_file(data_root).read_text())
        except (OSError, ValueError):
            return
        if same_process_alive(int(owner.get("pid", 0)), owner.get("starttime")):
            raise EnvironmentMissing(
                f"Another dockerd started by idsbench (pid {owner['pid']}) still uses {data_root}.",
                fix="wait for the other run to finish, or run `idsbench cleanup` if it was killed.",
            )


def _write_owner(data_root: Path, pid: int) -> None:
    _owner_file(data_root).write_text(json.dumps({"pid": pid, "starttime": process_starttime(pid)}))


def _remove_run_dir(run_dir: Path) -> None:
    if not run_dir.exists():
        return
    prefix = str(run_dir) + "/"
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if line.split()[4].startswith(prefix)]
    for mount_point in sorted(mounts, key=len, reverse=True):  # netns bind mounts, shm
        proc.run(["umount", "-l", mount_point], timeout=30, check=False)
    shutil.rmtree(run_dir, ignore_errors=True)
