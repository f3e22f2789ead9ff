"""The Suricata adapter for a source build (`suricata@8.0.6[+profiling]`) and for profiling requests.

The build is found (or made, on first use) in `require()`, which preflight calls before any sample;
its prefix is shared read-only with containers and VMs at the same path (`host_paths`), and the image
gets the build's runtime libraries (`image_packages`). With `+profiling` each run writes
`rule_perf.log` (JSON) into its run directory when Suricata stops.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path

from idsbench.buildstamp import SuricataBuild
from idsbench.capture import Scalar
from idsbench.sensors.suricata import Suricata, SuricataRun
from idsbench.sensors.suricata.build import (
    RUNTIME_PACKAGES,
    EngineRef,
    ensure_build,
    installed_profiling_error,
    prefix_of,
)
from idsbench.store.layout import RULE_PERF_FILE

# every rule Suricata inspected (its default limit writes the top 10 only)
PROFILING_LIMIT = 1_000_000
PROFILING_SETTINGS = (("profiling.rules.enabled", "yes"), ("profiling.rules.active", "yes"),
                      ("profiling.rules.json", "yes"), ("profiling.rules.filename", RULE_PERF_FILE),
                      ("profiling.rules.append", "no"), ("profiling.rules.limit", str(PROFILING_LIMIT)))


class BuiltSuricata(Suricata):
    """Suricata from a source build, or the installed one asked for profiling."""

    def __init__(self, ref: EngineRef):
        self.ref = ref
        self.prefix = prefix_of(ref) if ref.built else None
        if self.prefix is None:
            super().__init__()
        else:
            super().__init__(str(self.prefix / "bin" / "suricata"),
                             self.prefix / "etc" / "suricata" / "suricata.yaml")
        self._build: SuricataBuild | None = None

    @property
    def build(self) -> SuricataBuild:
        if self._build is None:
            self._build = ensure_build(self.ref, self.prefix)
        return self._build

    def available(self) -> bool:
        if self.prefix is None:
            return super().available()
        return (self.prefix / ".built").is_file()

    def require(self) -> None:
        if self.prefix is None:
            super().require()
            if self.ref.profiling and not re.search(r"Profiling rules enabled:\s+yes", self._build_info_text):
                raise installed_profiling_error(self.ref.name)
            return
        build = self.build  # found, or built now (EnvironmentMissing quoting its log when that fails)
        if self.ref.profiling and not build.profiling_rules:
            raise installed_profiling_error(self.ref.name)
        super().require()

    def image_packages(self) -> tuple[str, ...]:
        return RUNTIME_PACKAGES if self.prefix is not None else ()

    def host_paths(self) -> tuple[Path, ...]:
        return (self.prefix,) if self.prefix is not None else ()

    def build_info(self) -> dict[str, object]:
        info = super().build_info()
        if self.prefix is not None:
            compiled = self.build.compiled_prefix
            if compiled and compiled != str(self.prefix):  # a tree build, moved from the shared prefix
                for key in ("sysconfdir", "datarootdir"):
                    info[key] = str(info[key]).replace(compiled, str(self.prefix), 1)
            info.update(self.build.record())
        info["engine"] = self.ref.name
        info["rule_profiling"] = self.ref.profiling
        if self.ref.profiling:  # its ticks are rdtsc's: the rate turns them into seconds (analysis/rules.py)
            info.update(self._tsc)
        return info

    @cached_property
    def _tsc(self) -> dict[str, object]:
        """The host's TSC rate, measured once per adapter (~150 ms; native/tsc.py)."""
        from idsbench.native.tsc import measure_tsc

        tsc = measure_tsc()
        return {"tsc_hz": tsc.hz, **({"tsc_error": tsc.error} if tsc.error else {})}

    def prepare_config(self, run_dir: Path, interface: str, rules: Sequence[Path], overrides: Mapping[str, str],
                       stats_interval_s: int, threads: int | None = None, mtu: int | None = None,
                       cluster_id: int | None = None, overlay: Path | None = None, capture: str = "af-packet",
                       capture_options: Mapping[str, Scalar] | None = None, bypass: str = "off") -> SuricataRun:
        if self.ref.profiling:
            overrides = {**dict(PROFILING_SETTINGS), **overrides}
        return super().prepare_config(run_dir, interface, rules, overrides, stats_interval_s, threads=threads,
                                      mtu=mtu, cluster_id=cluster_id, overlay=overlay, capture=capture,
                                      capture_options=capture_options, bypass=bypass)
