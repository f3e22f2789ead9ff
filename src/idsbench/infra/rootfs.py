"""A Debian/Ubuntu root filesystem with the host's Suricata, built by debootstrap, cached.

Containers (and the VM guest) must run the very Suricata the host runs, so results stay comparable.
The rootfs comes from the same package source as the host's Suricata: the mirror and suite are
read from the host's apt configuration (`apt-cache policy suricata`, sources.list(.d)), never
hard-coded, and the exact package version is pinned.

    root = ensure_rootfs(cache_dir)                       # <cache>/rootfs/<key>/ (a directory)
    manifest = read_manifest(root)                        # what is inside (suricata version, ...)

The cache key is distro + codename + architecture + Suricata package version (+ a hash of any extra
packages). A build runs in `<key>.tmp-<pid>` and is renamed into place when complete, under a file
lock, so concurrent callers build once and a killed build never looks complete. Only the base (no extra
packages: the container image) is debootstrapped; a rootfs with extra packages (the VM guest, the cgroup-v2
guest, the lab host) is a copy of the base with them installed by apt: the same packages, without a
debootstrap each (~1 min on a 2-core host).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from idsbench import proc
from idsbench.errors import EnvironmentMissing

MANIFEST = "idsbench-rootfs.json"  # stored in <root>/etc/
DEBOOTSTRAP_TIMEOUT_S = 1800.0
APT_TIMEOUT_S = 1800.0
BASE_PACKAGES = ("ca-certificates", "iproute2", "procps")
_POLICY_VERSION = re.compile(r"^ (?:\*\*\*|   ) (\S+) -?\d+\s*$")
_POLICY_ORIGIN = re.compile(r"^\s+\d+\s+(\S+://\S+)\s+(\S+?)/(\S+)\s+\S+\s+Packages\s*$")


@dataclass(frozen=True)
class AptSource:
    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]


@dataclass(frozen=True)
class HostPackage:
    """Where the host's Suricata comes from."""

    distro: str            # os-release ID: debian, ubuntu
    codename: str          # bookworm
    arch: str              # dpkg architecture: amd64
    version: str           # package version: 1:7.0.10-1~bpo12+1
    suite: str             # the suite that serves that version: bookworm-backports
    mirror: str            # the archive URI serving it

    @property
    def upstream_version(self) -> str:
        """'1:7.0.10-1~bpo12+1' -> '7.0.10' (what `suricata -V` prints)."""
        return upstream_version(self.version)


@dataclass(frozen=True)
class Manifest:
    key: str
    distro: str
    codename: str
    arch: str
    suricata_package: str
    suricata_version: str
    suite: str
    mirror: str
    extra_packages: tuple[str, ...]
    build_s: float
    built_unix: float


def upstream_version(package_version: str) -> str:
    """Strip the epoch and the Debian revision: '1:7.0.10-1~bpo12+1' -> '7.0.10'."""
    version = package_version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


# --- reading the host's apt configuration (pure parsers, unit-tested) --------------------------


def parse_os_release(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip().strip('"')
    return out


def parse_deb822_sources(text: str) -> list[AptSource]:
    """Stanzas of a `.sources` file (Types: deb only; Enabled: no skipped)."""
    sources = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = ""
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0].isspace() and key:  # continuation line
                fields[key] += " " + line.strip()
                continue
            key, _, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
            continue
        for uri in fields.get("uris", "").split():
            sources.append(AptSource(uri.rstrip("/"), tuple(fields.get("suites", "").split()),
                                     tuple(fields.get("components", "").split())))
    return sources


def parse_one_line_sources(text: str) -> list[AptSource]:
    """`deb [opts] URI SUITE COMPONENT...` lines of a sources.list."""
    sources = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        line = re.sub(r"\[[^\]]*\]", " ", line[4:])
        parts = line.split()
        if len(parts) >= 2:
            sources.append(AptSource(parts[0].rstrip("/"), (parts[1],), tuple(parts[2:])))
    return sources


def host_apt_sources(etc_apt: Path = Path("/etc/apt")) -> list[AptSource]:
    sources: list[AptSource] = []
    main = etc_apt / "sources.list"
    if main.is_file():
        sources += parse_one_line_sources(main.read_text(errors="replace"))
    d = etc_apt / "sources.list.d"
    if d.is_dir():
        for path in sorted(d.iterdir()):
            if path.suffix == ".list":
                sources += parse_one_line_sources(path.read_text(errors="replace"))
            elif path.suffix == ".sources":
                sources += parse_deb822_sources(path.read_text(errors="replace"))
    return sources


def parse_policy_origin(policy_text: str, version: str) -> tuple[str, str] | None:
    """(archive URI, suite) serving `version` in `apt-cache policy PKG` output, or None."""
    current = None
    for line in policy_text.splitlines():
        head = _POLICY_VERSION.match(line)
        if head:
            current = head.group(1)
            continue
        origin = _POLICY_ORIGIN.match(line)
        if origin and current == version:
            return origin.group(1).rstrip("/"), origin.group(2)
    return None


def mirror_for(sources: Sequence[AptSource], codename: str, preferred: str | None = None) -> str:
    """The archive URI that serves the codename's main suite (the one debootstrap needs)."""
    candidates = [s.uri for s in sources if codename in s.suites]
    if preferred and preferred in candidates:
        return preferred
    if candidates:
        return candidates[0]
    if preferred:
        return preferred
    raise EnvironmentMissing(
        f"No apt source for the suite {codename!r} in /etc/apt/sources.list(.d): the rootfs mirror "
        "cannot be derived from the host's apt configuration.",
        fix=f"add a `deb <mirror> {codename} main` source (the one the host installs from) and run "
        "`apt-get update`.",
    )


def rootfs_sources(sources: Sequence[AptSource], codename: str) -> str:
    """sources.list for the rootfs: the host's sources for this release (main suite, updates,
    security, backports), one-line format."""
    wanted = {codename, f"{codename}-updates", f"{codename}-security", f"{codename}-backports"}
    lines = []
    for s in sources:
        for suite in s.suites:
            if suite in wanted:
                line = f"deb {s.uri} {suite} {' '.join(s.components or ('main',))}"
                if line not in lines:
                    lines.append(line)
    return "\n".join(lines) + "\n"


def cache_key(pkg: HostPackage, extra_packages: Iterable[str] = ()) -> str:
    extra = sorted(set(extra_packages))
    safe_version = re.sub(r"[^A-Za-z0-9.+]", "_", pkg.version)
    key = f"{pkg.distro}-{pkg.codename}-{pkg.arch}-suricata-{safe_version}"
    if extra:
        key += "-x" + hashlib.sha256(" ".join(extra).encode()).hexdigest()[:10]
    return key


# --- host facts -------------------------------------------------------------------------------


def host_package(package: str = "suricata") -> HostPackage:
    os_release = parse_os_release(Path("/etc/os-release").read_text())
    distro, codename = os_release.get("ID", ""), os_release.get("VERSION_CODENAME", "")
    if distro not in ("debian", "ubuntu") or not codename:
        raise EnvironmentMissing(
            f"The container/VM image is built with debootstrap from the host's Debian/Ubuntu "
            f"packages, but this host is {os_release.get('PRETTY_NAME', 'unknown')!r}.",
            fix="run the container and VM setups on a Debian or Ubuntu host.",
        )
    query = proc.run(["dpkg-query", "-W", "-f=${Version}", package], check=False)
    version = query.stdout.strip()
    if query.returncode != 0 or not version:
        raise EnvironmentMissing(
            f"The package {package!r} is not installed on the host, so its version cannot be "
            "matched inside the container image.",
            fix="install it (`make setup`; Debian: from <codename>-backports).",
        )
    arch = proc.run(["dpkg", "--print-architecture"]).stdout.strip()
    policy = proc.run(["apt-cache", "policy", package]).stdout
    origin = parse_policy_origin(policy, version)
    if origin is None:
        raise EnvironmentMissing(
            f"apt does not know where {package} {version} comes from (`apt-cache policy {package}` "
            "lists no archive for it), so the image cannot install the same build.",
            fix="run `apt-get update`; install Suricata from a configured apt source.",
        )
    uri, suite = origin
    return HostPackage(distro, codename, arch, version, suite, uri)


# --- building ---------------------------------------------------------------------------------


def ensure_rootfs(cache_dir: Path, extra_packages: Sequence[str] = (), *,
                  log: Callable[[str], None] | None = None) -> Path:
    """The cached rootfs directory for the host's Suricata (+ `extra_packages`); builds it once.

    `log` (a callable taking one line) reports progress; a full build log is kept in
    `<cache>/rootfs/<key>.log`. Needs root, debootstrap and chroot.
    """
    pkg = host_package()
    key = cache_key(pkg, extra_packages)
    base = Path(cache_dir) / "rootfs"
    base.mkdir(parents=True, exist_ok=True)
    root = base / key
    with open(base / f".{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another caller may be building the same key
        if (root / "etc" / MANIFEST).is_file():
            return root
        if os.geteuid() != 0:
            raise EnvironmentMissing("Building the container image's rootfs needs root (debootstrap).",
                                     fix="run idsbench as root.")
        if shutil.which("debootstrap") is None:
            _missing("debootstrap")
        tmp = base / f"{key}.tmp-{os.getpid()}"
        _remove_tree(tmp)
        # the base first (its own lock; a different key): a rootfs with extras is the base plus them
        origin = ensure_rootfs(cache_dir, log=log) if extra_packages else None
        started = time.monotonic()
        try:
            _build(pkg, tmp, tuple(extra_packages), base / f"{key}.log", log or (lambda _l: None), origin)
            manifest = Manifest(key, pkg.distro, pkg.codename, pkg.arch, pkg.version,
                                pkg.upstream_version, pkg.suite, pkg.mirror,
                                tuple(sorted(set(extra_packages))),
                                round(time.monotonic() - started, 1), time.time())
            (tmp / "etc" / MANIFEST).write_text(json.dumps(asdict(manifest), indent=1) + "\n")
            _remove_tree(root)
            os.rename(tmp, root)
        except BaseException:
            _remove_tree(tmp)
            raise
    return root


def read_manifest(root: Path) -> Manifest:
    try:
        doc = json.loads((Path(root) / "etc" / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise EnvironmentMissing(f"{root} is not a complete idsbench rootfs ({exc}).",
                                 fix="delete it; it is rebuilt on the next run.") from exc
    doc["extra_packages"] = tuple(doc.get("extra_packages", ()))
    return Manifest(**doc)


def _missing(program: str) -> None:
    raise EnvironmentMissing(f"The program `{program}` is not installed (needed to build the "
                             "container/VM image).", fix=f"apt-get install {program}  (or `make setup`).")


def _build(pkg: HostPackage, tmp: Path, extra: tuple[str, ...], log_path: Path,
           log: Callable[[str], None], origin: Path | None = None) -> None:
    """debootstrap + the host's Suricata + `extra` into `tmp`; with `origin` (the base rootfs, which has
    Suricata), a copy of it + `extra`."""
    sources = host_apt_sources()
    mirror = mirror_for(sources, pkg.codename, preferred=pkg.mirror)
    components = "main,universe" if pkg.distro == "ubuntu" else "main"
    with open(log_path, "w") as log_file:
        def step(what: str, argv: list[str], timeout: float) -> None:
            log(what)
            log_file.write(f"$ {' '.join(argv)}\n")
            log_file.flush()
            done = proc.run(argv, timeout=timeout, check=False)
            log_file.write(done.stdout + done.stderr)
            log_file.flush()
            if done.returncode != 0:
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
                raise EnvironmentMissing(
                    f"Building the image rootfs failed at `{' '.join(argv[:6])}…` (exit "
                    f"{done.returncode}): {tail}",
                    fix=f"see {log_path}; check that the apt mirror {mirror} is reachable.",
                )

        if origin is None:
            step(f"debootstrap {pkg.codename} from {mirror}",
                 ["debootstrap", "--variant=minbase", f"--components={components}",
                  f"--include={','.join(BASE_PACKAGES)}", pkg.codename, str(tmp), mirror],
                 DEBOOTSTRAP_TIMEOUT_S)
        else:
            step(f"copy the base rootfs {origin.name}", ["cp", "-a", "--reflink=auto", str(origin), str(tmp)],
                 DEBOOTSTRAP_TIMEOUT_S)
            (tmp / "etc" / MANIFEST).unlink()
        (tmp / "etc" / "apt" / "sources.list").write_text(rootfs_sources(sources, pkg.codename))
        # No service may start inside the chroot while packages are installed.
        policy = tmp / "usr" / "sbin" / "policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        chroot = ["chroot", str(tmp), "env", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"]
        step("apt-get update (in the rootfs)", chroot + ["apt-get", "update"], APT_TIMEOUT_S)
        target = ["-t", pkg.suite] if pkg.suite != pkg.codename else []
        step(f"install suricata={pkg.version} from {pkg.suite}",
             chroot + ["apt-get", "install", "-y", "--no-install-recommends", *target,
                       f"suricata={pkg.version}", *extra], APT_TIMEOUT_S)
        step("clean apt caches", chroot + ["apt-get", "clean"], 120)
        got = proc.run(["chroot", str(tmp), "suricata", "-V"], check=False)
        if pkg.upstream_version not in got.stdout:
            raise EnvironmentMissing(
                f"The rootfs's Suricata reports {got.stdout.strip() or got.stderr.strip()!r}, not "
                f"{pkg.upstream_version}.", fix=f"see {log_path}.")
    for lists in (tmp / "var" / "lib" / "apt" / "lists").glob("*_*"):
        lists.unlink(missing_ok=True)


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path.resolve()) + "/"
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mount_point = line.split()[4].replace("\\040", " ")
        if mount_point.startswith(prefix) or mount_point == prefix[:-1]:
            out.append(mount_point)
    return out


def _remove_tree(path: Path) -> None:
    """rm -rf that first unmounts anything a killed debootstrap left mounted inside."""
    if not path.exists():
        return
    for mount_point in sorted(_mounts_under(path), key=len, reverse=True):
        proc.run(["umount", "-l", mount_point], check=False)
    if _mounts_under(path):
        raise EnvironmentMissing(f"{path} still has mounts inside; not removing it.",
                                 fix=f"unmount them (`findmnt -R {path}`), then delete it.")
    shutil.rmtree(path)
