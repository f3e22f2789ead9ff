"""The one supervisor through which every child process is started and torn down.

argv lists only (never a shell), each child in its own session (so its whole process group can be
signalled), optional network namespace (`ip netns exec`), CPU affinity and cgroup membership set
in the child before exec, registered in the teardown stack until it has been reaped.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Sequence

from idsbench.errors import EnvironmentMissing
from idsbench.teardown import TeardownStack, process_starttime

# Debian package that provides a program, for "not found" errors.
PACKAGE_OF = {
    "suricata": "suricata (Debian: from <codename>-backports)",
    "tcpreplay": "tcpreplay",
    "ip": "iproute2",
    "ethtool": "ethtool",
    "capinfos": "wireshark-common",
    "tshark": "tshark",
    "chromium": "chromium",
}


def require_program(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pkg = PACKAGE_OF.get(name, name)
        raise EnvironmentMissing(
            f"The program `{name}` is not installed.",
            fix=f"install the package {pkg} (`make setup` does it), or run `idsbench doctor`.",
        )
    return path


def netns_prefix(netns: str | None) -> list[str]:
    return ["ip", "netns", "exec", netns] if netns else []


@dataclass
class Child:
    """A started child process. `returncode` is set once it has been reaped."""

    name: str
    argv: list[str]
    popen: subprocess.Popen
    token: int
    _files: list[IO]

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout)


class Supervisor:
    def __init__(self, teardown: TeardownStack):
        self.teardown = teardown

    def start(
        self,
        argv: Sequence[str],
        *,
        name: str,
        stdout: Path | None = None,
        stderr: Path | None = None,
        netns: str | None = None,
        cpus: Sequence[int] | None = None,
        cgroup_procs: Sequence[Path] = (),
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Child:
        full = netns_prefix(netns) + [str(a) for a in argv]
        require_program(full[0])
        files: list[IO] = []
        out = open(stdout, "ab") if stdout else subprocess.DEVNULL
        if stdout:
            files.append(out)  # type: ignore[arg-type]
        if stderr is None:
            err = subprocess.STDOUT if stdout else subprocess.DEVNULL
        else:
            err = open(stderr, "ab")
            files.append(err)
        procs_files = [str(p) for p in cgroup_procs]
        cpu_set = set(cpus) if cpus else None

        def in_child() -> None:  # runs between fork and exec: no locks, no allocation-heavy work
            for procs in procs_files:
                with open(procs, "w") as fh:
                    fh.write("0")
            if cpu_set:
                os.sched_setaffinity(0, cpu_set)

        popen = subprocess.Popen(
            full,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=in_child if (procs_files or cpu_set) else None,
        )
        token = self.teardown.push(
            "process",
            {"pid": popen.pid, "starttime": process_starttime(popen.pid), "name": name},
            undo=lambda: self._kill_group(popen, grace_s=5.0),
        )
        return Child(name=name, argv=full, popen=popen, token=token, _files=files)

    def stop(self, child: Child, timeout: float = 10.0, sig: int = signal.SIGTERM) -> int | None:
        """Signal, wait up to `timeout`, then SIGKILL the group. Tolerates dead children."""
        self._kill_group(child.popen, first=sig, grace_s=timeout)
        self.reap(child)
        return child.returncode

    def reap(self, child: Child) -> int | None:
        """Forget a child that has exited (closing its log files)."""
        if child.poll() is None:
            return None
        for fh in child._files:
            fh.close()
        self.teardown.forget(child.token)
        return child.returncode

    @staticmethod
    def _kill_group(popen: subprocess.Popen, grace_s: float, first: int = signal.SIGTERM) -> None:
        """`first` to the process group, wait `grace_s`, then SIGKILL and wait."""
        for sig, wait_s in ((first, grace_s), (signal.SIGKILL, 10.0)):
            if popen.poll() is not None:
                return
            try:
                os.killpg(popen.pid, sig)
            except ProcessLookupError:
                pass  # the group is gone; reap the leader below
            try:
                popen.wait(wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 60.0,
        netns: str | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess:
        """Run a short command to completion, capturing its output (text)."""
        full = netns_prefix(netns) + [str(a) for a in argv]
        require_program(full[0])
        if netns:
            require_program(str(argv[0]))
        try:
            done = subprocess.run(
                full, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentMissing(
                f"`{' '.join(full)}` did not finish within {timeout:.0f} s.",
                fix="check the host's load and that the program is not waiting for input.",
            ) from exc
        if check and done.returncode != 0:
            raise EnvironmentMissing(
                f"`{' '.join(full)}` failed (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[:500]}",
                fix="run `idsbench doctor` to check the host, and run as root.",
            )
        return done


def wait_all(children: Sequence[Child], timeout: float | None) -> bool:
    """Wait for every child; False if the deadline passed with some still running."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for child in children:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            child.wait(remaining)
        except subprocess.TimeoutExpired:
            return False
    return True
