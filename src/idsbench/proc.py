"""The one way idsbench runs other programs (the few direct calls elsewhere say why they cannot use it).

- `run(argv, timeout=…)`: a short command to completion (output captured, killed at the timeout).
- `Supervisor(stack).start(argv, …)`: a long-running child in its own session, optionally in a
  network namespace (`ip netns exec`), a cgroup, on given CPUs and with extra descriptors — set
  by the exec shim (`execshim.py`), never by `preexec_fn` — and registered in the teardown stack
  as a `ProcessResource` until it has been reaped.
- `terminate(...)`: the ONE signal → wait → SIGKILL routine (children, stale PIDs, daemons).
argv lists only, never a shell.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ClassVar

from idsbench import execshim
from idsbench.errors import EnvironmentMissing
from idsbench.procinfo import is_zombie, process_starttime, same_process_alive
from idsbench.teardown import TeardownStack, resource_kind, transient

# Debian package that provides a program, for "not found" errors.
PACKAGE_OF = {
    "suricata": "suricata (Debian: from <codename>-backports)",
    "tcpreplay": "tcpreplay",
    "ip": "iproute2",
    "ethtool": "ethtool",
    "capinfos": "wireshark-common",
    "tshark": "tshark",
    "chromium": "chromium",
    "tc": "iproute2",
    "perf": "linux-perf",
    "tcpdump": "tcpdump",
    "stdbuf": "coreutils",
    "podman": "podman",
    "qemu-system-x86_64": "qemu-system-x86",
    "debootstrap": "debootstrap",
    "ansible-playbook": "ansible-core",
    "ssh": "openssh-client",
}
EXECSHIM = Path(execshim.__file__)


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


def run(argv: Sequence[str], *, timeout: float = 60.0, netns: str | None = None, check: bool = True,
        input: str | None = None, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a short command to completion in its own session, capturing its output (text).

    `cwd`: where it runs (programs that drop files into their working directory, e.g. conmon's `oom`
    marker, write them there instead of the user's directory).
    Needs no teardown stack: the command is killed (whole session) when `timeout` passes, and
    `EnvironmentMissing` names the command, its exit status and output when it fails and `check`."""
    full = netns_prefix(netns) + [str(a) for a in argv]
    require_program(full[0])
    if netns:
        require_program(str(argv[0]))
    try:
        done = subprocess.run(
            full, capture_output=True, text=True, timeout=timeout, start_new_session=True, env=env,
            cwd=cwd, input=input, stdin=None if input is not None else subprocess.DEVNULL,
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


def terminate(pid: int, starttime: int | None, *, group: bool = True, first: int = signal.SIGTERM,
              grace_s: float = 5.0, kill_wait_s: float = 5.0,
              reaped: Callable[[], bool] | None = None) -> None:
    """`first` to the process (group), wait up to `grace_s`, then SIGKILL and wait `kill_wait_s`.

    Tolerant of processes that are gone (or whose PID was recycled: `starttime` tells them apart).
    `reaped` (e.g. a Popen's poll) says the child exited, for a child of ours that is a zombie."""
    def gone() -> bool:
        if reaped is not None and reaped():
            return True
        return not same_process_alive(pid, starttime) or is_zombie(pid)

    for sig, wait_s in ((first, grace_s), (signal.SIGKILL, kill_wait_s)):
        if gone():
            return
        try:
            os.killpg(pid, sig) if group else os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if gone():
                return
            time.sleep(0.02)


@resource_kind
@dataclass(frozen=True)
class ProcessResource:
    """A child process (and its process group) idsbench started."""

    kind: ClassVar[str] = "process"
    pid: int
    starttime: int | None
    name: str
    grace_s: float = 5.0
    popen: subprocess.Popen[bytes] | None = transient()

    def undo(self) -> None:
        popen = self.popen
        terminate(self.pid, self.starttime, grace_s=self.grace_s,
                  reaped=(lambda: popen.poll() is not None) if popen is not None else None)
        if popen is not None:
            try:
                popen.wait(5.0)
            except subprocess.TimeoutExpired:
                pass

    def describe(self) -> str:
        return f"process {self.name} (pid {self.pid})"


@dataclass
class Child:
    """A started child process. `returncode` is set once it has been reaped."""

    name: str
    argv: list[str]
    popen: subprocess.Popen[bytes]
    token: int
    _files: list[IO[Any]]

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


def shim_argv(argv: Sequence[str], *, cpus: Sequence[int] | None = None,
              cgroup_procs: Sequence[Path] = (), open_fds: dict[int, Path] | None = None) -> list[str]:
    """argv prefixed by the exec shim when anything must be set up before exec (else argv)."""
    opts: list[str] = []
    for procs in cgroup_procs:
        opts += ["--cgroup-procs", str(procs)]
    if cpus:
        opts += ["--cpus", ",".join(str(c) for c in sorted(set(cpus)))]
    for fd, path in sorted((open_fds or {}).items()):
        opts += ["--open", f"{fd}={path}"]
    if not opts:
        return [str(a) for a in argv]
    return [sys.executable, "-I", "-S", str(EXECSHIM), *opts, "--", *(str(a) for a in argv)]


class Supervisor:
    """Starts long-running children and registers them in `teardown`."""

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
        open_fds: dict[int, Path] | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        grace_s: float = 5.0,
    ) -> Child:
        require_program(str(argv[0]))
        # The shim goes first: `ip netns exec` remounts /sys, hiding the cgroup filesystem.
        full = shim_argv(netns_prefix(netns) + [str(a) for a in argv], cpus=cpus, cgroup_procs=cgroup_procs,
                         open_fds=open_fds)
        require_program(full[0])
        files: list[IO[Any]] = []
        out: IO[Any] | int = subprocess.DEVNULL
        if stdout:
            out = open(stdout, "ab")
            files.append(out)
        err: IO[Any] | int
        if stderr is None:
            err = subprocess.STDOUT if stdout else subprocess.DEVNULL
        else:
            err = open(stderr, "ab")
            files.append(err)
        try:
            popen = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd,
                                     start_new_session=True)
        except BaseException:
            for fh in files:
                fh.close()
            raise
        token = self.teardown.push(ProcessResource(popen.pid, process_starttime(popen.pid), name,
                                                   grace_s=grace_s, popen=popen))
        return Child(name=name, argv=full, popen=popen, token=token, _files=files)

    def stop(self, child: Child, timeout: float = 10.0, sig: int = signal.SIGTERM) -> int | None:
        """Signal, wait up to `timeout`, then SIGKILL the group. Tolerates dead children."""
        terminate(child.pid, None, first=sig, grace_s=timeout, reaped=lambda: child.poll() is not None)
        try:
            child.wait(5.0)
        except subprocess.TimeoutExpired:
            pass
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

    def run(self, argv: Sequence[str], *, timeout: float = 60.0, netns: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """A short command to completion (see the module-level `run`)."""
        return run(argv, timeout=timeout, netns=netns, check=check)


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
