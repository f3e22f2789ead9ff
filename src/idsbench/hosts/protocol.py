"""The controller ⇄ agent protocol: JSON lines over the one SSH connection to a host, every line a
model of this module.

    agent → controller   Ready     {"ready": true, "protocol": P}             (first; nothing is sent before)
    controller → agent   Request   {"id": N, "op": NAME, "args": {...}}
    agent → controller   Response  {"id": N, "ok": true, "result": {...}}  |  {"id": N, "ok": false, "error": ERR}
    agent → controller   Upcall    {"upcall": K, "op": NAME, "args": {...}}   (while op N runs: "nic", "replay")
    controller → agent   Reply     {"reply": K, "ok": true, "result": {...}}  |  {"reply": K, "ok": false, "error": ERR}
    agent → controller   Event     {"event": "phase", "name": ...}
    ERR = ErrorDoc {"type": "SensorFailed"|"SpecError"|…, "message": ..., "fix": ...}

`args` and `result` are the op's own models (below: `PathArgs`, `Chunk`, `SampleDone`, …), dumped to
JSON by the sender and validated by the receiver (`Call.args_as`, `Call.result_as`). Files travel in
base64 chunks (`put`/`get`), each file's sha256 checked at the receiving end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from idsbench import errors
from idsbench.errors import IdsbenchError
from idsbench.monitor.netdev import IfCounters
from idsbench.probe.iommu import IommuFacts, PciDevice
from idsbench.probemodel import HostProbe
from idsbench.run.verdict import ReplayerFacts
from idsbench.spec import Spec, spec_from_dict
from idsbench.store.environment import sha256_file
from idsbench.store.schema import ReplayRecord, SampleSummary, TraceRecord

CHUNK = 1 << 20  # raw bytes per file chunk
PROTOCOL = 2     # 2: typed op models (hello, stat, put, nic, open_campaign, sample, replay)

JsonObject = dict[str, JsonValue]
M = TypeVar("M", bound=BaseModel)


class HostLost(IdsbenchError):
    """The SSH connection to a host ended (host down, unreachable, agent killed)."""

    who = "host unreachable"

    def __init__(self, host: str, detail: str, fix: str | None = None):
        self.host, self.detail = host, detail
        super().__init__(f"host {host} became unreachable: {detail}",
                         fix=fix or f"check that {host} is up and reachable over SSH (`idsbench hosts check`), "
                                    "then complete the campaign with `idsbench run SPEC --out DIR --resume`.")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- the lines -----------------------------------------------------------------------------------

class ErrorDoc(_Model):
    type: str
    message: str
    fix: str | None = None

    @classmethod
    def of(cls, exc: BaseException) -> ErrorDoc:
        if isinstance(exc, IdsbenchError):
            return cls(type=type(exc).__name__, message=exc.message, fix=exc.fix)
        return cls(type=type(exc).__name__, message=f"{type(exc).__name__}: {exc}")

    def raise_on(self, host: str) -> None:
        """Re-raise an agent's error on the controller as the same idsbench error, naming the host."""
        kind = getattr(errors, self.type, None)
        message = f"on host {host}: {self.message}"
        if isinstance(kind, type) and issubclass(kind, IdsbenchError):
            raise kind(message, fix=self.fix)
        raise errors.SensorFailed(message, fix=self.fix or f"see the agent log of {host} in the campaign's hosts/ "
                                                           "directory.")


class Ready(_Model):
    ready: bool
    protocol: int


class Request(_Model):
    id: int
    op: str
    args: JsonObject = Field(default_factory=dict)

    def args_as(self, model: type[M]) -> M:
        return validate_as(model, self.args, f"the arguments of {self.op!r}")


class Response(_Model):
    id: int
    ok: bool
    result: JsonObject = Field(default_factory=dict)
    error: ErrorDoc | None = None

    def result_as(self, model: type[M], host: str) -> M:
        if not self.ok:
            (self.error or ErrorDoc(type="IdsbenchError", message="the agent failed without a reason")).raise_on(host)
        return validate_as(model, self.result, f"the agent's answer on host {host}")


class Upcall(_Model):
    upcall: int
    op: str
    args: JsonObject = Field(default_factory=dict)

    def args_as(self, model: type[M]) -> M:
        return validate_as(model, self.args, f"the arguments of upcall {self.op!r}")


class Reply(_Model):
    reply: int
    ok: bool
    result: JsonObject = Field(default_factory=dict)
    error: ErrorDoc | None = None


class Event(_Model):
    event: str
    name: str = ""


Line = Ready | Request | Response | Upcall | Reply | Event


def encode(msg: BaseModel) -> bytes:
    return (msg.model_dump_json(exclude_none=True) + "\n").encode()


def decode(line: bytes) -> Line:
    """One protocol line as its model; ValueError for anything else."""
    doc = json.loads(line)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if "ready" in doc:
        return Ready.model_validate(doc)
    if "upcall" in doc:
        return Upcall.model_validate(doc)
    if "reply" in doc:
        return Reply.model_validate(doc)
    if "event" in doc:
        return Event.model_validate(doc)
    if "op" in doc:
        return Request.model_validate(doc)
    return Response.model_validate(doc)


def dump(model: BaseModel, exclude: set[str] | None = None) -> JsonObject:
    """An op's arguments or result as the JSON object a line carries."""
    return dict(model.model_dump(mode="json", exclude=exclude))


def validate_as(model: type[M], doc: JsonObject, what: str) -> M:
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise IdsbenchError(f"protocol error: {what} do not fit {model.__name__} "
                            f"({'.'.join(map(str, err['loc']))}: {err['msg']}).",
                            fix="controller and host must run the same idsbench build (`idsbench hosts provision`).") \
            from exc


# --- the ops' arguments and results ----------------------------------------------------------------

class Empty(_Model):
    """No arguments / no result (bye, remove, config_test)."""


class FileInfo(_Model):
    name: str      # relative to the directory listed
    size: int
    sha256: str


class InterfaceFacts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str | None = None
    exists: bool = False
    mtu: int | None = None
    operstate: str | None = None
    carrier: bool | None = None


class VfioFacts(BaseModel):
    """The IOMMU side of a sensor host and its vm-vfio NIC (`probe.iommu`, gathered by hosts/facts.py)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    iommu: IommuFacts
    device: PciDevice | None = None      # the function named by idsbench_vfio_device …
    pf: PciDevice | None = None          # … or the PF behind idsbench_sriov_pf
    pf_interface: str | None = None


class HostFacts(BaseModel):
    """What a host has for its role (`hosts.facts`: sent to `python3 -` by `hosts check`, part of the
    agent's hello). Lenient: a host of another build still says who it is."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    role: str = ""
    uid: int | None = None
    sudo_without_password: bool = False
    cpus: int | None = None
    python3: str | None = None
    suricata: str | None = None
    tcpreplay: str | None = None
    ip: bool = False
    ethtool: bool = False
    interface: InterfaceFacts = Field(default_factory=InterfaceFacts)
    venv_python: str | None = None       # `hosts check` only
    idsbench_digest: str | None = None   # `hosts check` only
    vfio: VfioFacts | None = None        # `hosts check` of a sensor naming a vm-vfio NIC


class Hello(HostFacts):
    """`hello`: the agent's build and the host's facts."""

    protocol: int = 0
    version: str = ""
    digest: str = ""
    hostname: str = ""
    pid: int = 0
    python: str = ""
    time: float = 0.0
    cleaned: list[str] = Field(default_factory=list)  # what a killed agent left, undone at start

    def environment(self) -> JsonObject:
        """What the campaign file records of the host (no time, pid, or cleanup of this start)."""
        return dump(self, exclude={"time", "cleaned", "pid", "venv_python", "idsbench_digest"})


class ClockReading(_Model):
    t: float


class PathArgs(_Model):
    path: str  # workdir-relative


class PutArgs(_Model):
    path: str
    offset: int
    data: str              # base64
    final: bool
    sha256: str | None = None  # of the whole file, with the final chunk


class GetArgs(_Model):
    path: str
    offset: int
    length: int


class Chunk(_Model):
    data: str   # base64
    eof: bool


class Stat(_Model):
    """`stat` and `put`: the file, None when missing (or not complete yet)."""

    file: FileInfo | None = None


class FileList(_Model):
    files: list[FileInfo] = Field(default_factory=list)


class ProbeResult(_Model):
    probe: HostProbe


class NicArgs(_Model):
    iface: str | None = None  # default: the agent's interface


class NicCounters(_Model):
    counters: IfCounters | None = None


class RemoteCampaign(_Model):
    """`open_campaign`: what a host needs to run its part of a campaign. Paths are relative to the
    agent's workdir (uploaded there by the controller)."""

    key: str                                  # the campaign's directory under <workdir>/runs/
    spec: JsonObject                          # Spec.model_dump(mode="json"): `load_spec()` checks it there
    traces: dict[str, TraceRecord]            # path: workdir-relative on senders
    rules: tuple[str, ...] = ()               # builtin:… or workdir-relative rule files (sensors)
    config_overlay: str | None = None         # workdir-relative (sensors)
    name_prefix: str = "ib"
    cases: tuple[str, ...] = ()               # the case ids this host's pair runs
    peer_interface: str | None = None         # the other end's NIC (recorded, not used)

    def load_spec(self) -> Spec:
        """The controller's spec (SpecError naming the key when it is not one)."""
        return spec_from_dict(self.spec, source="the controller's spec")


class EngineInfo(_Model):
    version: str
    build_info: JsonObject = Field(default_factory=dict)
    rules: list[str] = Field(default_factory=list)


class SensorOpened(_Model):
    engines: dict[str, EngineInfo]


class SenderOpened(_Model):
    copies: int  # distinct-flow trace copies made


class SampleArgs(_Model):
    case_id: str
    index: int


class ReplayArgs(_Model):
    case_id: str
    index: int
    timeout_s: float


class Replayed(_Model):
    """The answer to the sensor's `replay` upcall: the sender's record (on the sensor host's clock)."""

    record: ReplayRecord
    facts: tuple[ReplayerFacts, ...] = ()

    def shifted(self, seconds: float) -> Replayed:
        """The record moved onto another host's clock (+ seconds)."""
        record = self.record.model_copy(update={"start_unix": self.record.start_unix + seconds,
                                                "end_unix": self.record.end_unix + seconds})
        return self.model_copy(update={"record": record})


class ReplayDone(Replayed):
    """`replay` on the sender host: the record (its clock) and the files to fetch."""

    dir: str                                       # workdir-relative
    files: list[FileInfo] = Field(default_factory=list)


class SampleDone(_Model):
    """`sample` on the sensor host: the summary, its warnings and the files to fetch."""

    summary: SampleSummary
    warnings: list[str] = Field(default_factory=list)
    dir: str
    files: list[FileInfo] = Field(default_factory=list)


def file_info(path: Path, name: str) -> FileInfo:
    return FileInfo(name=name, size=path.stat().st_size, sha256=sha256_file(path))


def list_files(directory: Path) -> list[FileInfo]:
    """Every file under `directory`, named relative to it (what the controller fetches)."""
    return [file_info(p, p.relative_to(directory).as_posix())
            for p in sorted(directory.rglob("*")) if p.is_file()]


# --- what a side (hosts.sensor_side, hosts.sender_side) sees of the agent that hosts it -------------

class AgentChannel(Protocol):
    """The agent's end of the connection, as a running request uses it."""

    def upcall(self, op: str, args: BaseModel, reply: type[M]) -> M: ...

    def phase(self, name: str) -> None: ...


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

    @property
    def opened(self) -> BaseModel: ...  # the answer to open_campaign

    def dispatch(self, request: Request, channel: AgentChannel) -> BaseModel: ...

    def close(self) -> None: ...

