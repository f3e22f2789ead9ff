"""Snort 3: where the build is, the snort.lua a run uses, and its command line (docs/snort.md).

The build (scripts/build-snort.sh, `make snort`) installs under `<cache>/snort/<version>-<digest>/`
and points `<cache>/snort/current` at it; `.built` in the tree marks a finished build.

A run's config is one file, `snort.lua` in the run directory: it includes the stock
`<prefix>/etc/snort/snort.lua` (inspectors, bindings, default variables) and then sets, in order:
the DAQ (afpacket or pcap, passive, on the interface; pcap from SnortInstall.pcap_module_dir; none when
reading a capture with -r), `ips.mode = 'tap'` (inline off), the rules (`ips.rules` including each file by absolute path), alert_json to a
file in the log dir (gid/sid/rev per alert), perf_monitor (base counters as JSON every
stats_interval_s seconds, `packets = 0` so a quiet interval is written too), with `snort+profiling` the
rule profiler (every rule, by total time, printed to stdout at exit), and last the user's own Lua
overrides, so they win.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from idsbench import settings
from idsbench.buildstamp import SnortBuild, builds_pending_error, parse_build_stamp
from idsbench.errors import EnvironmentMissing, SpecError

SNORT_VERSION = "3.12.2.0"
DAQ_VERSION = "3.0.25"
# the patch (scripts/patches/<name>.patch) idsbench's pcap DAQ module is built with (SnortInstall.pcap_module_dir)
PCAP_PATCH = f"libdaq-{DAQ_VERSION}-pcap-interrupt"
MAX_SNAPLEN = 65535
SNAPLEN_SLACK = 14 + 8  # Ethernet header + two VLAN tags (the afpacket DAQ puts a stripped tag back)
# alert_json fields: numbers first; msg last, because Snort does not escape quotes in it (snort_stats
# recovers gid/sid/rev from such lines).
ALERT_FIELDS = ("seconds", "timestamp", "pkt_num", "proto", "pkt_len", "dir", "src_addr", "src_port",
                "dst_addr", "dst_port", "service", "gid", "sid", "rev", "action", "class", "priority", "msg")
_LUA_NAME = re.compile(r"^[A-Za-z0-9_.:@/+-]+$")
# `snort+profiling`: Snort 3's rule profiler (its per-rule stats are compiled in without
# ENABLE_RULE_PROFILER); every rule it evaluated, by total time. The module time profiler (on by default once
# `profiler` is set) and the memory profiler are turned off: they would add their own cost to every packet.
ENGINE_OPTIONS = frozenset({"profiling"})
RULE_PROFILER_LUA = ("profiler = { modules = { show = false }, memory = { show = false }, "
                     "rules = { show = true, count = 0, sort = 'total_time' } }\n")


def parse_engine_options(name: str) -> frozenset[str]:
    """The options of a Snort engine name (`snort+profiling`); SpecError naming the fix for a version (there
    is one Snort build, `make snort`) or an unknown option."""
    head, *options = name.split("+")
    if head != "snort":
        raise SpecError(f"sensor.engine {name!r}: Snort 3 has no builds to choose from (one is built by `make snort`).",
                        fix="write 'snort' or 'snort+profiling'; builds as an axis exist for Suricata only, e.g. "
                            "'suricata@8.0.6'.")
    unknown = sorted(set(options) - ENGINE_OPTIONS)
    if unknown or not options:
        raise SpecError(f"sensor.engine {name!r}: unknown Snort option(s) {', '.join(map(repr, unknown or ['']))}.",
                        fix=f"use {', '.join('snort+' + o for o in sorted(ENGINE_OPTIONS))}.")
    return frozenset(options)


@dataclass(frozen=True)
class SnortInstall:
    prefix: Path
    build: SnortBuild

    @property
    def binary(self) -> Path:
        return self.prefix / "bin" / "snort"

    @property
    def snort2lua(self) -> Path:
        return self.prefix / "bin" / "snort2lua"

    @property
    def base_config(self) -> Path:
        return self.prefix / "etc" / "snort" / "snort.lua"

    @property
    def pcap_module_dir(self) -> Path:
        """idsbench's pcap DAQ module (scripts/build-snort.sh): libdaq's with its interrupt also breaking
        libpcap's poll, so Snort stops on a quiet wire; version 104, replacing the static pcap(v4) when
        given in daq.module_dirs."""
        return self.prefix / "lib" / "daq-idsbench"

    def require_pcap_module(self) -> Path:
        """`pcap_module_dir`, EnvironmentMissing when it has no finished module (a tree built before it)."""
        folder = self.pcap_module_dir
        if not (folder / "daq_pcap.so").is_file() or not (folder / ".built").is_file():
            raise EnvironmentMissing(
                f"The Snort build at {self.prefix} lacks idsbench's pcap DAQ module ({folder}/daq_pcap.so): "
                "libdaq's own cannot be stopped on a quiet wire.",
                fix="run `make snort` (scripts/build-snort.sh builds the module in seconds, Snort itself stays).")
        return folder


def find_install(cache: Path | None = None) -> SnortInstall:
    """The Snort build `make snort` made (`<cache>/snort/current`); EnvironmentMissing if there is none."""
    current = (cache or settings.cache_dir()) / "snort" / "current"
    if settings.builds_pending():
        raise builds_pending_error(f"the Snort build at {current}")
    stamp = current / ".built"
    fix = "run `make snort` (scripts/build-snort.sh: builds Snort 3 and libdaq from ../shared/src, ~10 min)."
    try:
        build = parse_build_stamp(stamp.read_text())
    except OSError:
        raise EnvironmentMissing(f"Snort 3 is not built: no finished build at {current}.", fix=fix) from None
    except ValueError as exc:
        raise EnvironmentMissing(f"The Snort build stamp {stamp} is damaged ({exc}).", fix=fix) from exc
    install = SnortInstall(current.resolve(), build)
    if not install.binary.is_file():
        raise EnvironmentMissing(f"The Snort build at {install.prefix} has no bin/snort.", fix=fix)
    return install


@dataclass(frozen=True)
class SnortOptions:
    """What a run sets on top of the stock snort.lua."""

    rules: tuple[Path, ...]
    log_dir: Path
    stats_interval_s: int
    interface: str | None = None  # None: the capture comes from `-r` on the command line
    threads: int = 1
    mtu: int | None = None  # sets the snap length (the stock 1518 would cut jumbo frames)
    buffer_size_mb: int | None = None  # afpacket ring per thread (libdaq's default: 128 MiB)
    daq_module: str = "afpacket"  # sensor.capture: "afpacket" or "pcap" (idsbench.capture)
    pcap_buffer: int | None = None  # the pcap DAQ's libpcap ring in bytes (buffer_size)
    daq_module_dirs: tuple[Path, ...] = ()  # daq.module_dirs: idsbench's pcap module (SnortInstall.pcap_module_dir)
    # rule variables, e.g. the Suricata config's address/port groups so both engines see the same
    # HOME_NET: (("HOME_NET", "[10.0.0.0/8]"), ("HTTP_PORTS", "80")); *_PORTS are port variables
    variables: tuple[tuple[str, str], ...] = ()
    event_filters: str = ""  # snort.lua lines from snort_rules.render_event_filters
    rule_profile: bool = False  # the rule profiler's table on stdout at exit (`snort+profiling`)
    overrides: str = ""  # the user's Lua, applied last

    def __post_init__(self) -> None:
        if self.stats_interval_s < 1:
            raise SpecError(f"Snort's perf_monitor interval must be >= 1 s, got {self.stats_interval_s}.",
                            fix="set sensor.stats_interval_s to 1 or more.")
        if not 1 <= self.threads <= 256:
            raise SpecError(f"Snort packet threads {self.threads} is out of range.", fix="use 1..256.")
        if self.interface is not None and not _LUA_NAME.match(self.interface):
            raise SpecError(f"interface name {self.interface!r} cannot be used in snort.lua.",
                            fix="use a plain interface name.")
        for name, _ in self.variables:
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
                raise SpecError(f"rule variable name {name!r} is not UPPER_CASE.", fix="use names like HOME_NET.")
        if self.buffer_size_mb is not None and self.buffer_size_mb < 1:
            raise SpecError(f"afpacket buffer {self.buffer_size_mb} MiB is too small.", fix="use 1 MiB or more.")

    @property
    def snaplen(self) -> int:
        return MAX_SNAPLEN if self.mtu is None else min(MAX_SNAPLEN, self.mtu + SNAPLEN_SLACK)


def lua_string(value: str) -> str:
    """A Lua string literal."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"'{escaped}'"


def _rules_block(rules: tuple[Path, ...]) -> str:
    for path in rules:
        if not path.is_absolute() or "]]" in str(path) or "\n" in str(path):
            raise SpecError(f"rule file path {path} cannot be included by snort.lua.",
                            fix="give an absolute path without ']]' or newlines.")
    lines = "".join(f"include {path}\n" for path in rules)
    return f"ips.rules = [[\n{lines}]]\n"


def render_config(options: SnortOptions, base_config: Path) -> str:
    """The run's snort.lua."""
    out = [f"-- written by idsbench for Snort {SNORT_VERSION}; the stock config, then this run's settings\n",
           f"include {lua_string(str(base_config))}\n\n"]
    if options.interface is not None:
        if options.daq_module == "pcap":
            variables = [f"buffer_size={options.pcap_buffer}"] if options.pcap_buffer is not None else []
        else:
            variables = ["fanout_type=hash"] if options.threads > 1 else []
            if options.buffer_size_mb is not None:
                variables.append(f"buffer_size_mb={options.buffer_size_mb}")
        var_list = ", ".join(lua_string(v) for v in variables)
        dirs = ""
        if options.daq_module_dirs:
            dirs = f"    module_dirs = {{ {', '.join(lua_string(str(d)) for d in options.daq_module_dirs)} }},\n"
        out.append(f"daq = {{\n{dirs}    inputs = {{ {lua_string(options.interface)} }},\n"
                   f"    snaplen = {options.snaplen},\n"
                   f"    modules = {{ {{ name = {lua_string(options.daq_module)}, mode = 'passive', "
                   f"variables = {{ {var_list} }} }} }},\n"
                   "}\n")
    else:
        out.append(f"daq = {{ snaplen = {options.snaplen} }}\n")
    out.append("ips.mode = 'tap'\n")
    out.append(_rules_block(options.rules))
    for name, value in options.variables:
        kind = "ports" if name.endswith("_PORTS") else "nets"
        out.append(f"ips.variables.{kind}.{name} = {lua_string(value)}\n")
    out.append(options.event_filters)
    out.append(f"alert_json = {{ file = true, fields = {lua_string(' '.join(ALERT_FIELDS))} }}\n")
    out.append(f"perf_monitor = {{ base = true, seconds = {options.stats_interval_s}, packets = 0, "
               "format = 'json', output = 'file' }\n")
    if options.rule_profile:
        out.append(RULE_PROFILER_LUA)
    if options.overrides.strip():
        out.append("\n-- overrides from the spec\n" + options.overrides.rstrip() + "\n")
    return "".join(out)


def snort_argv(binary: Path, config: Path, options: SnortOptions, *, pcap: Path | None = None,
               config_test: bool = False) -> list[str]:
    """Command line: `-c config -l log_dir`, `-z threads`, `-r pcap` when reading a capture, `-T` to
    only validate the config and rules. (Run it line-buffered, e.g. under `stdbuf -oL -eL`: Snort
    writes its log with stdio, so a pipe or file sees "Commencing packet processing" only at exit.)"""
    if (pcap is None) == (options.interface is None) and not config_test:
        raise SpecError("Snort needs exactly one packet source: an interface in the options or a capture.",
                        fix="give SnortOptions.interface for live capture, or pcap= to read a file.")
    argv = [str(binary), "-c", str(config), "-l", str(options.log_dir)]
    if options.threads > 1:
        argv += ["-z", str(options.threads)]
    if pcap is not None:
        argv += ["-r", str(pcap)]
    if config_test:
        argv.append("-T")
    return argv


def line_buffered(argv: list[str]) -> list[str]:
    """`argv` under coreutils' stdbuf, so its stdout/stderr reach the log file line by line."""
    return ["stdbuf", "-oL", "-eL", *argv]


def log_file_names(threads: int, base: str) -> list[str]:
    """Snort's per-thread output files in the log dir: `base` with one thread, `<i>_base` with more."""
    return [base] if threads == 1 else [f"{i}_{base}" for i in range(threads)]


# --- the spec's overrides (`[sensor.set.snort]`, or `sensor.set` when only Snort runs) --------------
THREADS_KEY = "threads"  # not Lua: Snort's packet threads (-z); default: every CPU, as Suricata's "auto"
BUFFER_KEY = "buffer_size_mb"  # not Lua: the afpacket DAQ's ring per thread (libdaq's default: 128 MiB)
RESERVED_KEYS = (THREADS_KEY, BUFFER_KEY)
_LUA_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_NUMBER = re.compile(r"^-?(?:\d+|\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def lua_value(text: str) -> str:
    """A spec value as Lua: numbers and booleans (true/false, yes/no) as they are, else a string."""
    if _NUMBER.match(text):
        return text
    if text.lower() in ("true", "yes"):
        return "true"
    if text.lower() in ("false", "no"):
        return "false"
    return lua_string(text)


def lua_overrides(overrides: tuple[tuple[str, str], ...], overlay: Path | None = None) -> str:
    """The spec's settings as snort.lua lines: an overlay file (`sensor.config`) included, then each
    `key = value` (dotted keys assign into Snort's module tables, e.g. `search_engine.search_method`)."""
    lines = []
    if overlay is not None:
        if "\n" in str(overlay):
            raise SpecError(f"sensor.config path {overlay!r} holds a newline.", fix="rename the file.")
        lines.append(f"include {lua_string(str(overlay))}")
    for key, value in overrides:
        if key in RESERVED_KEYS:
            continue
        if not _LUA_PATH.match(key):
            raise SpecError(f"Snort override key {key!r} is not a dotted Lua name.",
                            fix="write keys like 'search_engine.search_method' or 'stream_tcp.session_timeout'.")
        lines.append(f"{key} = {lua_value(value)}")
    return "".join(f"{line}\n" for line in lines)


def _count(overrides: tuple[tuple[str, str], ...], key: str, top: int) -> int | None:
    for name, value in overrides:
        if name == key:
            if not value.isdigit() or not 1 <= int(value) <= top:
                raise SpecError(f"Snort {key} {value!r} is not a count of 1..{top}.", fix=f"e.g. {key} = 2.")
            return int(value)
    return None


def threads_from(overrides: tuple[tuple[str, str], ...], default: int) -> int:
    """Packet threads: the `threads` override, else `default`; SpecError when it is not a count."""
    found = _count(overrides, THREADS_KEY, 256)
    return default if found is None else found


def buffer_from(overrides: tuple[tuple[str, str], ...]) -> int | None:
    """The afpacket ring per thread in MiB (`buffer_size_mb`), None for libdaq's default."""
    return _count(overrides, BUFFER_KEY, 1 << 16)
