"""Each side reads each trace offline once (`suricata -r`, single runmode, every packet processed): its
alerts per signature and its eve event types, exact and repeatable, so any difference between base and
head is a change of the code (or of its bundled rules), not of the load.

The config is the one a run renders (the side's own default config, the gate's rules) with the eve
output's types widened to those of the side's own default config (alert, anomaly, flow, the protocols …).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from idsbench import proc
from idsbench.errors import InputError, SensorFailed
from idsbench.sensors.suricata import Suricata
from idsbench.sensors.suricata import log as slog
from idsbench.sensors.suricata.config import dump_config, load_default_config
from idsbench.sensors.suricata.eve import scan_eve

OFFLINE_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class OfflineRead:
    trace: str
    alerts: dict[int, int]                       # sid -> alerts
    events: dict[str, int]                       # eve event_type -> records (stats left out)
    packets: int = 0                             # decoder.pkts of the last stats record
    warnings: tuple[str, ...] = field(default=())


def _eve_types(engine: Suricata) -> list[Any]:  # Any: Suricata's YAML, a list of names and {name: {...}}
    outputs = load_default_config(engine.default_config).get("outputs") or []
    for item in outputs:
        if isinstance(item, dict) and isinstance(item.get("eve-log"), dict):
            types = item["eve-log"].get("types")
            if isinstance(types, list):
                return [t for t in types if not (isinstance(t, dict) and "stats" in t) and t != "stats"]
    return ["alert", "anomaly", "flow"]


def _widen(yaml_path: Path, types: list[Any]) -> None:
    cfg = yaml.safe_load(yaml_path.read_text())
    for item in cfg.get("outputs") or []:
        if isinstance(item, dict) and isinstance(item.get("eve-log"), dict):
            item["eve-log"]["types"] = [*types, {"stats": {"totals": True, "threads": False}}]
    yaml_path.write_text(dump_config(cfg))


def read_offline(engine: Suricata, trace: Path, rules: Sequence[Path], workdir: Path,
                 timeout_s: float = OFFLINE_TIMEOUT_S) -> OfflineRead:
    """`engine` reads `trace` offline with `rules`; SensorFailed quoting Suricata's errors when it fails,
    InputError when it cannot read the trace."""
    run = engine.prepare_config(workdir, "lo", list(rules), {}, stats_interval_s=1)
    _widen(run.yaml_path, _eve_types(engine))
    args = [a for a in run.argv if not a.endswith("=lo")] + ["-r", str(trace), "--runmode", "single"]
    cp = proc.run(args, timeout=timeout_s, check=False)
    if cp.returncode != 0:
        lines = (cp.stdout + "\n" + cp.stderr).splitlines()
        quoted = "\n  ".join(slog.error_lines(lines) or lines[-5:])
        if any("pcap" in line.lower() for line in slog.error_lines(lines)):
            raise InputError(f"{engine.binary} could not read the trace {trace}:\n  {quoted}",
                             fix="give a pcap file Suricata reads (`suricata -r FILE`).")
        raise SensorFailed(f"`{engine.binary} -r {trace}` failed (exit {cp.returncode}):\n  {quoted}",
                           fix="check the rules (--rules) and the build's log.")
    alerts: Counter[int] = Counter()
    last_stats: dict[str, Any] = {}

    def sink(rec: dict[str, Any]) -> None:  # Any: an eve record
        if rec.get("event_type") == "alert":
            sid = (rec.get("alert") or {}).get("signature_id")
            if isinstance(sid, int):
                alerts[sid] += 1
        elif rec.get("event_type") == "stats":
            last_stats.clear()
            last_stats.update(rec.get("stats") or {})

    scan = scan_eve(run.eve_path, ("alert", "stats"), sink, warn_truncated=True)
    events = {k: v for k, v in scan.events.items() if k != "stats"}
    decoder = last_stats.get("decoder") or {}
    pkts = decoder.get("pkts") if isinstance(decoder, dict) else None
    return OfflineRead(trace.name, dict(alerts), events, int(pkts) if isinstance(pkts, int) else 0,
                       tuple(scan.warnings))
