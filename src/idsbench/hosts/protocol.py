"""The controller ⇄ agent protocol: JSON lines over the one SSH connection to a host.

    controller → agent   {"id": N, "op": NAME, "args": {...}}
    agent → controller   {"id": N, "ok": true, "result": {...}}  |  {"id": N, "ok": false, "error": ERR}
    agent → controller   {"upcall": K, "op": NAME, "args": {...}}   (while op N runs: e.g. "replay")
    controller → agent   {"reply": K, "ok": true, "result": {...}}  |  {"reply": K, "ok": false, "error": ERR}
    agent → controller   {"event": "phase", "name": ...}
    ERR = {"type": "SensorFailed"|"SpecError"|…, "message": ..., "fix": ...}

Files travel in base64 chunks (`put`/`get`), each file's sha256 checked at the receiving end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from idsbench import errors
from idsbench.errors import IdsbenchError
from idsbench.store.environment import sha256_file

CHUNK = 1 << 20  # raw bytes per file chunk
PROTOCOL = 1


class HostLost(IdsbenchError):
    """The SSH connection to a host ended (host down, unreachable, agent killed)."""

    who = "host unreachable"

    def __init__(self, host: str, detail: str, fix: str | None = None):
        self.host, self.detail = host, detail
        super().__init__(f"host {host} became unreachable: {detail}",
                         fix=fix or f"check that {host} is up and reachable over SSH (`idsbench hosts check`), "
                                    "then complete the campaign with `idsbench run SPEC --out DIR --resume`.")


class FileInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str      # relative to the directory listed
    size: int
    sha256: str


def file_info(path: Path, name: str) -> FileInfo:
    return FileInfo(name=name, size=path.stat().st_size, sha256=sha256_file(path))


def list_files(directory: Path) -> list[FileInfo]:
    """Every file under `directory`, named relative to it (what the controller fetches)."""
    return [file_info(p, p.relative_to(directory).as_posix())
            for p in sorted(directory.rglob("*")) if p.is_file()]


def encode(msg: dict[str, Any]) -> bytes:
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


def error_doc(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, IdsbenchError):
        return {"type": type(exc).__name__, "message": exc.message, "fix": exc.fix}
    return {"type": type(exc).__name__, "message": f"{type(exc).__name__}: {exc}", "fix": None}


def raise_error(doc: dict[str, Any], host: str) -> None:
    """Re-raise an agent's error on the controller as the same idsbench error, naming the host."""
    kind = getattr(errors, str(doc.get("type")), None)
    message = f"on host {host}: {doc.get('message')}"
    fix = doc.get("fix")
    if isinstance(kind, type) and issubclass(kind, IdsbenchError):
        raise kind(message, fix=fix)
    raise errors.SensorFailed(message, fix=fix or f"see the agent log of {host} in the campaign's hosts/ directory.")


class RemoteCampaign(BaseModel):
    """`open_campaign`: what a host needs to run its part of a campaign. Paths are relative to the
    agent's workdir (uploaded there by the controller)."""

    model_config = ConfigDict(frozen=True)

    key: str                                  # the campaign's directory under <workdir>/runs/
    spec: dict[str, Any]                      # Spec.model_dump(mode="json")
    traces: dict[str, dict[str, Any]]         # ref -> TraceRecord (path: workdir-relative on senders)
    rules: tuple[str, ...] = ()               # builtin:… or workdir-relative rule files (sensors)
    config_overlay: str | None = None         # workdir-relative (sensors)
    name_prefix: str = "ib"
    cases: tuple[str, ...] = ()               # the case ids this host's pair runs
    peer_interface: str | None = None         # the other end's NIC (recorded, not used)


# --- what a side (hosts.sensor_side, hosts.sender_side) sees of the agent that hosts it -------------

class AgentChannel(Protocol):
    """The agent's end of the connection, as a running request uses it."""

    def upcall(self, op: str, args: dict[str, Any]) -> dict[str, Any]: ...

    def event(self, kind: str, **fields: Any) -> None: ...


class AgentEnv(Protocol):
    """The agent's host facts and workdir."""

    name: str
    role: str
    iface: str | None
    workdir: Path
    state_dir: Path
    cache_dir: Path

    def path(self, rel: str) -> Path: ...


class Side(Protocol):
    """A host's part of an open campaign: serves the ops of its role until closed."""

    result: dict[str, Any]  # the answer to open_campaign

    def dispatch(self, op: str, args: dict[str, Any], channel: AgentChannel) -> dict[str, Any]: ...

    def close(self) -> None: ...
