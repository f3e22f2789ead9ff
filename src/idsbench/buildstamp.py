"""The build stamps (`.built`, key=value lines) that scripts/build-suricata.sh and scripts/build-snort.sh
write last into a finished build, parsed. Below both the sensor adapters (which find their build by it)
and the host probe (which lists every build in the cache): neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from idsbench.errors import EnvironmentMissing


def repo_root() -> Path:
    """The checkout this package runs from (where scripts/ lives)."""
    return Path(__file__).resolve().parents[2]


def key_values(text: str) -> dict[str, str]:
    """A stamp's `key=value` lines."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@dataclass(frozen=True)
class SuricataBuild:
    """What build-suricata.sh recorded in `.built`."""

    prefix: Path
    version: str
    options: str
    configure: str
    source: str
    source_sha256: str
    compilers: str
    build_id: str  # the cache key's digest
    hyperscan: bool
    profiling_rules: bool
    build_s: int
    # the rule profiler's clock read: "lfence-rdtsc" (our patch, scripts/patches) or upstream's
    # "cpuid-rdtsc-cpuid" (stamps from before the patch say nothing: upstream's)
    profiler_clock: str = "cpuid-rdtsc-cpuid"
    # what the build is: "commit=<sha>[+dirty]" (a git tree or one exported from git), "tree=<sha256>" (a
    # tree's content) or "archive=<sha256>"; stamps from before say nothing: the source's sha256
    identity: str = ""
    commit: str = ""
    # the --prefix the binary was configured with (tree builds share one and are moved to `prefix`)
    compiled_prefix: str = ""
    make_s: int | None = None
    incremental: bool = False
    ccache: str = ""  # "yes hits=N misses=M", "no" or "" (stamps from before)

    @property
    def binary(self) -> Path:
        return self.prefix / "bin" / "suricata"

    @property
    def config(self) -> Path:
        return self.prefix / "etc" / "suricata" / "suricata.yaml"

    def record(self) -> dict[str, object]:
        return {"build_version": self.version, "build_options": self.options, "configure_flags": self.configure,
                "build_id": self.build_id, "source": self.source, "source_sha256": self.source_sha256,
                "compilers": self.compilers, "build_s": self.build_s, "prefix": str(self.prefix),
                "profiling_rules": self.profiling_rules, "profiler_clock": self.profiler_clock,
                "build_identity": self.identity or f"archive={self.source_sha256}", "commit": self.commit or None,
                "make_s": self.make_s, "ccache": self.ccache or None}


def parse_stamp(prefix: Path, text: str) -> SuricataBuild:
    """`.built` -> SuricataBuild; ValueError naming a missing key."""
    values = key_values(text)
    try:
        return SuricataBuild(
            prefix=prefix, version=values["version"], options=values["options"], configure=values["configure"],
            source=values["source"], source_sha256=values["source_sha256"], compilers=values["compilers"],
            build_id=values["digest"], hyperscan=values["hyperscan"] == "yes",
            profiling_rules=values["profiling_rules"] == "yes", build_s=int(values["build_s"]),
            profiler_clock=values.get("profiler_clock", "cpuid-rdtsc-cpuid"), identity=values.get("identity", ""),
            commit=values.get("commit", ""), compiled_prefix=values.get("compiled_prefix", ""),
            make_s=int(values["make_s"]) if values.get("make_s", "").isdigit() else None,
            incremental=values.get("incremental") == "yes", ccache=values.get("ccache", ""))
    except KeyError as exc:
        raise ValueError(f"build stamp lacks {exc.args[0]}") from None


@dataclass(frozen=True)
class SnortBuild:
    """What build-snort.sh recorded in `.built`."""

    snort_version: str
    daq_version: str
    digest: str
    jobs: int
    daq_build_s: int
    snort_build_s: int
    installed_bytes: int


def parse_build_stamp(text: str) -> SnortBuild:
    """`.built` (key=value lines) -> SnortBuild; ValueError naming a missing or bad key."""
    values = key_values(text)
    try:
        return SnortBuild(
            snort_version=values["snort_version"], daq_version=values["daq_version"], digest=values["digest"],
            jobs=int(values["jobs"]), daq_build_s=int(values["daq_build_s"]),
            snort_build_s=int(values["snort_build_s"]), installed_bytes=int(values["installed_bytes"]))
    except KeyError as exc:
        raise ValueError(f"build stamp lacks {exc.args[0]}") from None


def builds_pending_error(what: str) -> EnvironmentMissing:
    """Refusal while IDSBENCH_BUILDS_PENDING=1: the builds are under way beside this process."""
    return EnvironmentMissing(
        f"{what} is not to be used while IDSBENCH_BUILDS_PENDING=1: the source builds are still running",
        fix="wait for them (`make test` runs the tests that need a build after its builds; a test that "
            "needs one carries the `builds` marker), or unset IDSBENCH_BUILDS_PENDING.")
