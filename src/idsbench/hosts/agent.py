"""The idsbench agent: `python -m idsbench.hosts.agent`, started by the controller over SSH.

It serves requests (hosts/protocol.py) on stdin/stdout, one at a time, and runs the timing-critical
steps on this host: on a sensor host a whole sample (setup, sensor, monitor, drain, stop, counters:
`run.sample.SampleRun` with the remote parts of `hosts.sensor_side`), on a sender host the
replayers (`run.replay.TcpreplaySender`, `hosts.sender_side`). Its files live under --workdir:
`traces/` (by sha256), `runs/<campaign>/` (sample directories until fetched), `state/` (the
teardown state: a killed agent's leftovers are undone when the next one starts), `cache/`.

When its stdin closes (the controller or the connection died), SIGTERM or SIGHUP arrive, it unwinds
the running step's teardown stack and exits: nothing it started keeps running.
"""

from __future__ import annotations

import argparse
import base64
import os
import queue
import shutil
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import IO, TypeVar

from pydantic import BaseModel

from idsbench import __version__
from idsbench.errors import IdsbenchError, InputError
from idsbench.hosts import protocol
from idsbench.hosts.digest import digest
from idsbench.hosts.protocol import (
    PROTOCOL,
    Chunk,
    ClockReading,
    Empty,
    ErrorDoc,
    Event,
    FileList,
    GetArgs,
    Hello,
    NicArgs,
    NicCounters,
    PathArgs,
    ProbeResult,
    PutArgs,
    Ready,
    RemoteCampaign,
    Reply,
    Request,
    Response,
    Side,
    Stat,
    Upcall,
    file_info,
    list_files,
)

M = TypeVar("M", bound=BaseModel)



class Channel:
    """The agent's end of the protocol (requests in, results/upcalls/events out)."""

    def __init__(self, out: IO[bytes], inp: IO[bytes], *, password_line: bool = False):
        self.out = out
        self.lines: queue.Queue[bytes | None] = queue.Queue()  # None: stdin closed
        self._upcalls = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._read, args=(inp, password_line), name="stdin", daemon=True).start()

    def _read(self, inp: IO[bytes], password_line: bool) -> None:
        for line in inp:
            if password_line:
                # The controller sent the sudo password first; sudo did not read it when it needed
                # none (NOPASSWD, cached): then it is dropped here, never parsed or logged.
                password_line = False
                if not line.startswith(b'{"id":'):
                    continue
            self.lines.put(line)
        self.lines.put(None)
        os.kill(os.getpid(), signal.SIGTERM)  # unwind whatever runs: the controller is gone

    def send(self, msg: BaseModel) -> None:
        with self._lock:
            self.out.write(protocol.encode(msg))
            self.out.flush()

    def receive(self) -> protocol.Line:
        while True:
            try:
                item = self.lines.get(timeout=1.0)
            except queue.Empty:
                continue
            if item is None:
                self.lines.put(None)
                raise KeyboardInterrupt("controller gone")
            return protocol.decode(item)

    def upcall(self, op: str, args: BaseModel, reply: type[M]) -> M:
        """Ask the controller (e.g. to run the replay on the sender host) and wait for its answer."""
        self._upcalls += 1
        ident = self._upcalls
        self.send(Upcall(upcall=ident, op=op, args=protocol.dump(args)))
        msg = self.receive()
        if not isinstance(msg, Reply) or msg.reply != ident:
            raise IdsbenchError(f"protocol error: expected the reply to upcall {ident}, got {str(msg)[:200]}")
        if not msg.ok:
            err = msg.error or ErrorDoc(type="IdsbenchError", message=f"upcall {op!r} failed")
            raise IdsbenchError(err.message, fix=err.fix)
        return protocol.validate_as(reply, msg.result, f"the controller's answer to {op!r}")

    def phase(self, name: str) -> None:
        self.send(Event(event="phase", name=name))


class Agent:
    def __init__(self, name: str, role: str, workdir: Path, iface: str | None, channel: Channel):
        self.name, self.role, self.workdir, self.iface, self.ch = name, role, workdir, iface, channel
        self.state_dir = workdir / "state"
        self.cache_dir = workdir / "cache"
        self.side: Side | None = None  # SensorSide | SenderSide once a campaign is open
        self.cleaned: list[str] = []

    def path(self, rel: str) -> Path:
        """A path under the workdir (the controller never names one outside it)."""
        p = (self.workdir / rel).resolve()
        if p != self.workdir and self.workdir not in p.parents:
            raise InputError(f"{rel} is outside the agent's workdir {self.workdir}.")
        return p

    def serve(self) -> None:
        while True:
            msg = self.ch.receive()
            if not isinstance(msg, Request):
                raise IdsbenchError(f"protocol error: expected a request, got {str(msg)[:200]}")
            try:
                result = self.dispatch(msg)
                self.ch.send(Response(id=msg.id, ok=True, result=protocol.dump(result)))
            except IdsbenchError as exc:
                self.ch.send(Response(id=msg.id, ok=False, error=ErrorDoc.of(exc)))
            except Exception as exc:  # a bug or an OS error: the controller fails the step, the log has the trace
                traceback.print_exc(file=sys.stderr)
                self.ch.send(Response(id=msg.id, ok=False, error=ErrorDoc.of(exc)))
            if msg.op == "bye":
                return

    def dispatch(self, req: Request) -> BaseModel:
        op = req.op
        if op == "hello":
            return self.hello()
        if op == "clock":
            return ClockReading(t=time.time())
        if op == "bye":
            if self.side is not None:
                self.side.close()
            return Empty()
        if op == "put":
            return self.put(req.args_as(PutArgs))
        if op == "get":
            return self.get(req.args_as(GetArgs))
        if op == "stat":
            rel = req.args_as(PathArgs).path
            p = self.path(rel)
            return Stat(file=file_info(p, rel) if p.is_file() else None)
        if op == "list":
            d = self.path(req.args_as(PathArgs).path)
            return FileList(files=list_files(d) if d.is_dir() else [])
        if op == "remove":
            p = self.path(req.args_as(PathArgs).path)
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
            return Empty()
        if op == "probe":
            from idsbench.probe.collect import collect

            return ProbeResult(probe=collect(interfaces=[self.iface] if self.iface else [], sensor=self.role == "sensor"))
        if op == "nic":
            from idsbench.hosts.sensor_side import nic_counters

            return NicCounters(counters=nic_counters(str(req.args_as(NicArgs).iface or self.iface)))
        if op == "open_campaign":
            self.side = self._side(req.args_as(RemoteCampaign))
            return self.side.opened
        if self.side is None:
            raise IdsbenchError(f"{op!r} before open_campaign")
        return self.side.dispatch(req, self.ch)

    def _side(self, campaign: RemoteCampaign) -> Side:
        if self.side is not None:
            self.side.close()
        if self.role == "sensor":
            from idsbench.hosts.sensor_side import SensorSide

            return SensorSide(self, campaign)
        from idsbench.hosts.sender_side import SenderSide

        return SenderSide(self, campaign)

    def hello(self) -> Hello:
        from idsbench.hosts.facts import host_facts

        return Hello.model_validate({
            "protocol": PROTOCOL, "version": __version__, "digest": digest(), "hostname": socket.gethostname(),
            "pid": os.getpid(), "python": sys.version.split()[0], "time": time.time(), "cleaned": self.cleaned,
            **host_facts(self.role, self.iface)})

    def put(self, args: PutArgs) -> Stat:
        p = self.path(args.path)
        part = p.with_name(p.name + ".part")
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(part, "r+b" if args.offset else "wb") as fh:
            fh.truncate(args.offset)
            fh.seek(args.offset)
            fh.write(base64.b64decode(args.data))
        if args.final:
            got = file_info(part, args.path)
            if got.sha256 != args.sha256:
                part.unlink(missing_ok=True)
                raise InputError(f"upload of {args.path} arrived corrupt (sha256 {got.sha256[:16]}…).",
                                 fix="retry; check the host's disk.")
            os.replace(part, p)
            return Stat(file=got)
        return Stat()

    def get(self, args: GetArgs) -> Chunk:
        p = self.path(args.path)
        with open(p, "rb") as fh:
            fh.seek(args.offset)
            data = fh.read(args.length)
        return Chunk(data=base64.b64encode(data).decode(), eof=args.offset + len(data) >= p.stat().st_size)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m idsbench.hosts.agent")
    ap.add_argument("--name", required=True)
    ap.add_argument("--role", choices=("sender", "sensor", "collector"), required=True)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--iface")
    ap.add_argument("--password-line", action="store_true", help="stdin may start with a sudo password line")
    args = ap.parse_args(argv)
    # stdout carries the protocol only: anything else printing goes to stderr (the controller's log).
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _interrupt)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True, mode=0o700)
    # every cache (native programs, trace info, distinct copies) under the workdir, as provisioned
    os.environ["IDSBENCH_CACHE"] = str(workdir / "cache")
    channel = Channel(out, sys.stdin.buffer, password_line=args.password_line)
    agent = Agent(args.name, args.role, workdir, args.iface, channel)
    from idsbench.teardown import cleanup_stale

    removed, failures = cleanup_stale(agent.state_dir)  # what a killed agent left behind
    agent.cleaned = removed + failures
    code = 0
    channel.send(Ready(ready=True, protocol=PROTOCOL))  # the controller sends nothing before this
    try:
        agent.serve()
    except KeyboardInterrupt:
        print(f"idsbench agent {args.name}: interrupted, torn down", file=sys.stderr)
        code = 130
    finally:
        if agent.side is not None:
            agent.side.close()
    return code


if __name__ == "__main__":
    status = main()
    sys.stderr.flush()
    # The stdin reader is a daemon thread blocked in read(): leave without interpreter finalization
    # (which would wait on the stdin lock); everything the agent started is torn down by now.
    os._exit(status)
