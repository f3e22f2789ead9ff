"""Container runtimes (podman, docker): which one is usable here, and the argv that drives it.

The argv builders are pure (unit-tested); every command runs through `idsbench.proc`.
podman runs with `--runtime runc` (crun cannot drive hybrid cgroup hosts); docker talks to a
dockerd at `host` (ours, see `dockerd.py`, or the host's own). Every container created is a
`ContainerResource` in the teardown stack.
"""

from __future__ import annotations

import json
import resource
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from idsbench import proc
from idsbench.errors import EnvironmentMissing, SensorFailed, SpecError
from idsbench.teardown import resource_kind

RUNTIMES = ("auto", "podman", "docker")
# What a sniffing sensor needs; --privileged is not required (and fails in some sandboxes).
CAPABILITIES = ("NET_ADMIN", "NET_RAW", "SYS_NICE", "IPC_LOCK")
NOFILE = 65536  # capped at the caller's hard limits: raising them needs CAP_SYS_RESOURCE
PIDS_LIMIT = 512


@dataclass(frozen=True)
class Limits:
    cpus: float | None = None
    cpuset: tuple[int, ...] | None = None
    memory_bytes: int | None = None
    swappiness: int | None = None


@dataclass(frozen=True)
class Runtime:
    """A runtime's CLI: `cli` is the argv prefix every command starts with."""

    name: str                      # podman | docker
    cli: tuple[str, ...]
    dockerd_pid: int | None = None  # a dockerd idsbench started (its cost is the setup's overhead)
    extra_pids: tuple[int, ...] = field(default=())  # e.g. dockerd's containerd

    def argv(self, *args: str) -> list[str]:
        return [*self.cli, *args]


def podman_runtime() -> Runtime:
    return Runtime("podman", ("podman", "--runtime", "runc"))


def docker_runtime(host: str | None, dockerd_pid: int | None = None,
                   extra_pids: Sequence[int] = ()) -> Runtime:
    cli = ("docker", "-H", host) if host else ("docker",)
    return Runtime("docker", cli, dockerd_pid, tuple(extra_pids))


def validate_runtime(name: str) -> str:
    if name not in RUNTIMES:
        raise SpecError(f"container runtime {name!r} is not known.", fix=f"use one of {', '.join(RUNTIMES)}.")
    return name


def limit_args(limits: Limits) -> list[str]:
    """Resource flags shared by podman and docker: memory+swap = memory (no swap)."""
    out: list[str] = []
    if limits.cpus is not None:
        out += ["--cpus", f"{limits.cpus:g}"]
    if limits.cpuset:
        out += ["--cpuset-cpus", ",".join(str(c) for c in sorted(set(limits.cpuset)))]
    if limits.memory_bytes is not None:
        out += ["--memory", f"{limits.memory_bytes}b", "--memory-swap", f"{limits.memory_bytes}b"]
    if limits.swappiness is not None:
        out += ["--memory-swappiness", str(limits.swappiness)]
    return out


def ulimit_args() -> list[str]:
    """nofile/nproc the container may have: the runtimes' defaults exceed what an unprivileged
    (no CAP_SYS_RESOURCE) root may set, and runc then fails with 'error setting rlimits'."""
    out = []
    for name, which, wanted in (("nofile", resource.RLIMIT_NOFILE, NOFILE),
                                ("nproc", resource.RLIMIT_NPROC, PIDS_LIMIT * 8)):
        hard = resource.getrlimit(which)[1]
        value = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        out += ["--ulimit", f"{name}={value}:{value}"]
    return out


def create_argv(rt: Runtime, *, name: str, image: str, network: str, limits: Limits,
                rw_paths: Sequence[Path], ro_paths: Sequence[Path], workdir: Path | None,
                command: Sequence[str], labels: dict[str, str] | None = None,
                capabilities: Sequence[str] = ()) -> list[str]:
    """`create` for the sensor (or a pause) container: paths are bind-mounted at the same path; the
    sensor gets CAPABILITIES and `capabilities` (what its capture method needs besides)."""
    argv = rt.argv("create", "--name", name, "--pull", "never", "--network", network,
                   "--log-driver", "none", "--pids-limit", str(PIDS_LIMIT), *ulimit_args())
    for cap in dict.fromkeys([*CAPABILITIES, *capabilities]):
        argv += ["--cap-add", cap]
    argv += limit_args(limits)
    for path in dict.fromkeys(Path(p) for p in rw_paths):
        argv += ["-v", f"{path}:{path}:rw"]
    for path in dict.fromkeys(Path(p) for p in ro_paths):
        if path not in rw_paths:
            argv += ["-v", f"{path}:{path}:ro"]
    for key, value in (labels or {}).items():
        argv += ["--label", f"{key}={value}"]
    if workdir is not None:
        argv += ["--workdir", str(workdir)]
    argv += ["--entrypoint", command[0], image, *command[1:]]
    return argv


@dataclass(frozen=True)
class ContainerState:
    running: bool
    pid: int
    exit_code: int | None
    oom_killed: bool
    conmon_pid: int | None


def parse_state(inspect_json: str) -> ContainerState:
    """`inspect --format '{{json .State}}'` of podman or docker."""
    state = json.loads(inspect_json)
    running = bool(state.get("Running"))
    status = str(state.get("Status", "")).lower()
    exited = not running and status in ("exited", "stopped", "dead")
    return ContainerState(
        running=running,
        pid=int(state.get("Pid") or 0),
        exit_code=int(state["ExitCode"]) if exited and state.get("ExitCode") is not None else None,
        oom_killed=bool(state.get("OOMKilled")),
        conmon_pid=int(state["ConmonPid"]) if state.get("ConmonPid") else None,
    )


def inspect_state(rt: Runtime, ident: str, cwd: Path | None = None) -> ContainerState | None:
    done = proc.run(rt.argv("inspect", "--format", "{{json .State}}", ident), check=False, timeout=30, cwd=cwd)
    if done.returncode != 0:
        return None
    return parse_state(done.stdout.strip().splitlines()[-1])


def create(argv: list[str], cwd: Path | None = None) -> str:
    """Run a `create` argv; returns the container ID (registered for removal by the caller)."""
    done = proc.run(argv, check=False, timeout=120, cwd=cwd)
    if done.returncode != 0:
        raise SensorFailed(
            f"`{' '.join(argv[:3])} …` could not create the container: "
            f"{(done.stderr or done.stdout).strip()[-600:]}",
            fix="run `idsbench doctor`; check the image exists and the limits are valid on this host.",
        )
    return done.stdout.strip().splitlines()[-1]


def rm_argv(cli: Sequence[str], ident: str) -> list[str]:
    """Force-remove now: the sensor was already stopped gracefully (podman would wait 10 s)."""
    return [*cli, "rm", "-f", *(["-t", "0"] if cli[0] == "podman" else []), ident]


@resource_kind
@dataclass(frozen=True)
class ContainerResource:
    """A container (`<cli> rm -f ID`; cli is e.g. ["podman", "--runtime", "runc"] or ["docker", "-H", sock])."""

    kind: ClassVar[str] = "container"
    cli: tuple[str, ...]
    id: str
    name: str

    def undo(self) -> None:
        argv = rm_argv(self.cli, self.id)
        if shutil.which(argv[0]) is None:
            return
        done = proc.run(argv, timeout=120, check=False)
        if done.returncode != 0 and "no such container" not in (done.stderr or "").lower() \
                and "cannot connect" not in (done.stderr or "").lower():
            raise EnvironmentMissing(f"{' '.join(argv)}: {(done.stderr or done.stdout).strip()[:300]}",
                                     fix=f"remove the container {self.name} by hand.")

    def describe(self) -> str:
        return f"container {self.name} ({self.id[:12]})"


def podman_usable() -> tuple[bool, str]:
    """(usable, why not): podman with runc answers `info`."""
    if shutil.which("podman") is None:
        return False, "podman is not installed (apt-get install podman runc)"
    if shutil.which("runc") is None:
        return False, "runc is not installed (apt-get install runc)"
    done = proc.run(podman_runtime().argv("info", "--format", "{{.Host.OCIRuntime.Name}}"), check=False)
    if done.returncode != 0:
        return False, f"`podman --runtime runc info` failed: {(done.stderr or done.stdout).strip()[:200]}"
    return True, "podman with runc"


def docker_usable() -> tuple[bool, str]:
    """(usable, why not) without starting anything: the client and dockerd are installed."""
    for prog, pkg in (("docker", "docker.io"), ("dockerd", "docker.io")):
        if shutil.which(prog) is None:
            return False, f"{prog} is not installed (apt-get install {pkg})"
    return True, "docker (idsbench starts its own dockerd when none is running)"


def require_runtime_program(name: str) -> None:
    if shutil.which(name) is None:
        pkg = {"podman": "podman runc", "docker": "docker.io"}.get(name, name)
        raise EnvironmentMissing(f"The container runtime `{name}` is not installed.",
                                 fix=f"apt-get install {pkg}  (or `make setup`), or set "
                                 "[setup] runtime to the other one.")


def doctor_container(cache_dir: Path) -> tuple[bool, str]:
    """`idsbench doctor` for the container setup: a usable runtime and an image (cached or buildable)."""
    podman_ok, podman_why = podman_usable()
    docker_ok, docker_why = docker_usable()
    runtimes = [w for ok, w in ((podman_ok, "podman (runc)"), (docker_ok, "docker")) if ok]
    cached = sorted(p.name for p in (Path(cache_dir) / "rootfs").glob("*/etc/idsbench-rootfs.json"))
    if cached:
        image = "image rootfs cached"
    elif shutil.which("debootstrap") and shutil.which("chroot"):
        image = "image built on first use (debootstrap, ~1 min)"
    else:
        image = "NO image: apt-get install debootstrap"
    image_ok = bool(cached) or image.startswith("image built")
    if runtimes and image_ok:
        return True, f"usable with {' or '.join(runtimes)}; {image}"
    why = [] if runtimes else [podman_why, docker_why]
    return False, "; ".join(why + ([] if image_ok else [image]))


def doctor_vtap(cache_dir: Path) -> tuple[bool, str]:
    """`idsbench doctor` for container-vtap: the container setup plus a kernel with macvtap."""
    from idsbench.wire import macvtap

    ok, detail = doctor_container(cache_dir)
    if not macvtap.usable():
        return False, "the kernel has no macvtap module (CONFIG_MACVTAP)"
    return ok, detail


