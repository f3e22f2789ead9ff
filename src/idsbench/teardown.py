"""One teardown stack for everything a run creates, mirrored in a state file.

Every process, namespace, link and cgroup is pushed here as it is created. `close()` removes them
in reverse order (also on errors and Ctrl-C, via the runner's single shutdown path). The state file
`<state_dir>/<run_id>.json` lists what is still alive, so `idsbench cleanup` can remove what a run
killed with SIGKILL left behind. Removal is by kind, the same code for a live run and a stale one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

DEFAULT_STATE_DIR = Path("/run/idsbench")


def state_dir_from_env() -> Path:
    return Path(os.environ.get("IDSBENCH_STATE_DIR", str(DEFAULT_STATE_DIR)))


def process_starttime(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat); None if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[19])


def same_process_alive(pid: int, starttime: int | None) -> bool:
    current = process_starttime(pid)
    return current is not None and (starttime is None or current == starttime)


# --- how each kind of resource is removed (shared by live teardown and stale cleanup) ---------


def _undo_process(ident: dict) -> None:
    pid, starttime = int(ident["pid"]), ident.get("starttime")
    if not same_process_alive(pid, starttime):
        return
    for sig, wait_s in ((signal.SIGTERM, float(ident.get("grace_s", 5.0))), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig) if ident.get("group", True) else os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not same_process_alive(pid, starttime) or _is_zombie(pid):
                return
            time.sleep(0.05)


def _is_zombie(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return raw[raw.rindex(")") + 2 :].split()[0] == "Z"


def _undo_netns(ident: dict) -> None:
    name = ident["name"]
    if not Path("/var/run/netns", name).exists():
        return
    subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30, check=False)
    if Path("/var/run/netns", name).exists():
        raise RuntimeError(f"network namespace {name} could not be deleted")


def _undo_link(ident: dict) -> None:
    argv = ["ip"] + (["-n", ident["netns"]] if ident.get("netns") else [])
    argv += ["link", "delete", ident["name"]]
    subprocess.run(argv, capture_output=True, timeout=30, check=False)


def _undo_cgroup(ident: dict) -> None:
    from idsbench.setups import cgroups

    cgroups.remove_paths([Path(p) for p in ident["paths"]])


def _undo_path(ident: dict) -> None:
    Path(ident["path"]).unlink(missing_ok=True)


def _undo_vm_rundir(ident: dict) -> None:
    from idsbench.setups.vm import remove_rundir

    remove_rundir(Path(ident["path"]))


def _undo_container(ident: dict) -> None:
    """`<cli> rm -f ID` (cli is e.g. ["podman", "--runtime", "runc"] or ["docker", "-H", sock])."""
    from idsbench.setups.container_runtime import rm_argv

    argv = rm_argv(ident["cli"], ident["id"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 and "no such container" not in (done.stderr or "").lower():
        raise RuntimeError(f"{' '.join(argv)}: {(done.stderr or done.stdout).strip()[:300]}")


def _undo_dockerd(ident: dict) -> None:
    from idsbench.setups.dockerd import stop_dockerd

    stop_dockerd(ident)


UNDO_BY_KIND: dict[str, Callable[[dict], None]] = {
    "process": _undo_process,
    "netns": _undo_netns,
    "link": _undo_link,
    "cgroup": _undo_cgroup,
    "file": _undo_path,
    "container": _undo_container,
    "dockerd": _undo_dockerd,
    "vm-rundir": _undo_vm_rundir,
}


@dataclass
class _Entry:
    token: int
    kind: str
    ident: dict
    undo: Callable[[], None]


@dataclass
class TeardownStack:
    """Resources in creation order; `close()` removes them newest first and reports failures."""

    state_dir: Path = field(default_factory=state_dir_from_env)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    _entries: list[_Entry] = field(default_factory=list)
    _next: int = 0

    @property
    def state_file(self) -> Path:
        return self.state_dir / f"{self.run_id}.json"

    def push(self, kind: str, ident: dict, undo: Callable[[], None] | None = None) -> int:
        """Register a resource. `undo` defaults to the kind's standard removal."""
        if undo is None:
            remover = UNDO_BY_KIND[kind]
            undo = lambda: remover(ident)  # noqa: E731
        self._next += 1
        self._entries.append(_Entry(self._next, kind, dict(ident), undo))
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
                entry.undo()
            finally:
                self.forget(token)

    def close(self) -> list[str]:
        """Undo everything, newest first. Returns the failures (never raises)."""
        failures: list[str] = []
        while self._entries:
            entry = self._entries[-1]
            try:
                entry.undo()
            except Exception as exc:  # keep tearing down the rest
                failures.append(f"{entry.kind} {entry.ident}: {exc}")
            self._entries.pop()
            self._save()
        return failures

    def __enter__(self) -> "TeardownStack":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _save(self) -> None:
        if not self._entries:
            self.state_file.unlink(missing_ok=True)
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        me = os.getpid()
        doc = {
            "owner_pid": me,
            "owner_starttime": process_starttime(me),
            "resources": [{"kind": e.kind, **e.ident} for e in self._entries],
        }
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        os.replace(tmp, self.state_file)


def cleanup_stale(state_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """Remove the resources of runs whose owner process is gone.

    Returns (removed, failures), each a list of human-readable lines.
    """
    state_dir = state_dir or state_dir_from_env()
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
        left = []
        for res in reversed(doc.get("resources", [])):
            kind = res.get("kind")
            try:
                UNDO_BY_KIND[kind](res)
                removed.append(f"{kind} {_describe(res)}")
            except Exception as exc:
                failures.append(f"{kind} {_describe(res)}: {exc}")
                left.append(res)
        if left:
            doc["resources"] = list(reversed(left))
            path.write_text(json.dumps(doc, indent=1))
        else:
            path.unlink(missing_ok=True)
    return removed, failures


def _describe(res: dict) -> str:
    parts = [f"{key} {res[key]}" for key in ("name", "pid", "path", "paths") if key in res]
    return ", ".join(parts) or str(res)
