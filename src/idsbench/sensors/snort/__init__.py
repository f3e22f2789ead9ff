"""The Snort 3 adapter: the ONE package that knows the snort binary (docs/snort.md).

Build (`make snort`, config.find_install), rules (ruleprep: Suricata-flavoured files converted, the
share loaded recorded), `snort -T` config tests, the run's snort.lua (config.render_config: the stock
config, DAQ afpacket passive on the interface, ips.mode tap, rules, Suricata's rule variables,
alert_json and perf_monitor into the run dir, with `snort+profiling` the rule profiler, the spec's Lua
last), argv, readiness and counters (run).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from idsbench import proc, settings
from idsbench.capture import Scalar, effective_options
from idsbench.errors import EnvironmentMissing, InputError, SensorFailed, SpecError
from idsbench.sensors import rulesets
from idsbench.sensors.base import SensorOptions, requirement_met
from idsbench.sensors.snort import log as snort_log
from idsbench.sensors.snort import ruleprep
from idsbench.sensors.snort.capture import CAPTURE
from idsbench.sensors.snort.config import (
    PCAP_PATCH,
    SnortInstall,
    SnortOptions,
    buffer_from,
    find_install,
    line_buffered,
    lua_overrides,
    render_config,
    snort_argv,
    threads_from,
)
from idsbench.sensors.snort.rules import render_event_filters
from idsbench.sensors.snort.run import SnortRun
from idsbench.sensors.snort.runtime import runtime_packages
from idsbench.sensors.snort.variables import Variables, rule_variables
from idsbench.store.layout import CONSOLE_FILE, SNORT_CONFIG_FILE
from idsbench.store.writers import write_sensor_config

CONFIG_TEST_TIMEOUT_S = 600.0


def default_threads() -> int:
    """Snort's "auto" (`sensor.threads = "auto"`): one packet thread per CPU, as `-z 0` and Suricata's
    `threads: auto` do. Otherwise the run facts give the sensor's CPUs (`SensorOptions.threads`)."""
    return os.cpu_count() or 1


class Snort:
    name = "snort"
    capture_methods = CAPTURE

    def __init__(self, install: SnortInstall | None = None, cache_dir: Path | None = None,
                 variables: Variables | None = None, *, profiling: bool = False):
        """`profiling`: `snort+profiling`, every run prints its rule profile to stdout (stdout.txt) at exit."""
        self.profiling = profiling
        self._install = install
        self.cache_dir = cache_dir or settings.cache_dir()
        self._variables = variables

    # --- the build ----------------------------------------------------------------------------
    @property
    def install(self) -> SnortInstall:
        if self._install is None:
            self._install = find_install(self.cache_dir)
        return self._install

    @property
    def variables(self) -> Variables:
        if self._variables is None:
            self._variables = rule_variables()
        return self._variables

    def available(self) -> bool:
        return requirement_met(self.require)

    def require(self) -> None:
        self.install  # noqa: B018 (EnvironmentMissing naming `make snort` when there is no build)
        if shutil.which("stdbuf") is None:
            raise EnvironmentMissing("stdbuf (coreutils) is missing: Snort's log would arrive only at exit.",
                                     fix="apt-get install coreutils.")

    def version(self) -> str:
        return self.install.build.snort_version

    @cached_property
    def _version_text(self) -> str:
        return proc.run([str(self.install.binary), "-V"], timeout=30, check=False).stdout

    def build_info(self) -> dict[str, object]:
        b = self.install.build
        return {"version": b.snort_version, "daq_version": b.daq_version, "prefix": str(self.install.prefix),
                "digest": b.digest, "build_jobs": b.jobs, "daq_build_s": b.daq_build_s,
                "snort_build_s": b.snort_build_s, "installed_bytes": b.installed_bytes,
                "hyperscan": "Using Hyperscan" in self._version_text, "auto_threads": default_threads(),
                "rule_variables": dict(self.variables), "rule_profiling": self.profiling}

    def image_packages(self) -> tuple[str, ...]:
        return runtime_packages(self.install.prefix, self.install.binary)

    def host_paths(self) -> tuple[Path, ...]:
        return (self.install.prefix,)

    # --- rules --------------------------------------------------------------------------------
    def _snort_test(self, rules: Sequence[Path], workdir: Path, timeout_s: float = CONFIG_TEST_TIMEOUT_S) -> str:
        """The output of `snort -T` with `rules` and the rule variables (rule conversion rounds)."""
        opts = SnortOptions(rules=tuple(rules), log_dir=workdir, stats_interval_s=1, variables=self.variables)
        return self._config_test_run(opts, workdir, timeout_s)[1]

    def _config_test_run(self, opts: SnortOptions, workdir: Path, timeout_s: float) -> tuple[int, str, Path]:
        """(exit status, output, config file) of `snort -T` on `opts` rendered into `workdir`."""
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / SNORT_CONFIG_FILE
        write_sensor_config(config, render_config(opts, self.install.base_config))
        try:
            done = proc.run(snort_argv(self.install.binary, config, opts, config_test=True), check=False,
                            timeout=timeout_s)
        except EnvironmentMissing as exc:
            raise SensorFailed(f"`snort -T` did not finish within {timeout_s:g} s.") from exc
        return done.returncode, done.stdout + "\n" + done.stderr, config

    def resolve_rules(self, refs: Sequence[str]) -> list[Path]:
        """Paths (files or dirs of *.rules) and builtin:markers/events as files Snort loads whole."""
        out: list[Path] = []
        scratch = self.cache_dir / "snort" / "rules" / f".test-{os.getpid()}"
        try:
            for ref in refs:
                for source_ref, source in _sources(ref):
                    if source_ref == "builtin:events":
                        out.append(ruleprep.builtin_events(self.install, self.cache_dir, self._dump_builtin))
                        continue
                    out.append(ruleprep.loadable(source_ref, source, self.install, self.variables,
                                                 self.cache_dir, lambda f: self._snort_test([f], scratch)))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return list(dict.fromkeys(out))

    def _dump_builtin(self) -> str:
        return proc.run([str(self.install.binary), "--dump-builtin-rules"], timeout=60).stdout

    # --- config -------------------------------------------------------------------------------
    def check_capture(self, method: str | None) -> None:
        """The DAQ module must be one this libdaq build has (afpacket and pcap: static in scripts/build-snort.sh);
        pcap runs idsbench's module (`SnortInstall.require_pcap_module`)."""
        module, _ = capture_of(SensorOptions(capture=method))
        if module == "pcap":
            self.install.require_pcap_module()

    def _options(self, options: SensorOptions, log_dir: Path, interface: str | None,
                 mtu: int | None) -> SnortOptions:
        loads = rulesets.rule_loads(options.rules)
        filters = [f for load in loads for f in ruleprep.event_filters(load)]
        module, effective = capture_of(options)
        threads = threads_from(options.overrides, options.threads or default_threads())
        mb = effective.get("buffer-size-mb")
        return SnortOptions(
            rules=tuple(Path(r).resolve() for r in options.rules), log_dir=log_dir,
            stats_interval_s=options.stats_interval_s, interface=interface,
            # the pcap DAQ has no fanout: a second packet thread would see every packet again
            threads=1 if module == "pcap" else threads, mtu=mtu,
            buffer_size_mb=int(mb) if isinstance(mb, int) else buffer_from(options.overrides),
            daq_module=module, pcap_buffer=int(effective["buffer-size"]) if module == "pcap" else None,
            # libdaq's own pcap module cannot be stopped on a quiet wire: idsbench's replaces it
            daq_module_dirs=(self.install.require_pcap_module(),) if module == "pcap" and interface else (),
            variables=self.variables,
            event_filters=render_event_filters(filters), rule_profile=self.profiling,
            overrides=lua_overrides(options.overrides, options.config_overlay))

    def prepare(self, run_dir: Path, interface: str, options: SensorOptions, *,
                mtu: int | None = None) -> SnortRun:
        run_dir = Path(run_dir).resolve()
        run_dir.mkdir(parents=True, exist_ok=True)
        opts = self._options(options, run_dir, interface, mtu)
        config = run_dir / SNORT_CONFIG_FILE
        write_sensor_config(config, render_config(opts, self.install.base_config))
        argv = line_buffered(snort_argv(self.install.binary, config, opts))
        module, effective = capture_of(options)
        # the module a pcap sample ran is idsbench's (recorded with its options: results say so)
        patched: dict[str, Scalar] = {"daq-patch": PCAP_PATCH} if opts.daq_module_dirs else {}
        return SnortRun(argv=argv, log_dir=run_dir, config_path=config, console_path=run_dir / CONSOLE_FILE,
                        interface=interface, threads=opts.threads, capture=module,
                        capture_options={**effective, "threads": opts.threads, **patched})

    def offline_alerts(self, pcap: Path, options: SensorOptions, workdir: Path,
                       timeout_s: float = CONFIG_TEST_TIMEOUT_S) -> dict[int, int]:
        """Alerts per sid (text rules) when Snort reads `pcap` (`-r`, one packet thread, every packet
        processed) with the run's rules and config: the ground truth of detection."""
        workdir = Path(workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        for old in workdir.glob("*alert_json.txt"):
            old.unlink()
        opts = self._options(options, workdir, None, None)
        opts = replace(opts, threads=1, rule_profile=False)
        config = workdir / SNORT_CONFIG_FILE
        write_sensor_config(config, render_config(opts, self.install.base_config))
        done = proc.run(snort_argv(self.install.binary, config, opts, pcap=Path(pcap)), check=False,
                        timeout=timeout_s)
        text = done.stdout + "\n" + done.stderr
        if done.returncode != 0:
            errs = snort_log.errors(text) or text.splitlines()[-5:]
            raise SensorFailed(f"`snort -r {pcap}` failed (exit {done.returncode}):\n  " + "\n  ".join(errs),
                               fix="check the rules and config with `idsbench run` preflight messages.")
        run = SnortRun(argv=[], log_dir=workdir, config_path=config, console_path=workdir / CONSOLE_FILE,
                       interface="", threads=1)
        return run.alerts_by_signature()

    def config_test(self, options: SensorOptions, workdir: Path,
                    timeout_s: float = CONFIG_TEST_TIMEOUT_S) -> None:
        """`snort -T` with the config a run would use. InputError quoting Snort's rule errors (file:line
        reason), SpecError for overrides it rejects, SensorFailed otherwise."""
        for r in options.rules:
            if not Path(r).is_file():
                raise InputError(f"Rule file {r} does not exist.", fix="Fix sensor.rules in the spec.")
        if options.config_overlay is not None and not Path(options.config_overlay).is_file():
            raise InputError(f"The config overlay {options.config_overlay} does not exist.",
                             fix="Fix sensor.config in the spec.")
        opts = self._options(options, Path(workdir).resolve(), None, None)
        returncode, text, config = self._config_test_run(opts, Path(workdir).resolve(), timeout_s)
        if returncode == 0 and snort_log.config_validated(text):
            return
        raise _config_test_error(text, options, config, returncode)


def capture_of(options: SensorOptions) -> tuple[str, dict[str, Scalar]]:
    """The DAQ module of a run (`sensor.capture`; afpacket by default) and its effective options."""
    method = CAPTURE.method(options.capture)  # SpecError naming the DAQ modules
    return method.name, effective_options("snort", method, dict(options.capture_options))


def _sources(ref: str) -> list[tuple[str, Path]]:
    """(name in the spec, file) for one rule reference; builtin:events has no file (Path())."""
    if ref == "builtin:events":
        return [(ref, Path())]
    return [(ref if ref == "builtin:markers" else str(f), f) for f in rulesets.rule_files(ref)]


_LUA_ERROR = re.compile(r"(can't load|attempt to|syntax error|unexpected symbol|'=' expected|"
                        r"unknown (?:table|parameter|symbol)|invalid .* value|ERROR: [^:]*snort\.lua)", re.I)


def _config_test_error(text: str, options: SensorOptions, config: Path, rc: int) -> Exception:
    errs = snort_log.errors(text) or [line for line in text.splitlines() if _LUA_ERROR.search(line)]
    quoted = "\n  ".join(errs[:20]) if errs else "(Snort printed no ERROR line)"
    if snort_log.rule_errors(text):
        sources = {str(load.path): load.source for load in rulesets.rule_loads(options.rules)
                   if load.source != str(load.path)}
        return InputError(
            f"Snort 3 could not load the rules:\n  {ruleprep.rule_error_message(text, sources)}",
            fix="fix or remove the rules quoted above (each names its file and line).")
    if options.overrides or options.config_overlay is not None:
        sets = ", ".join(f"{k}={v}" for k, v in options.overrides)
        return SpecError(
            f"Snort rejected the configuration {config} with the spec's settings ({sets or options.config_overlay}) "
            f"(exit {rc}):\n  {quoted}",
            fix="fix [sensor.set.snort] (Lua assignments into Snort's module tables) or sensor.config.")
    return SensorFailed(f"`snort -T` failed (exit {rc}) on {config}:\n  {quoted}",
                        fix="check the Snort build (`make snort`) and the rendered config.")
