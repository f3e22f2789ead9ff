"""The host's half of the guest protocol (see guest/idsbench-init).

Control dir (shared as 9p tag `ibctl`, read-write): the host writes `guest.conf` (bash assignments)
and `sensor.argv` (NUL-separated: the stdout path, then the argv); the guest appends `status`
lines: `booted NCPU`, `clock T`, `started PID`, `exited RC OOM_KILLS`, `failed WHY`, `poweroff`.
Commands go the other way over the virtio-serial port: `clock T`, `run`, `stop`, `poweroff`.
"""

from __future__ import annotations

import re
import shlex
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench.errors import EnvironmentMissing, IdsbenchError, SensorFailed, SpecError
from idsbench.proc import Child
from idsbench.setups.vm.qemu import CTL_TAG, Share

GUEST_IF = "eth0"
# Kernel OOM killer lines on the guest console.
_OOM_RE = re.compile(r"Out of memory: Killed process|invoked oom-killer|oom-kill:")


def plan_shares(sample_dir: Path, read_only: Sequence[Path]) -> tuple[Share, ...]:
    """9p shares so the guest sees the sample dir (rw) and every read-only file at its host path.

    Files are shared through their directory. Parents come before children (mounted in that
    order); a directory already visible through an earlier share of the same or wider access is
    not shared again.
    """
    wanted: dict[Path, bool] = {Path(sample_dir).resolve(): False}
    for p in read_only:
        p = Path(p).resolve()
        d = p if p.is_dir() else p.parent
        wanted.setdefault(d, True)
    shares: list[Share] = []
    for path in sorted(wanted, key=lambda p: (len(p.parts), str(p))):
        ro = wanted[path]
        if path == Path("/"):
            raise SpecError("the VM cannot share the host's root directory with the guest.",
                            fix="keep rule files and the campaign directory out of /.")
        covered = any(_within(path, s.path) and (not s.readonly or ro) for s in shares)
        if not covered:
            shares.append(Share(tag=f"ib{len(shares)}", path=path, readonly=ro))
    return tuple(shares)


def _within(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def guest_conf(sample_dir: Path, shares: Sequence[Share], mtu: int, interval_s: int) -> str:
    """guest.conf, sourced by the guest init (every value shell-quoted)."""
    mounts = " ".join(f"{shlex.quote(s.tag)} {shlex.quote(str(s.path))} {'ro' if s.readonly else 'rw'}"
                      for s in shares)
    if any(s.tag == CTL_TAG for s in shares):
        raise ValueError(f"share tag {CTL_TAG} is reserved for the control dir")
    return "\n".join([
        "# written by idsbench (setups/vm_guest.py); sourced by the guest init",
        f"SAMPLE_DIR={shlex.quote(str(Path(sample_dir).resolve()))}",
        f"MOUNTS=({mounts})",
        f"CAPTURE_IF={GUEST_IF}",
        f"MTU={int(mtu)}",
        f"INTERVAL={int(interval_s)}",
    ]) + "\n"


def sensor_argv_file(stdout: Path, argv: Sequence[str]) -> bytes:
    items = [str(stdout), *map(str, argv)]
    if any("\0" in a for a in items):
        raise SpecError("a sensor argument contains a NUL byte.", fix="remove it from the spec.")
    return b"".join(a.encode() + b"\0" for a in items)


@dataclass(frozen=True)
class GuestStatus:
    booted: bool = False
    ncpu: int | None = None
    clock_set: bool = False
    sensor_pid: int | None = None
    exit_code: int | None = None
    oom_kills: int = 0
    failure: str | None = None


def parse_status(text: str) -> GuestStatus:
    booted, ncpu, clock_set, pid, rc, oom, failure = False, None, False, None, None, 0, None
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        fields = rest.split()
        if word == "booted":
            booted, ncpu = True, _int(fields[0]) if fields else None
        elif word == "clock":
            clock_set = True
        elif word == "started" and fields:
            pid = _int(fields[0])
        elif word == "exited" and fields:
            rc = _int(fields[0])
            oom = _int(fields[1]) or 0 if len(fields) > 1 else 0
        elif word == "failed":
            failure = rest or "unknown"
    return GuestStatus(booted, ncpu, clock_set, pid, rc, oom, failure)


def read_status(rundir: Path) -> GuestStatus:
    """The guest's status file as parsed so far (nothing yet: an empty status)."""
    return parse_status(read_status_text(rundir))


def read_status_text(rundir: Path) -> str:
    try:
        return (rundir / "status").read_text(errors="replace")
    except OSError:
        return ""


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def console_oom(text: str) -> bool:
    return bool(_OOM_RE.search(text))


def console_tail(text: str, lines: int = 15) -> str:
    return "\n  ".join(text.rstrip().splitlines()[-lines:])


class ControlPort:
    """The host end of the guest's virtio-serial port (qemu listens on a unix socket)."""

    def __init__(self, path: Path):
        self.path = path
        self._sock: socket.socket | None = None

    def connect(self, timeout_s: float, alive: Callable[[], bool] = lambda: True) -> None:
        deadline = time.monotonic() + timeout_s
        last: OSError | None = None
        while time.monotonic() < deadline and alive():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            try:
                sock.connect(str(self.path))
                self._sock = sock
                return
            except OSError as exc:
                sock.close()
                last = exc
                time.sleep(0.02)
        raise EnvironmentMissing(f"qemu's control socket {self.path} did not accept a connection "
                                 f"({last or 'qemu exited'}).",
                                 fix="see qemu.txt in the sample directory for qemu's own error.")

    def send(self, command: str) -> None:
        if self._sock is None:
            raise SensorFailed("the VM's control port is not connected.")
        try:
            self._sock.sendall(command.encode() + b"\n")
        except OSError as exc:
            raise SensorFailed(f"the VM's control port failed ({exc}).",
                               fix="the VM probably died; see console.log in the sample directory.") from exc

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class GuestWatch:
    """The host's view of one guest under qemu: its status file, and qemu's and the console's last
    words when it fails (raised as `error`, with `fix`)."""

    def __init__(self, rundir: Path, qemu: Child, *, console: Path, qemu_log: Path,
                 error: type[IdsbenchError], fix: str):
        self.rundir, self.qemu, self.console, self.qemu_log = rundir, qemu, console, qemu_log
        self.error, self.fix = error, fix

    def status(self) -> GuestStatus:
        return read_status(self.rundir)

    def wait(self, done: Callable[[GuestStatus], bool], timeout_s: float, what: str) -> bool:
        """Poll until `done`; False at the timeout; raises when the guest failed or qemu exited."""
        deadline = time.monotonic() + timeout_s
        while True:
            st = self.status()
            if done(st):
                return True
            if st.failure:
                raise self.failed(f"the guest failed to {what}: {st.failure}")
            if self.qemu.poll() is not None:
                raise self.failed(f"qemu exited (status {self.qemu.returncode}) before the guest could {what}")
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def require(self, done: Callable[[GuestStatus], bool], timeout_s: float, what: str) -> None:
        """`wait`, and a timeout raises too."""
        if not self.wait(done, timeout_s, what):
            raise self.failed(f"the guest did not {what} within {timeout_s:.0f} s")

    def boot(self, port: ControlPort, boot_timeout_s: float) -> None:
        """The start of the protocol: the guest boots, is sent the host's clock and sets it."""
        # qemu makes the socket while it starts (seconds, or minutes when it is emulated itself)
        port.connect(max(30.0, boot_timeout_s / 4), alive=lambda: self.qemu.poll() is None)
        self.require(lambda st: st.booted, boot_timeout_s, "boot")
        port.send(f"clock {time.time():.6f}")
        self.require(lambda st: st.clock_set, max(30.0, boot_timeout_s / 4), "set its clock")

    def tail(self, path: Path) -> str:
        try:
            return console_tail(path.read_text(errors="replace"))
        except OSError:
            return "(none)"

    def failed(self, what: str) -> IdsbenchError:
        return self.error(f"{what}. qemu said:\n  {self.tail(self.qemu_log)}\nGuest console:\n  "
                          f"{self.tail(self.console)}", fix=self.fix)
