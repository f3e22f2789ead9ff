"""One prepared Snort 3 run: readiness, live and final counters, alerts per rule, errors.

Readiness (docs/snort.md): "Commencing packet processing" means the config loaded; the packet threads
start their DAQ instances only after it. The run is ready when every packet thread has a socket bound
with ETH_P_ALL to the interface (sensors.sockets). The Snort process is found by its own config path
on its command line (unique per run) in /proc — the host sees it on bare metal and in a container.
In a VM guest it cannot be seen: then ready = every thread logged "++ [i]" plus a grace period.
perf_monitor cannot tell: a thread writes its first record only after its first packet.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from idsbench.capture import Scalar
from idsbench.errors import SensorFailed
from idsbench.sensors.base import CounterPoint, Counters, EventLogIntegrity
from idsbench.sensors.snort import log as snort_log
from idsbench.sensors.snort.perf import PerfTail
from idsbench.sensors.snort.stats import AlertCounts, SnortCounters, parse_exit_stats, read_alerts, read_perf_series
from idsbench.sensors.sockets import capturing_sockets, interface_index

UNSEEN_GRACE_S = 2.0  # process not visible from here (a VM guest): wait this long after "++ [i]"
# Snort pegs that mean it degraded without losing a packet (state pruned, reassembly gave up, events
# not queued or not logged): reported beside the loss waterfall, never counted as drops.
DEGRADED_PEGS = (("stream", "excess_prunes"), ("stream", "memcap_prunes"), ("stream_tcp", "gaps"),
                 ("stream_tcp", "exceeded_max_segs"), ("stream_tcp", "exceeded_max_bytes"),
                 ("detection", "queue_limit"), ("detection", "log_limit"))

Finder = Callable[[str], list[int]]


def pids_with_argument(argument: str, proc_root: Path = Path("/proc")) -> list[int]:
    """PIDs whose command line contains `argument` as one whole argument."""
    wanted = argument.encode()
    out = []
    for entry in os.scandir(proc_root):
        if not entry.name.isdigit():
            continue
        try:
            args = (proc_root / entry.name / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if wanted in args:
            out.append(int(entry.name))
    return out


def schema_counters(c: SnortCounters, module: str = "afpacket") -> Counters:
    return Counters.from_mapping(c.schema_counters(module))


@dataclass
class SnortRun:
    argv: list[str]
    log_dir: Path
    config_path: Path
    console_path: Path  # the setup writes Snort's stdout+stderr here (stdout.txt)
    interface: str
    threads: int
    capture: str = "afpacket"  # the DAQ module (idsbench.capture)
    capture_options: dict[str, Scalar] = field(default_factory=dict)  # effective, defaults written out
    proc_root: Path = field(default=Path("/proc"), repr=False)
    find_pids: Finder | None = field(default=None, repr=False)  # default: pids_with_argument in proc_root
    started_unix: float | None = None
    _tail: PerfTail | None = field(default=None, repr=False)
    _alerts: AlertCounts | None = field(default=None, repr=False)
    _zero: CounterPoint | None = field(default=None, repr=False)

    def _console(self) -> str:
        try:
            return self.console_path.read_text(errors="replace")
        except OSError:
            return ""

    # --- readiness ------------------------------------------------------------------------------
    def wait_ready(self, poll: Callable[[], int | None], timeout_s: float, *,
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                   interval_s: float = 0.05) -> float:
        t0 = clock()
        self.started_unix = time.time()
        unseen_since: float | None = None
        pid: int | None = None
        while True:
            text = self._console()
            if snort_log.is_ready(text):
                if pid is None:
                    found = (self.find_pids or self._pids)(str(self.config_path))
                    pid = found[0] if found else None
                if pid is not None:
                    ifindex = interface_index(pid, self.interface, self.proc_root)  # None: on any
                    if capturing_sockets(pid, ifindex, self.proc_root) >= self.threads:
                        return clock() - t0
                elif len(snort_log.sources_started(text)) >= self.threads:
                    unseen_since = unseen_since if unseen_since is not None else clock()
                    if clock() - unseen_since >= UNSEEN_GRACE_S:
                        return clock() - t0
            rc = poll()
            if rc is not None:
                raise self._failed(f"Snort exited with status {rc} before it was capturing", text)
            if clock() - t0 > timeout_s:
                raise self._failed(f"Snort was not capturing on {self.interface} after {timeout_s:g} s", text)
            sleep(interval_s)

    def worker_threads(self) -> int | None:
        """The packet threads Snort started: its "++ [i] IF" lines (None before the first)."""
        return len(snort_log.sources_started(self._console())) or None

    def _pids(self, argument: str) -> list[int]:
        return pids_with_argument(argument, self.proc_root)

    def _failed(self, what: str, text: str) -> SensorFailed:
        errs = snort_log.errors(text)
        if errs:
            detail = "Errors from its log:\n  " + "\n  ".join(errs[:20])
        elif snort_log.is_ready(text):
            detail = (f"It loaded its config but no packet thread bound a socket to {self.interface}: Snort "
                      "says nothing when the interface is missing from its network namespace.")
        else:
            detail = "Its log has no ERROR line; last lines:\n  " + "\n  ".join(text.splitlines()[-8:])
        return SensorFailed(f"{what}. {detail}",
                            fix=f"see {self.console_path} and the rendered config {self.config_path}; "
                                "`make snort` rebuilds Snort if it is damaged.")

    # --- counters ---------------------------------------------------------------------------------
    def _point(self, t_unix: float, c: SnortCounters) -> CounterPoint:
        uptime = t_unix - self.started_unix if self.started_unix is not None else 0.0
        return CounterPoint(t_unix=t_unix, uptime_s=max(0.0, uptime), counters=schema_counters(c, self.capture))

    def live_counters(self) -> CounterPoint | None:
        """The newest consistent perf_monitor snapshot over the packet threads. perf_monitor writes
        nothing before a thread's first packet: until then, once ready, one all-zero point taken at the
        first call (the same point every time, so a drain never mistakes it for news)."""
        if self._tail is None:
            self._tail = PerfTail(self.log_dir)
        point = self._tail.latest()
        if point is not None:
            return self._point(point.t_unix, point.counters)
        if self._zero is None and self.started_unix is not None:
            self._zero = self._point(time.time(), SnortCounters())
        return self._zero

    def counter_series(self) -> list[CounterPoint]:
        series, _ = read_perf_series(sorted(self.log_dir.glob("*perf_monitor_base.json")))
        return [self._point(p.t_unix, p.counters) for p in series]

    def final_counters(self) -> Counters:
        stats = parse_exit_stats(self._console())
        if stats is None:
            raise SensorFailed(f"Snort left no exit statistics in {self.console_path}.",
                               fix="it probably crashed or was killed; see errors() and its log.")
        return schema_counters(stats.counters, self.capture)

    def capture_info(self) -> tuple[str, dict[str, Scalar], dict[str, int]]:
        """The DAQ module, its effective options and its drop point (daq.dropped at exit: afpacket's
        tp_drops, pcap's ps_drop)."""
        stats = parse_exit_stats(self._console())
        dropped = stats.counters.dropped if stats is not None else 0
        return self.capture, dict(self.capture_options), {f"{self.capture}.daq_dropped": dropped}

    def degraded(self) -> dict[str, int]:
        stats = parse_exit_stats(self._console())
        if stats is None:
            return {}
        out = {}
        for module, peg in DEGRADED_PEGS:
            value = stats.pegs.get(module, {}).get(peg, 0)
            if value:
                out[f"{module}.{peg}"] = value
        return out

    # --- alerts, errors ---------------------------------------------------------------------------
    def _read_alerts(self) -> AlertCounts:
        self._alerts = read_alerts(sorted(self.log_dir.glob("*alert_json.txt")))
        return self._alerts

    def alerts_by_signature(self) -> dict[int, int]:
        """Alerts per sid of the text rules (gid 1); built-in rules' alerts (gid 105-175) are in the
        `alerts` total only: their sids overlap across generators."""
        return self._read_alerts().by_sid()

    def errors(self) -> list[str]:
        lines = self._console().splitlines()
        found = [line for line in lines if line.startswith(("ERROR:", "FATAL:", "Fatal Error", "WARNING:"))]
        return list(dict.fromkeys(found))

    def integrity(self) -> EventLogIntegrity | None:
        files = sorted(self.log_dir.glob("*alert_json.txt"))
        if not files:
            return None
        alerts = self._alerts or self._read_alerts()
        lines = sum(alerts.per_rule.values()) + alerts.bad
        truncated = any(_cut(f) for f in files)
        warnings = []
        if alerts.repaired:
            warnings.append(f"{alerts.repaired} alert_json line(s) were not JSON (Snort leaves quotes in msg "
                            "unescaped); counted from their gid/sid/rev")
        return EventLogIntegrity(files[0] if len(files) == 1 else self.log_dir, lines, alerts.bad, truncated,
                                 tuple(warnings))


def _cut(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return False
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"
    except OSError:
        return False
