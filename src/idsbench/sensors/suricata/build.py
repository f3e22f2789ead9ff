"""Suricata builds as an engine axis: `sensor.engine = "suricata@8.0.6+profiling"` (docs/engines.md,
"Sensor builds").

An engine name is `suricata[@<version or source path>][+option...]`:
- `suricata` is the installed (distribution) binary; `suricata@8.0.6` is built from
  `suricata-8.0.6.tar.xz` in the source directory (IDSBENCH_SURICATA_SRC, default `../shared/src` beside
  the repository); `suricata@/path/to/suricata-8.0.6.tar.xz` (or an unpacked tree) from that source.
- options: `profiling` turns per-rule profiling on for the run (`rule_perf.log`); `nohyperscan` is a build
  option (configure --disable-hyperscan).

Every source build is configured with --enable-profiling-rules (one build serves plain and profiling
runs: rule profiling that is compiled in but not active costs one branch per rule check; see the
architecture doc for the measurement), so the build options are only `profiling` plus `nohyperscan`.
scripts/build-suricata.sh builds it once per machine into `<cache>/suricata/<version>-<options>-<digest>`
(digest: source sha256 + configure flags + compiler identity) and writes `.built` (key=value) last.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from idsbench import proc, settings
from idsbench.buildstamp import SuricataBuild, builds_pending_error, parse_stamp, repo_root
from idsbench.errors import EnvironmentMissing, SpecError

BASE = "suricata"
RUN_OPTIONS = frozenset({"profiling"})  # turned on per run
BUILD_OPTIONS = frozenset({"nohyperscan"})  # change the build
_VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?$")
_SOURCE_VERSION = re.compile(r"suricata-(\d+\.\d+(?:\.\d+)?)(?:\.tar\.(?:xz|gz))?$")
_AC_INIT = re.compile(r"AC_INIT\(\[suricata\]\s*,\s*\[(\d+\.\d+(?:\.\d+)?)[^\]]*\]")
FAILED_LOG_LINES = 25
# the built binary's runtime libraries (Debian 12 names): a container/VM image installs them. AF_XDP's
# libxdp1, libbpf1 and libelf1 are not listed: every image holds the host's Suricata package, which depends
# on them (listing them would change the images' cache key and rebuild them for nothing)
RUNTIME_PACKAGES = ("libjansson4", "libyaml-0-2", "libpcap0.8", "libcap-ng0", "libmagic1", "liblz4-1",
                    "libnet1", "libpcre2-8-0", "zlib1g", "libhyperscan5", "libunwind8")


def source_dir() -> Path:
    value = os.environ.get("IDSBENCH_SURICATA_SRC")
    return Path(value) if value else repo_root().parent / "shared" / "src"


def build_script() -> Path:
    return repo_root() / "scripts" / "build-suricata.sh"


@dataclass(frozen=True)
class EngineRef:
    """A parsed engine name."""

    name: str  # as written in the spec
    base: str
    version: str | None  # None: the installed binary
    source: Path | None  # the archive or tree a build comes from
    options: frozenset[str]

    @property
    def built(self) -> bool:
        return self.version is not None

    @property
    def profiling(self) -> bool:
        return "profiling" in self.options

    @property
    def build_options(self) -> tuple[str, ...]:
        """The script's --options: profiling support always, plus the build options named."""
        return ("profiling", *sorted(self.options & BUILD_OPTIONS))


def parse_engine(name: str) -> EngineRef:
    """`suricata@8.0.6+profiling` -> EngineRef; SpecError naming the fix for an unknown option or base."""
    head, *opts = name.split("+")
    base, _, where = head.partition("@")
    options = frozenset(opts)
    unknown = sorted(options - RUN_OPTIONS - BUILD_OPTIONS)
    if base != BASE:
        raise SpecError(f"sensor.engine {name!r}: builds are known for Suricata only.",
                        fix=f"write e.g. 'suricata@8.0.6' or '{base}' (the installed one).")
    if unknown or "" in options:
        raise SpecError(f"sensor.engine {name!r}: unknown build option(s) {', '.join(map(repr, unknown or ['']))}.",
                        fix=f"use {', '.join('+' + o for o in sorted(RUN_OPTIONS | BUILD_OPTIONS))}.")
    if not where:
        if options & BUILD_OPTIONS:
            raise SpecError(f"sensor.engine {name!r}: the installed Suricata cannot be rebuilt with "
                            f"{', '.join(sorted(options & BUILD_OPTIONS))}.",
                            fix="name a source build, e.g. 'suricata@8.0.6+nohyperscan'.")
        return EngineRef(name, base, None, None, options)
    if _VERSION.match(where):
        source = source_dir() / f"suricata-{where}.tar.xz"
        version = where
    else:
        source = Path(where).expanduser()
        m = _SOURCE_VERSION.search(source.name)
        tree_version = tree_version_of(source) if m is None and source.is_dir() else None
        if not m and tree_version is None:
            raise SpecError(f"sensor.engine {name!r}: neither a version nor a source named suricata-<version> "
                            "nor a Suricata source tree (configure.ac with AC_INIT([suricata],[X.Y.Z])).",
                            fix="write 'suricata@8.0.6', or give a path like /src/suricata-8.0.6.tar.xz or a "
                                "Suricata checkout.")
        version = m.group(1) if m else str(tree_version)
    return EngineRef(name, base, version, source, options)


def tree_version_of(tree: Path) -> str | None:
    """The version a Suricata source tree declares (configure.ac's AC_INIT), None when it is not one."""
    try:
        m = _AC_INIT.search((tree / "configure.ac").read_text(errors="replace")[:4000])
    except OSError:
        return None
    return m.group(1) if m else None


def check_source(ref: EngineRef) -> Path:
    """The source of a build; EnvironmentMissing naming the fix when it is not there."""
    assert ref.source is not None
    if not ref.source.exists():
        raise EnvironmentMissing(
            f"sensor.engine {ref.name!r}: the Suricata source {ref.source} does not exist.",
            fix=f"put suricata-{ref.version}.tar.xz into {ref.source.parent} (or set IDSBENCH_SURICATA_SRC to "
                "the directory holding it), or name the source path: 'suricata@/path/suricata-X.Y.Z.tar.xz'.")
    return ref.source


def _script_args(ref: EngineRef) -> list[str]:
    script = build_script()
    if not script.is_file():
        raise EnvironmentMissing(f"sensor.engine {ref.name!r} needs {script} to build Suricata.",
                                 fix="run idsbench from its source checkout (the scripts/ directory).")
    return ["bash", str(script), "--version", str(ref.version), "--source", str(check_source(ref)),
            "--options", ",".join(ref.build_options)]


def prefix_of(ref: EngineRef) -> Path:
    """Where the build of `ref` is (or would be) installed."""
    cp = proc.run([*_script_args(ref), "--print-prefix"], timeout=60, check=False)
    if cp.returncode != 0:
        raise EnvironmentMissing(f"sensor.engine {ref.name!r}: {cp.stderr.strip()}",
                                 fix="see scripts/build-suricata.sh's usage.")
    return Path(cp.stdout.strip())


def find_build(prefix: Path) -> SuricataBuild | None:
    if settings.builds_pending():
        raise builds_pending_error(f"the Suricata build at {prefix}")
    try:
        return parse_stamp(prefix, (prefix / ".built").read_text())
    except (OSError, ValueError):
        return None


def ensure_build(ref: EngineRef, prefix: Path | None = None) -> SuricataBuild:
    """The finished build of `ref`, built now (progress on stderr, ~5 min) when there is none; a build that
    fails raises EnvironmentMissing with its log's last lines."""
    prefix = prefix or prefix_of(ref)
    found = find_build(prefix)
    if found is not None:
        return found
    print(f"idsbench: building Suricata {ref.version} for {ref.name!r} into {prefix} "
          f"(once per machine; the log is kept beside it)", file=sys.stderr, flush=True)
    # direct: the build's progress goes to the user's stderr as it happens, for minutes (proc.run captures it)
    cp = subprocess.run(_script_args(ref), stdout=subprocess.PIPE, stderr=sys.stderr, text=True, check=False)
    found = find_build(prefix)
    if cp.returncode != 0 or found is None:
        failed_log = Path(f"{prefix}.failed.log")
        try:
            lines = failed_log.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        compiler = compiler_errors(lines)
        said = "; the compiler said:\n  " + "\n  ".join(compiler) if compiler else ""
        raise EnvironmentMissing(
            f"building Suricata {ref.version} for {ref.name!r} failed (exit {cp.returncode}){said}\nthe build log "
            f"{failed_log} ends:\n  " + "\n  ".join(lines[-FAILED_LOG_LINES:]),
            fix="install the build dependencies (`make system`), or fix the source named; "
                "`make suricata-src` builds it by hand.")
    return found


_COMPILER_ERROR = re.compile(r"(\berror\b|\bError\b|undefined reference|^error\[E\d+\])")
COMPILER_LINES = 8


def compiler_errors(lines: list[str]) -> list[str]:
    """The build log's last compiler error lines (gcc's `file:line: error:`, rustc's `error[E…]`, the
    linker's `undefined reference`), at most COMPILER_LINES, in log order."""
    hits = [line.strip() for line in lines if _COMPILER_ERROR.search(line) and not line.startswith("== ")
            and "make" not in line.split(":", 1)[0]]
    return hits[-COMPILER_LINES:]


def installed_profiling_error(name: str) -> EnvironmentMissing:
    return EnvironmentMissing(
        f"sensor.engine {name!r} asks for rule profiling, but the installed Suricata is not built with "
        "--enable-profiling-rules.",
        fix="use a source build with profiling, e.g. 'suricata@8.0.6+profiling' (built on first use, "
            "or by `make suricata-src`).")
