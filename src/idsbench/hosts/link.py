"""The controller's end of one host's agent: ONE long-lived ssh process, JSON lines both ways.

    link = HostLink(host, known_hosts, stack, log_path).open()   # ssh + agent, `hello` answered
    link.call("clock", {})                                      # request → result (or the agent's error)
    link.call("sample", args, upcall=fn)                        # fn answers the agent's upcalls meanwhile
    link.put(local, "traces/x.pcap"); link.get("runs/…/eve.json", local, sha256)
    link.close()                                                # `bye`, then the ssh process is stopped

The ssh process is registered in the teardown stack like every child (a killed controller's ssh
is stopped by `idsbench cleanup`, and the agent, seeing its stdin close, tears down what it
started). A connection that ends raises HostLost naming the host and ssh's last words.
"""

from __future__ import annotations

import base64
import hashlib
import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TypeVar

from pydantic import BaseModel

from idsbench.errors import EnvironmentMissing, IdsbenchError
from idsbench.hosts import protocol
from idsbench.hosts.inventory import HostEntry
from idsbench.hosts.protocol import (
    CHUNK,
    Chunk,
    ClockReading,
    Empty,
    ErrorDoc,
    Event,
    FileInfo,
    GetArgs,
    Hello,
    HostLost,
    Line,
    PutArgs,
    Ready,
    Reply,
    Request,
    Response,
    Stat,
    Upcall,
)
from idsbench.hosts.ssh import agent_argv, ssh_argv
from idsbench.proc import ProcessResource, require_program, terminate
from idsbench.procinfo import process_starttime
from idsbench.store import atomic
from idsbench.teardown import TeardownStack

M = TypeVar("M", bound=BaseModel)
UpcallHandler = Callable[[Upcall], BaseModel]   # answers the agent's upcalls during a request
EventHandler = Callable[[Event], None]
OPEN_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 30.0  # ssh login + sudo + the agent's imports
CALL_TIMEOUT_S = 120.0
_EOF = object()


class HostLink:
    def __init__(self, host: HostEntry, known_hosts: Path, stack: TeardownStack, log_path: Path, *,
                 become_password: str | None = None, transport: Sequence[str] | None = None):
        self.host, self.known_hosts, self.stack, self.log_path = host, known_hosts, stack, log_path
        self.become_password = become_password
        self.transport = list(transport) if transport is not None else None  # tests: the agent without ssh
        self.hello = Hello()
        self._popen: subprocess.Popen[bytes] | None = None
        self._token: int | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        self._next = 0
        self._log: IO[bytes] | None = None
        self._log_start = 0

    # --- connection -------------------------------------------------------------------------
    def open(self) -> HostLink:
        if self.transport is None:
            require_program("ssh")
        with_password = self.become_password is not None and self.host.become == "sudo"
        argv = self.transport or ssh_argv(self.host, self.known_hosts, agent_argv(self.host, sudo_password=with_password),
                                          sudo_password=with_password)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self._log_start = self._log.tell()  # this connection's lines start here
        # Pipes to talk to the agent: the one child idsbench starts outside Supervisor.start
        # (which gives children no stdin); registered in the stack the same way.
        # direct: the agent speaks over the ssh child's stdin/stdout pipes, which proc's runners do not give
        self._popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                       start_new_session=True)
        popen = self._popen
        self._token = self.stack.push(ProcessResource(popen.pid, process_starttime(popen.pid), f"ssh {self.host.name}",
                                                      grace_s=5.0, popen=popen))
        threading.Thread(target=self._read, name=f"link-{self.host.name}", daemon=True).start()
        if with_password and self.become_password is not None:
            self._write((self.become_password + "\n").encode())
        # Nothing more is written before the agent is up: a sudo that rejected the password must
        # not read protocol lines as further attempts.
        try:
            ready = self._recv(READY_TIMEOUT_S, "start")
        except HostLost as exc:
            missing = agent_missing(self.host, self._log_tail(), self._popen.poll() if self._popen else None)
            if missing is not None:
                raise missing from exc
            if with_password:
                raise HostLost(self.host.name, f"{exc.detail}; did sudo accept the become password?",
                               fix="check the password (--ask-become-pass) and that the user may sudo there.") from exc
            raise
        if not isinstance(ready, Ready) or not ready.ready:
            raise HostLost(self.host.name, f"the agent did not start properly: {str(ready)[:200]}")
        if ready.protocol != protocol.PROTOCOL:
            raise EnvironmentMissing(
                f"host {self.host.name} runs another idsbench build (agent protocol {ready.protocol}, "
                f"the controller's {protocol.PROTOCOL}).", fix=PROVISION_FIX)
        self.hello = self.call("hello", Empty(), Hello, timeout=OPEN_TIMEOUT_S)
        return self

    @property
    def alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def close(self, timeout_s: float = 10.0) -> None:
        popen = self._popen
        if popen is None:
            return
        if popen.poll() is None:
            try:
                self.call("bye", Empty(), Empty, timeout=timeout_s)
            except IdsbenchError:
                pass
            try:
                popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                pass
        terminate(popen.pid, None, grace_s=2.0, reaped=lambda: popen.poll() is not None)
        try:
            popen.wait(5.0)
        except subprocess.TimeoutExpired:
            pass
        if self._token is not None:
            self.stack.forget(self._token)
            self._token = None
        for stream in (popen.stdin, popen.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if self._log is not None:
            self._log.close()
        self._popen = None

    # --- requests ---------------------------------------------------------------------------
    def call(self, op: str, args: BaseModel, reply: type[M], *, upcall: UpcallHandler | None = None,
             event: EventHandler | None = None, timeout: float | None = CALL_TIMEOUT_S) -> M:
        """Send one request; answer upcalls until its result arrives, as `reply` (the agent's error
        raised as the same idsbench error, naming the host). `timeout` bounds the wait for each
        message (None: wait as long as the connection lives)."""
        self._next += 1
        ident = self._next
        self._send(Request(id=ident, op=op, args=protocol.dump(args)))
        while True:
            msg = self._recv(timeout, op)
            if isinstance(msg, Upcall):
                self._answer(msg, upcall)
            elif isinstance(msg, Event):
                if event is not None:
                    event(msg)
            elif isinstance(msg, Response) and msg.id == ident:
                return msg.result_as(reply, self.host.name)

    def _answer(self, msg: Upcall, upcall: UpcallHandler | None) -> None:
        try:
            if upcall is None:
                raise IdsbenchError(f"unexpected upcall {msg.op!r}")
            answer = Reply(reply=msg.upcall, ok=True, result=protocol.dump(upcall(msg)))
        except IdsbenchError as exc:
            answer = Reply(reply=msg.upcall, ok=False, error=ErrorDoc.of(exc))
        self._send(answer)

    # --- files ------------------------------------------------------------------------------
    def put(self, local: Path, remote: str) -> FileInfo:
        """Copy a file to the host (relative to its workdir); sha256 checked there."""
        h = hashlib.sha256()
        size = 0
        with open(local, "rb") as fh:
            while True:
                data = fh.read(CHUNK)
                h.update(data)
                final = len(data) < CHUNK
                self.call("put", PutArgs(path=remote, offset=size, data=base64.b64encode(data).decode(), final=final,
                                         sha256=h.hexdigest() if final else None), Stat)
                size += len(data)
                if final:
                    break
        return FileInfo(name=remote, size=size, sha256=h.hexdigest())

    def get(self, remote: str, local: Path, info: FileInfo) -> None:
        """Copy a file from the host; HostLost/IdsbenchError if its sha256 differs from `info`."""
        h = hashlib.sha256()
        with atomic.receiving(local) as fh:  # the file appears whole, or not at all
            offset = 0
            while True:
                got = self.call("get", GetArgs(path=remote, offset=offset, length=CHUNK), Chunk)
                data = base64.b64decode(got.data)
                fh.write(data)
                h.update(data)
                offset += len(data)
                if got.eof:
                    break
            if h.hexdigest() != info.sha256 or offset != info.size:
                raise IdsbenchError(f"copy of {remote} from {self.host.name} is corrupt: {offset} bytes, sha256 "
                                    f"{h.hexdigest()[:16]}… instead of {info.size} bytes, {info.sha256[:16]}….",
                                    fix="re-run the sample (`--resume`); check the host's disk.")

    # --- plumbing ---------------------------------------------------------------------------
    def _send(self, msg: BaseModel) -> None:
        self._write(protocol.encode(msg))

    def _write(self, data: bytes) -> None:
        popen = self._popen
        if popen is None or popen.stdin is None:
            raise HostLost(self.host.name, "not connected")
        try:
            popen.stdin.write(data)
            popen.stdin.flush()
        except (OSError, ValueError) as exc:  # broken pipe, or a pipe closed already
            raise HostLost(self.host.name, f"connection closed ({exc}); {self._last_words()}") from exc

    def _read(self) -> None:
        popen = self._popen
        assert popen is not None and popen.stdout is not None
        for line in popen.stdout:
            self._lines.put(line)
        self._lines.put(_EOF)

    def _recv(self, timeout: float | None, op: str) -> Line:
        try:
            item = self._lines.get(timeout=timeout)
        except queue.Empty as exc:
            raise HostLost(self.host.name, f"no answer to {op!r} within {timeout:.0f} s") from exc
        if item is _EOF:
            self._lines.put(_EOF)  # every later call sees it too
            popen = self._popen
            if popen is not None:
                try:
                    popen.wait(2.0)
                except subprocess.TimeoutExpired:
                    pass
            raise HostLost(self.host.name, f"the connection ended during {op!r}; {self._last_words()}")
        assert isinstance(item, bytes)
        try:
            return protocol.decode(item)
        except ValueError as exc:
            raise HostLost(self.host.name, f"the agent wrote {item[:200]!r}, not a protocol line") from exc

    def _log_tail(self) -> str:
        """What ssh and the agent wrote to stderr on this connection (its last 4 KiB)."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(self._log_start)
                return fh.read()[-4096:].decode(errors="replace")
        except OSError:
            return ""

    def _last_words(self) -> str:
        """ssh's (and the agent's) last stderr lines, for the error message."""
        code = self._popen.poll() if self._popen is not None else None
        tail = self._log_tail()[-2000:].strip().splitlines()[-3:]
        status = f"ssh exit {code}" if code is not None else "ssh still running"
        return status + (": " + " | ".join(tail) if tail else "")


PROVISION_FIX = "run `idsbench hosts provision --inventory FILE` (or SPEC): it installs this build on the host."
_NO_MODULE = re.compile(r"No module named '?([A-Za-z0-9_.]+)'?")


def agent_missing(host: HostEntry, stderr: str, exit_code: int | None) -> EnvironmentMissing | None:
    """Why an agent that never said `ready` could not start, when the host was reached but lacks
    idsbench (or runs another build): an EnvironmentMissing naming that, else None (then the host
    is unreachable as far as we know: ssh's words say why)."""
    where = f"{host.python}: " if host.python else ""
    for line in reversed(stderr.splitlines()):
        found = _NO_MODULE.search(line)
        if found is None:
            continue
        module = found.group(1)
        if module == "idsbench":
            return EnvironmentMissing(f"idsbench is not installed on host {host.name} ({where}{found.group(0)}).",
                                      fix=PROVISION_FIX)
        if module.startswith("idsbench."):
            return EnvironmentMissing(f"host {host.name} has another idsbench build, without {module} "
                                      f"({where}{found.group(0)}).", fix=PROVISION_FIX)
        return EnvironmentMissing(f"idsbench's dependencies are incomplete on host {host.name} ({where}"
                                  f"{found.group(0)}).", fix=PROVISION_FIX)
    # the login shell could not run the venv's python (exit 126/127: not found, not executable)
    if exit_code in (126, 127) and host.python and host.python in stderr:
        line = next(ln for ln in reversed(stderr.splitlines()) if host.python in ln)
        return EnvironmentMissing(f"idsbench is not installed on host {host.name}: its python {host.python} "
                                  f"cannot run ({line.strip()[-200:]}).", fix=PROVISION_FIX)
    return None


def measure_offset(link: HostLink, rounds: int = 5) -> tuple[float, float]:
    """(offset, uncertainty) of the host's clock vs ours, seconds: host − controller, from the round
    trip with the smallest delay."""
    best: tuple[float, float] | None = None
    for _ in range(rounds):
        t0 = time.time()
        t_host = link.call("clock", Empty(), ClockReading).t
        t1 = time.time()
        half = (t1 - t0) / 2
        if best is None or half < best[1]:
            best = (t_host - (t0 + half), half)
    assert best is not None
    return best
