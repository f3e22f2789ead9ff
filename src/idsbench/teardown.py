"""One teardown stack for everything a run creates, mirrored in a state file.

Every process, namespace, link, cgroup, container, daemon and VM directory is a typed `Resource`
record, pushed here by the module that creates it; each record knows how to undo itself.
`close()` undoes them newest first (also on errors and Ctrl-C, via the runner's single shutdown
path). The state file `<state_dir>/<run_id>.json` lists the live records with the module that
defines them, so `idsbench cleanup` can rebuild each record and undo what a run killed with
SIGKILL left behind: the same code for a live run and a stale one. This module knows no setup.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from idsbench import settings
from idsbench.procinfo import process_starttime, same_process_alive


class Resource(Protocol):
    """A frozen dataclass whose init fields are JSON values (fields with metadata transient=True
    hold live handles and are not saved); `undo()` removes the resource and tolerates it being
    gone already."""

    kind: ClassVar[str]

    def undo(self) -> None: ...

    def describe(self) -> str: ...


R = TypeVar("R")
_KINDS: dict[str, type[Any]] = {}


def resource_kind(cls: type[R]) -> type[R]:
    """Class decorator: register a Resource class so a stale state file can be undone."""
    kind = str(cls.__dict__["kind"])
    if kind in _KINDS and _KINDS[kind] is not cls:
        raise ValueError(f"resource kind {kind!r} is defined twice")
    _KINDS[kind] = cls
    return cls


def transient(default: Any = None) -> Any:
    """A dataclass field holding a live handle (a Popen, a Child): never written to the state file."""
    return field(default=default, compare=False, repr=False, metadata={"transient": True})


def to_record(res: Resource) -> dict[str, object]:
    values = {f.name: getattr(res, f.name) for f in dataclasses.fields(res)  # type: ignore[arg-type]
              if not f.metadata.get("transient")}
    return {"kind": res.kind, "module": type(res).__module__, **values}


def from_record(record: Mapping[str, object]) -> Resource:
    """Rebuild a record of a state file (importing the module that defines its kind)."""
    kind = str(record.get("kind"))
    if kind not in _KINDS and record.get("module"):
        importlib.import_module(str(record["module"]))
    cls = _KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown resource kind {kind!r} (module {record.get('module')!r})")
    names = {f.name for f in dataclasses.fields(cls) if not f.metadata.get("transient")}
    res: Resource = cls(**{k: v for k, v in record.items() if k in names})
    return res


@dataclass
class _Entry:
    token: int
    resource: Resource


@dataclass
class TeardownStack:
    """Resources in creation order; `close()` removes them newest first and reports failures."""

    state_dir: Path = field(default_factory=settings.state_dir)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    _entries: list[_Entry] = field(default_factory=list)
    _next: int = 0

    @property
    def state_file(self) -> Path:
        return self.state_dir / f"{self.run_id}.json"

    def push(self, res: Resource) -> int:
        """Register a resource (right after creating it); returns a token for forget/release."""
        self._next += 1
        self._entries.append(_Entry(self._next, res))
        self._save()
        return self._next

    def forget(self, token: int) -> None:
        """The resource is gone by other means (e.g. a process that exited on its own)."""
        self._entries = [e for e in self._entries if e.token != token]
        self._save()

    def release(self, token: int) -> None:
        """Remove one resource now."""
        for entry in [e for e in self._entries if e.token == token]:
            try:
                entry.resource.undo()
            finally:
                self.forget(token)

    def resources(self) -> list[Resource]:
        return [e.resource for e in self._entries]

    def close(self) -> list[str]:
        """Undo everything, newest first. Returns the failures (never raises)."""
        failures: list[str] = []
        while self._entries:
            entry = self._entries[-1]
            try:
                entry.resource.undo()
            except Exception as exc:  # keep tearing down the rest
                failures.append(f"{entry.resource.describe()}: {exc}")
            self._entries.pop()
            self._save()
        return failures

    def __enter__(self) -> TeardownStack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _save(self) -> None:
        if not self._entries:
            self.state_file.unlink(missing_ok=True)
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        me = os.getpid()
        doc = {"owner_pid": me, "owner_starttime": process_starttime(me),
               "resources": [to_record(e.resource) for e in self._entries]}
        tmp = self.state_file.with_suffix(f".tmp{me}")
        tmp.write_text(json.dumps(doc, indent=1))
        os.replace(tmp, self.state_file)


def cleanup_stale(state_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """Undo the resources of runs whose owner process is gone.

    Returns (removed, failures), each a list of human-readable lines. Only what a state file
    records is touched: similar-looking names that idsbench did not record survive."""
    state_dir = state_dir or settings.state_dir()
    removed: list[str] = []
    failures: list[str] = []
    if not state_dir.is_dir():
        return removed, failures
    for path in sorted(state_dir.glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            failures.append(f"{path}: unreadable state file ({exc}); remove it by hand")
            continue
        if same_process_alive(int(doc.get("owner_pid", 0)), doc.get("owner_starttime")):
            failures.append(f"{path}: run still active (pid {doc['owner_pid']}); stop it first")
            continue
        if undo_records(doc, removed, failures):
            path.write_text(json.dumps(doc, indent=1))
        else:
            path.unlink(missing_ok=True)
    return removed, failures


def undo_records(doc: dict[str, object], removed: list[str], failures: list[str]) -> bool:
    """Undo `doc["resources"]` newest first, appending to `removed` and `failures`; what could not
    be undone stays in `doc["resources"]`. True when something is left."""
    left = []
    records = doc.get("resources")
    for record in reversed(records if isinstance(records, list) else []):
        try:
            res = from_record(record)
            res.undo()
            removed.append(res.describe())
        except Exception as exc:  # keep removing the rest
            failures.append(f"{record.get('kind')} {record}: {exc}")
            left.append(record)
    doc["resources"] = list(reversed(left))
    return bool(left)
