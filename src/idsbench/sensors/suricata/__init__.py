"""The Suricata adapter: the ONE package that knows about the suricata binary.

Version/build-info, rule resolution, `-T` config tests, config rendering (`config`), argv,
readiness and counters (`log`, `eve`). Processes are started by the setup (through
proc.Supervisor), which prefixes `ip netns exec NS` when the sensor lives in a namespace.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from idsbench import native, proc, settings
from idsbench.bypass import counting
from idsbench.bypass.suricata import PROGRAMS
from idsbench.bypass.suricata import program as bypass_program
from idsbench.bypass.suricata import settings as bypass_settings
from idsbench.capture import Scalar, native_xdp
from idsbench.errors import EnvironmentMissing, InputError, SensorFailed, SpecError
from idsbench.sensors import rulesets
from idsbench.sensors.base import CounterPoint, Counters, EventLogIntegrity, SensorOptions
from idsbench.sensors.suricata import log as slog
from idsbench.sensors.suricata import parity
from idsbench.sensors.suricata.build import source_dir
from idsbench.sensors.suricata.capture import CAPTURE
from idsbench.sensors.suricata.config import (
    CAPTURE_FLAGS,
    DEFAULT_CONFIG,
    RunPaths,
    capture_section,
    cluster_id_for,
    dump_config,
    load_default_config,
    max_frame_for,
    render_config,
)
from idsbench.sensors.suricata.eve import EveScan, scan_eve
from idsbench.sensors.tail import FileTail
from idsbench.store.layout import CONSOLE_FILE
from idsbench.store.writers import write_sensor_config

_OVERRIDE_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")
_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%f%z"
CONFIG_TEST_TIMEOUT_S = 600.0


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _sum_leaves(d: Any) -> int:
    if isinstance(d, dict):
        return sum(_sum_leaves(v) for v in d.values())
    return _int(d)


def counters_from_stats(stats: Mapping[str, Any], drops_at_nic: bool = False) -> Counters:
    """Map one eve `stats` object (totals) onto the common schema; absent counters are 0.

    AF_XDP has no capture.kernel_packets: what its sockets received is capture.afxdp_packets (read from
    the ring) plus capture.kernel_drops (the sockets' rx_dropped + rx_ring_full + rx_invalid_descs; the
    fill ring's empty count is not added: those packets are in rx_dropped already). `drops_at_nic`: the
    interface counted those drops as its rx_dropped too (native XDP), recorded in dropped_at_nic_pkts."""
    flows = _get(stats, "flow", "total")
    if flows is None:  # before 7.0: per-protocol counters only
        flows = sum(_int(_get(stats, "flow", p)) for p in ("tcp", "udp", "icmpv4", "icmpv6"))
    drops = _int(_get(stats, "capture", "kernel_drops"))
    captured = _int(_get(stats, "capture", "kernel_packets"))
    if _get(stats, "capture", "afxdp_packets") is not None:
        captured = _int(_get(stats, "capture", "afxdp_packets")) + drops
    decoded = _int(_get(stats, "decoder", "pkts"))
    # A decoded packet was captured: a worker refreshes capture.kernel_packets (its socket's statistics)
    # less often than decoder.pkts, so a record may show fewer captured than decoded (measured mid-search:
    # kernel_packets 336,311, decoder.pkts 491,806 in one record); such a record counts them captured (where
    # the capture counts at all: offline reading has no capture counters).
    if _get(stats, "capture", "kernel_packets") is not None or _get(stats, "capture", "afxdp_packets") is not None:
        captured = max(captured, decoded + drops)
    return Counters(
        captured_pkts=captured,
        dropped_pkts=drops,
        dropped_at_nic_pkts=drops if drops_at_nic else 0,
        decoded_pkts=decoded,
        decoded_bytes=_int(_get(stats, "decoder", "bytes")),
        alerts=_int(_get(stats, "detect", "alert")),
        flows=_int(flows),
        invalid_pkts=_int(_get(stats, "decoder", "invalid")),
        decoder_events=_sum_leaves(_get(stats, "decoder", "event")),
        **bypassed_from_stats(stats),
    )


def bypassed_from_stats(stats: Mapping[str, Any]) -> dict[str, int]:
    """Packets of bypassed flows (idsbench.bypass): `flow_bypassed.local_pkts` (captured and decoded, then
    skipped by the stream engine's bypass), `local_capture_pkts` (seen by Suricata after it handed the flow
    to the kernel filter, before the filter took over) and `pkts` (dropped by the XDP/eBPF filter: read
    from its flow table by the flow manager). The first two were decoded; the last never reached the
    capture."""
    local = _int(_get(stats, "flow_bypassed", "local_pkts")) + _int(_get(stats, "flow_bypassed", "local_capture_pkts"))
    return {"bypassed_pkts": local + _int(_get(stats, "flow_bypassed", "pkts")), "bypassed_local_pkts": local}


def capture_drops_from_stats(method: str, stats: Mapping[str, Any]) -> dict[str, int]:
    """The method's own drop points (keys `<method>.<point>`) from an eve stats object."""
    drops = _int(_get(stats, "capture", "kernel_drops"))
    if method == "af-xdp":  # rx_dropped + rx_ring_full + rx_invalid_descs of the sockets (XDP_STATISTICS)
        return {"af-xdp.socket_drops": drops}
    if method == "pcap":  # ps_ifdrop: the interface's own drops (booked at the NIC, not the capture)
        return {"pcap.ps_drop": drops, "pcap.ps_ifdrop": _int(_get(stats, "capture", "kernel_ifdrops"))}
    return {f"{method}.ring_drops": drops}  # tp_drops: the ring was full


def point_from_record(rec: Mapping[str, Any], drops_at_nic: bool = False) -> CounterPoint | None:
    """CounterPoint from an eve stats record, or None when it is not one."""
    stats = rec.get("stats")
    if rec.get("event_type") != "stats" or not isinstance(stats, dict):
        return None
    try:
        t = datetime.strptime(str(rec.get("timestamp")), _TS_FORMAT).timestamp()
    except ValueError:
        t = 0.0
    return CounterPoint(t_unix=t, uptime_s=float(_int(stats.get("uptime"))),
                        counters=counters_from_stats(stats, drops_at_nic))


def _check_overrides(overrides: Mapping[str, str]) -> None:
    for k, v in overrides.items():
        if not _OVERRIDE_KEY.match(k):
            raise SpecError(
                f"Suricata override key {k!r} is not a dotted config path.",
                fix="Use keys like 'detect.profile' or 'af-packet.0.ring-size' (letters, digits, . _ -).",
            )
        if "\n" in str(v):
            raise SpecError(f"Suricata override {k!r} has a multi-line value.")


@dataclass
class SuricataRun:
    """A prepared Suricata run: argv plus every artifact path, all inside `log_dir`."""

    argv: list[str]
    log_dir: Path
    eve_path: Path
    log_path: Path
    yaml_path: Path
    pid_path: Path
    console_path: Path  # where the runner is expected to put stdout/stderr (stdout.txt)
    capture: str = "af-packet"  # the capture method (idsbench.capture)
    capture_options: dict[str, Scalar] = field(default_factory=dict)  # effective, defaults written out
    bypass: str = "off"  # the flow bypass mode (idsbench.bypass)
    bypass_settings: dict[str, Scalar] = field(default_factory=dict)  # its settings, written out
    # what its XDP bypass filter dropped on the interface, or its eBPF socket filter at the socket (the session
    # reads it at stop: the interface's counter after the stop, the socket filter's maps before it)
    filter_drops: int = 0
    _flow_maps: list[int] = field(default_factory=list, repr=False)  # the socket filter's flow tables (map ids)
    last_eve_scan: EveScan | None = field(default=None, repr=False)
    _last_stats: dict[str, Any] | None = field(default=None, repr=False)  # Any: Suricata's eve JSON as it wrote it
    _tail: FileTail = field(init=False, repr=False)
    _tail_point: CounterPoint | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._tail = FileTail(self.eve_path)

    def _log_lines(self) -> list[str]:
        lines: list[str] = []
        for p in (self.log_path, self.console_path):
            try:
                lines += p.read_text(errors="replace").splitlines()
            except OSError:
                continue
        return lines

    def errors(self) -> list[str]:
        """Error and Warning lines worth surfacing (deduplicated, prefix stripped)."""
        return slog.error_lines(self._log_lines())

    def worker_threads(self) -> int | None:
        """The workers Suricata started, from its log (`W: N` of "Threads created")."""
        return slog.worker_threads(self._log_lines())

    def wait_ready(
        self,
        poll: Callable[[], int | None],
        timeout_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        interval_s: float = 0.05,
    ) -> float:
        """Block until Suricata logs `Engine started.`; return the seconds waited.

        Raises SensorFailed (quoting the log's errors) if the process exits first or on timeout;
        stopping the process is then the caller's job.
        """
        t0 = clock()
        offset = 0
        pending = ""
        while True:
            try:
                with self.log_path.open("r", errors="replace") as f:
                    f.seek(offset)
                    new = f.read()
                    offset = f.tell()
            except FileNotFoundError:
                new = ""
            text = pending + new
            if slog.READY_MARKER in text:
                return clock() - t0
            pending = text[text.rfind("\n") + 1 :]
            rc = poll()
            if rc is not None:
                raise self._failed(f"Suricata exited with code {rc} before it was ready")
            if clock() - t0 > timeout_s:
                raise self._failed(f"Suricata was not ready after {timeout_s:g} s")
            sleep(interval_s)

    def _failed(self, what: str) -> SensorFailed:
        errs = slog.error_lines(self._log_lines(), warnings=False) or self.errors()
        quoted = "\n  ".join(errs) if errs else "(no Error lines logged)"
        return SensorFailed(
            f"{what}. Errors from {self.log_path}:\n  {quoted}",
            fix=f"Check the rendered config {self.yaml_path} and the full log; "
            "`idsbench doctor` checks the Suricata installation.",
        )

    def read_eve(self) -> tuple[list[CounterPoint], EveScan]:
        points: list[CounterPoint] = []
        last: list[dict[str, Any]] = []  # Any (here and in the sinks): eve records, Suricata's JSON

        def sink(rec: dict[str, Any]) -> None:  # Any: an eve record
            p = point_from_record(rec, self._drops_at_nic)
            if p is not None:
                points.append(p)
                last[:] = [rec]

        scan = scan_eve(self.eve_path, ("stats",), sink)
        self.last_eve_scan = scan
        self._last_stats = last[0]["stats"] if last else {}
        return points, scan

    @property
    def _drops_at_nic(self) -> bool:
        return native_xdp(CAPTURE.method(self.capture), self.capture_options)  # its drops are the NIC's too

    def capture_info(self) -> tuple[str, dict[str, Scalar], dict[str, int]]:
        """The capture method, its effective options and its drop points (the last stats record)."""
        if self._last_stats is None:
            self.counter_series()
        return self.capture, dict(self.capture_options), capture_drops_from_stats(self.capture,
                                                                                   self._last_stats or {})

    def bypass_filter_pkts(self, pids: list[int]) -> int:
        """Packets the eBPF socket filter (bypass "ebpf") dropped so far, from its per-flow counters
        (bypass/counting.py), read through the sensor processes `pids`: 0 in other modes, and before
        the filter is loaded."""
        if self.bypass != "ebpf":
            return 0
        if not self._flow_maps:
            self._flow_maps = counting.flow_maps(pids)
        return counting.filtered_packets(self._flow_maps)

    def bypass_info(self) -> tuple[str, dict[str, Scalar]]:
        """The flow bypass mode and its effective settings (idsbench.bypass)."""
        return self.bypass, dict(self.bypass_settings)

    def counter_series(self) -> list[CounterPoint]:
        """One point per eve stats record (empty when eve.json does not exist yet)."""
        if not self.eve_path.exists():
            return []
        return self.read_eve()[0]

    def live_counters(self) -> CounterPoint | None:
        """The newest stats record, reading only what eve.json gained since the last call."""
        lines = self._tail.new_lines()
        if lines is None:
            return self._tail_point
        for line in lines.splitlines():
            if b'"event_type":"stats"' not in line:
                continue
            try:
                point = point_from_record(json.loads(line), self._drops_at_nic)
            except (ValueError, RecursionError):
                continue
            if point is not None:
                self._tail_point = point
        return self._tail_point

    def alerts_by_signature(self) -> dict[int, int]:
        found: dict[int, int] = {}

        def sink(rec: dict[str, Any]) -> None:  # Any: an eve record, Suricata's JSON
            sid = (rec.get("alert") or {}).get("signature_id")
            if isinstance(sid, int):
                found[sid] = found.get(sid, 0) + 1

        if self.eve_path.exists():
            scan_eve(self.eve_path, ("alert",), sink, warn_truncated=False)
        return found

    def degraded(self) -> dict[str, int]:
        """Memcap, emergency and gap counters of the last stats record (read by final_counters)."""
        if self._last_stats is None:
            self.counter_series()
        return degraded_from_stats(self._last_stats or {})

    def integrity(self) -> EventLogIntegrity | None:
        scan = self.last_eve_scan
        if scan is None:
            return None
        return EventLogIntegrity(self.eve_path, scan.lines, scan.corrupt_lines, bool(scan.truncated_tail),
                                 tuple(scan.warnings))

    def final_counters(self) -> Counters:
        """Counters after Suricata exited: its last eve stats record (Suricata 7 writes one at
        shutdown) merged field-wise (max) with the shutdown summary in suricata.log."""
        series = self.counter_series()
        summary = slog.parse_shutdown(self._log_lines())
        if not series and summary.kernel_packets is None:
            raise SensorFailed(
                f"Suricata left no counters: no stats record in {self.eve_path} and no "
                f"shutdown summary in {self.log_path}.",
                fix="The sensor probably crashed or was killed; see its log and errors().",
            )
        last = series[-1].counters if series else Counters()
        drops = summary.kernel_drops or 0
        # the device line's packets: AF_PACKET's include its drops, AF_XDP's and libpcap's do not (measured)
        captured = (summary.kernel_packets or 0) + (drops if self.capture in ("af-xdp", "pcap") else 0)
        if self.capture == "pcap":  # what libpcap had received at exit, packets left in its ring included
            captured = max(captured, slog.pcap_total(self._log_lines()) or 0)
        from_log = Counters(
            captured_pkts=captured,
            dropped_pkts=drops,
            dropped_at_nic_pkts=drops if self._drops_at_nic else 0,
            alerts=summary.alerts or 0,
        )
        final = last.max_with(from_log)
        if self.bypass == "ebpf":
            # the socket filter's per-flow counters hold every packet it dropped; flow_bypassed.pkts (Suricata's
            # flow manager: the same counters' growth, read when a bypassed flow's timeout comes, 100 s by
            # default) is a part of them while the entries live, and the only trace of an entry it deleted
            # (a flow idle past its timeout): the larger of the two, never their sum (double counting)
            kernel = final.bypassed_pkts - final.bypassed_local_pkts
            return dataclasses.replace(final, bypassed_pkts=final.bypassed_local_pkts
                                       + max(kernel, self.filter_drops))
        # the XDP filter's drops reach Suricata's counters only when its flow manager reads a bypassed flow at
        # the flow's timeout (100 s; flow_bypassed.pkts stays 0 in a sample): counted at the interface instead
        return dataclasses.replace(final, bypassed_pkts=final.bypassed_pkts + self.filter_drops)


# Suricata counters that say the engine degraded (state dropped, reassembly gave up) without the
# packet being lost: reported beside the loss waterfall, never counted as drops.
DEGRADED_COUNTERS = (
    ("tcp", "segment_memcap_drop"), ("tcp", "ssn_memcap_drop"), ("tcp", "reassembly_gap"),
    ("tcp", "insert_data_overlap_fail"), ("flow", "memcap"), ("flow", "emerg_mode_entered"),
    ("defrag", "max_frag_hits"), ("defrag", "ipv4", "memcap"), ("defrag", "ipv6", "memcap"),
    ("exception_policy", "total"),
)


def degraded_from_stats(stats: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for path in DEGRADED_COUNTERS:
        value = _get(stats, *path)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value:
            out[".".join(path)] = int(value)
    return out


class Suricata:
    """Adapter for one Suricata binary."""

    name = "suricata"
    capture_methods = CAPTURE

    def __init__(self, binary: str = "suricata", default_config: Path = DEFAULT_CONFIG):
        self.binary = binary
        self.default_config = Path(default_config)

    # --- the binary -------------------------------------------------------------------------
    def available(self) -> bool:
        return shutil.which(self.binary) is not None

    def require(self) -> None:
        self._require_binary()
        if not self.build_info().get("af_packet"):
            raise EnvironmentMissing(f"{self.binary} was built without AF_PACKET support.",
                                     fix="install a Suricata package built with AF_PACKET (Debian's is).")

    def image_packages(self) -> tuple[str, ...]:
        return ()  # every container/VM rootfs holds the host's Suricata package

    def host_paths(self) -> tuple[Path, ...]:
        return ()

    def _require_binary(self) -> None:
        if not self.available():
            raise EnvironmentMissing(
                f"The Suricata binary {self.binary!r} was not found.",
                fix="Install suricata (`make setup`; Debian: from <codename>-backports).",
            )

    def _run(self, args: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self._require_binary()
        return proc.run([self.binary, *args], timeout=timeout, check=False)

    @cached_property
    def _build_info_text(self) -> str:
        return self._run(["--build-info"], timeout=30).stdout

    def version(self) -> str:
        return str(self.build_info()["version"])

    def build_info(self) -> dict[str, object]:
        """version, features (list), hyperscan/af_packet (bool), sysconfdir, datarootdir."""
        text = self._build_info_text
        m = re.search(r"This is Suricata version (\S+)", text)
        if not m:
            raise EnvironmentMissing(f"`{self.binary} --build-info` did not report a version.")

        def field_(label: str) -> str | None:
            fm = re.search(rf"^\s*{re.escape(label)}\s+(.+?)\s*$", text, re.M)
            return fm.group(1) if fm else None

        feats = field_("Features:")
        return {
            "version": m.group(1),
            "features": feats.split() if feats else [],
            "hyperscan": (field_("Hyperscan support:") or "").startswith("yes"),
            "af_packet": (field_("AF_PACKET support:") or "").startswith("yes"),
            "af_xdp": (field_("AF_XDP support:") or "").startswith("yes"),
            "ebpf": (field_("eBPF support:") or "").startswith("yes"),
            "sysconfdir": (field_("Configuration directory:") or "/etc/suricata/").rstrip("/"),
            "datarootdir": field_("--datarootdir") or "/usr/share",
        }

    def check_capture(self, method: str | None) -> None:
        """SpecError when this build cannot capture with `method` (`suricata --build-info` says)."""
        if method == "af-xdp" and not self.build_info().get("af_xdp"):
            raise SpecError(f"sensor.capture = \"af-xdp\": {self.binary} (Suricata {self.version()}) was built "
                            "without AF_XDP support (`suricata --build-info`: AF_XDP support: no).",
                            fix="use a Suricata built with libxdp and libbpf (Debian's 7.0 package is; for the "
                                "source build: scripts/install-system.sh installs libxdp-dev and libbpf-dev, "
                                "then rebuild), or drop \"af-xdp\" from sensor.capture.")

    def check_bypass(self, mode: str | None) -> None:
        """SpecError / EnvironmentMissing when this build cannot bypass with `mode` (idsbench.bypass): the
        kernel-side modes need eBPF support (`--build-info`) and programs built from Suricata's sources."""
        if mode not in PROGRAMS:
            return
        if not self.build_info().get("ebpf"):
            raise SpecError(f"sensor.bypass = {mode!r}: {self.binary} (Suricata {self.version()}) was built without "
                            "eBPF support (`suricata --build-info`: eBPF support: no).",
                            fix="use a Suricata built with libbpf (Debian's 7.0 package is), or bypass = \"local\".")
        bypass_program(PROGRAMS[mode], settings.cache_dir(), source_dir())
        why = counting.bpftool_missing() if mode == "ebpf" else None
        if why is not None:  # the socket filter's drops are counted from its maps (bypass_filter_pkts)
            raise EnvironmentMissing(f"sensor.bypass = \"ebpf\": cannot count the socket filter's drops: {why}.",
                                     fix=counting.BPFTOOL_FIX)
        native.program("ibmemlock")

    # --- rules ------------------------------------------------------------------------------
    def bundled_rules(self) -> list[Path]:
        """Suricata's own event rules, minus those for app-layer protocols the default config
        disables (e.g. dnp3, modbus: their rules fail to load otherwise)."""
        info = self.build_info()
        dirs = [Path(str(info["sysconfdir"])) / "rules", Path(str(info["datarootdir"])) / "suricata" / "rules"]
        protocols = _get(load_default_config(self.default_config), "app-layer", "protocols") or {}
        for d in dirs:
            files = sorted(d.glob("*.rules"))
            if files:
                return [f for f in files if not _protocol_disabled(f, protocols)]
        raise EnvironmentMissing(
            f"Suricata's bundled event rules were not found in {' or '.join(map(str, dirs))}.",
            fix="Reinstall the suricata package, or list rule files explicitly in the spec.",
        )

    def resolve_rules(self, refs: Sequence[str]) -> list[Path]:
        """`builtin:events`, `builtin:markers`, or paths (files or directories of *.rules)."""
        out: list[Path] = []
        for ref in refs:
            out += self.bundled_rules() if ref == "builtin:events" else rulesets.rule_files(ref)
        return list(dict.fromkeys(out))  # keep order, drop duplicates

    # --- config ------------------------------------------------------------------------------
    def prepare(self, run_dir: Path, interface: str, options: SensorOptions, *,
                mtu: int | None = None) -> SuricataRun:
        """Render `run_dir/suricata.yaml` and return the run (argv not yet started)."""
        return self.prepare_config(run_dir, interface, list(options.rules), options.override_map,
                                   options.stats_interval_s, threads=options.threads, mtu=mtu,
                                   overlay=options.config_overlay, capture=options.capture or "af-packet",
                                   capture_options=dict(options.capture_options), bypass=options.bypass or "off")

    def prepare_config(
        self,
        run_dir: Path,
        interface: str,
        rules: Sequence[Path],
        overrides: Mapping[str, str],
        stats_interval_s: int,
        threads: int | None = None,
        mtu: int | None = None,
        cluster_id: int | None = None,
        overlay: Path | None = None,
        capture: str = "af-packet",
        capture_options: Mapping[str, Scalar] | None = None,
        bypass: str = "off",
    ) -> SuricataRun:
        """`prepare` with every knob explicit (tests use threads and cluster_id). A kernel-side bypass
        ("xdp", "ebpf") loads its program built from Suricata's sources (bypass/suricata.py) and
        starts Suricata with the memlock shim preloaded (native/src/ibmemlock.c)."""
        _check_overrides(overrides)
        run_dir = Path(run_dir).resolve()
        run_dir.mkdir(parents=True, exist_ok=True)
        paths = RunPaths(run_dir)
        program = str(bypass_program(PROGRAMS[bypass], settings.cache_dir(), source_dir())) \
            if bypass in PROGRAMS else None
        cfg = render_config(
            load_default_config(self.default_config), paths, interface, rules,
            stats_interval_s, threads=threads, mtu=mtu, cluster_id=cluster_id,
            config_dir=self.default_config.parent, capture=capture, capture_options=capture_options,
            bypass=bypass, bypass_program=program,
        )
        cid = cluster_id if cluster_id is not None else cluster_id_for(paths.run_dir)
        _, effective = capture_section(capture, interface, threads, cid, max_frame_for(mtu), capture_options or {})
        write_sensor_config(paths.yaml, dump_config(cfg))
        paths.pid.unlink(missing_ok=True)  # a stale pid file makes Suricata refuse to start
        argv = [
            self.binary, "-c", str(paths.yaml), f"{CAPTURE_FLAGS[capture]}={interface}",
            "-l", str(run_dir), "--pidfile", str(paths.pid),
        ]
        if program is not None:  # Suricata's own RLIMIT_MEMLOCK raise fails without CAP_SYS_RESOURCE
            argv = ["env", f"LD_PRELOAD={native.program('ibmemlock')}", *argv]
        if overlay is not None:
            argv += ["--include", str(Path(overlay).resolve())]
        for k, v in overrides.items():
            argv += ["--set", f"{k}={v}"]
        return SuricataRun(
            argv=argv, log_dir=run_dir, eve_path=paths.eve, log_path=paths.log,
            yaml_path=paths.yaml, pid_path=paths.pid, console_path=run_dir / CONSOLE_FILE,
            capture=capture, capture_options=effective, bypass=bypass,
            bypass_settings=bypass_settings(bypass, program),
        )

    def offline_parity(self, options: SensorOptions, workdir: Path,
                       timeout_s: float = CONFIG_TEST_TIMEOUT_S) -> parity.OfflineParity:
        """How `suricata -r` matches a live sample with these options (sensors/suricata/parity.py): the live
        capture's settings as Suricata reads the config a sample renders (`--dump-config`)."""
        run = self.prepare(Path(workdir), "lo", dataclasses.replace(options, bypass=None))
        cp = self._run([a for a in run.argv[1:] if not a.endswith("=lo")] + ["--dump-config"], timeout=timeout_s)
        if cp.returncode != 0:
            lines = (cp.stdout + "\n" + cp.stderr).splitlines()
            raise SensorFailed(f"`suricata --dump-config` failed (exit {cp.returncode}):\n  "
                               + "\n  ".join(slog.error_lines(lines) or lines[-5:]),
                               fix="check the rules and config with `idsbench run` preflight messages.")
        return parity.offline_parity(parity.live_capture(parity.parse_dump(cp.stdout), options.capture or "af-packet",
                                                         "lo"))

    def offline_alerts(self, pcap: Path, options: SensorOptions, workdir: Path,
                       timeout_s: float = CONFIG_TEST_TIMEOUT_S) -> dict[int, int]:
        """Alerts per sid when Suricata reads `pcap` offline with the run's rules and config (`-r`,
        every packet processed: the ground truth of detection), with the live capture's checksum mode
        (`offline_parity`)."""
        match = self.offline_parity(options, workdir, timeout_s)
        run = self.prepare(Path(workdir), "lo", dataclasses.replace(options, bypass=None))
        args = [a for a in run.argv[1:] if not a.endswith("=lo")]
        for key, value in match.sets.items():
            args += ["--set", f"{key}={value}"]
        args += ["-r", str(pcap), "--runmode", "single"]
        cp = self._run(args, timeout=timeout_s)
        if cp.returncode != 0:
            lines = (cp.stdout + "\n" + cp.stderr).splitlines()
            raise SensorFailed(f"`suricata -r {pcap}` failed (exit {cp.returncode}):\n  "
                               + "\n  ".join(slog.error_lines(lines) or lines[-5:]),
                               fix="check the rules and config with `idsbench run` preflight messages.")
        return run.alerts_by_signature()

    def config_test(self, options: SensorOptions, workdir: Path,
                    timeout_s: float = CONFIG_TEST_TIMEOUT_S) -> None:
        """`suricata -T` on the config a run would use. Raises InputError (rules that do not
        load), SpecError (overrides Suricata rejects) or SensorFailed (anything else)."""
        rules, overrides = list(options.rules), options.override_map
        self.check_capture(options.capture)
        for r in rules:
            if not Path(r).is_file():
                raise InputError(f"Rule file {r} does not exist.", fix="Fix the path in the spec.")
        if options.config_overlay is not None and not Path(options.config_overlay).is_file():
            raise InputError(f"The config overlay {options.config_overlay} does not exist.",
                             fix="Fix sensor.config in the spec.")
        run = self.prepare(Path(workdir), "lo", SensorOptions(tuple(rules), options.overrides, 1,
                                                              options.config_overlay))
        args = [a for a in ["-T", *run.argv[1:]] if a != "--af-packet=lo"]
        try:
            cp = self._run(args, timeout=timeout_s)
        except EnvironmentMissing as e:
            raise SensorFailed(f"`suricata -T` did not finish within {timeout_s:g} s.") from e
        if cp.returncode == 0:
            return
        lines = (cp.stdout + "\n" + cp.stderr).splitlines()
        raise _config_test_error(lines, rules, overrides, cp.returncode)


def _protocol_disabled(rule_file: Path, protocols: Mapping[str, Any]) -> bool:
    proto = rule_file.stem.removesuffix("-events")
    conf = protocols.get(proto) if isinstance(protocols, dict) else None
    return isinstance(conf, dict) and conf.get("enabled") is False


def _config_test_error(
    lines: list[str], rules: Sequence[Path], overrides: Mapping[str, str], rc: int
) -> Exception:
    errs = slog.error_lines(lines, warnings=False) or slog.error_lines(lines)
    quoted = "\n  ".join(errs) if errs else "(Suricata printed no Error line)"
    bad_files = slog.rule_files_in(lines)
    rule_trouble = bad_files or any("signature" in e or "rule file" in e.lower() for e in errs)
    if rule_trouble:
        named = ", ".join(bad_files) if bad_files else ", ".join(map(str, rules))
        return InputError(
            f"Suricata could not load the rules in {named}:\n  {quoted}",
            fix="Fix or remove the rules quoted above (each line names the file and line).",
        )
    if overrides:
        sets = ", ".join(f"{k}={v}" for k, v in overrides.items())
        return SpecError(
            f"Suricata rejected the configuration with the overrides {sets} (exit {rc}):\n  {quoted}",
            fix="Fix the suricata overrides in the spec.",
        )
    return SensorFailed(f"`suricata -T` failed (exit {rc}):\n  {quoted}")
