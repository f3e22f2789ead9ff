"""Render a complete, self-contained suricata.yaml for one run from the distro's default config."""

from __future__ import annotations

import copy
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from idsbench.bypass.suricata import settings as bypass_settings
from idsbench.capture import Scalar, effective_options
from idsbench.errors import EnvironmentMissing
from idsbench.sensors.suricata.capture import CAPTURE
from idsbench.store.layout import EVE_FILE, SURICATA_CONFIG_FILE, SURICATA_LOG_FILE, SURICATA_PID_FILE

DEFAULT_CONFIG = Path("/etc/suricata/suricata.yaml")
# Ethernet header + two VLAN tags (QinQ): added to the wire MTU to get the largest frame.
L2_OVERHEAD = 14 + 2 * 4
# Frames up to a standard 1500 MTU (+ tags) fit Suricata's own default; only raise it above that.
SURICATA_DEFAULT_PACKET_SIZE = 1514
# defrag: yes lets the kernel hand over reassembled IP packets up to 64 KiB + headers (65561);
# a tpacket-v3 block must hold one whole, or it is truncated.
TPACKET_V3_MIN_BLOCK = 131072
# the command-line switch that starts each capture method on an interface
CAPTURE_FLAGS = {"af-packet": "--af-packet", "af-packet-v2": "--af-packet", "af-xdp": "--af-xdp", "pcap": "--pcap"}


# libyaml's C parser and emitter where PyYAML has them: the pure-Python ones took ~0.3 s to read the
# distro's suricata.yaml and ~0.15 s to write a run's, per sample (issue 23).
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SafeDumper):  # type: ignore[misc,valid-type]
    """Writes None as an empty value (Suricata reads a literal `null` as the string "null")."""


_Dumper.add_representer(
    type(None), lambda d, _v: d.represent_scalar("tag:yaml.org,2002:null", "")
)


@dataclass(frozen=True)
class RunPaths:
    """Every file Suricata writes during a run; all inside `run_dir`."""

    run_dir: Path

    @property
    def yaml(self) -> Path:
        return self.run_dir / SURICATA_CONFIG_FILE

    @property
    def eve(self) -> Path:
        return self.run_dir / EVE_FILE

    @property
    def log(self) -> Path:
        return self.run_dir / SURICATA_LOG_FILE

    @property
    def pid(self) -> Path:
        return self.run_dir / SURICATA_PID_FILE


# Suricata's YAML as parsed: the engine's own open, version-dependent schema (hundreds of keys), edited
# by path and dumped back for Suricata to read; idsbench never reads it as its own document.
SuricataYaml = dict[str, Any]

_parsed: dict[tuple[str, int, int], SuricataYaml] = {}  # (path, mtime_ns, size) -> parsed config


def load_default_config(path: Path = DEFAULT_CONFIG) -> SuricataYaml:
    """The parsed config (a fresh copy: callers may change it); parsed once per file version."""
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
        if key in _parsed:
            return copy.deepcopy(_parsed[key])
        with path.open() as f:
            data = yaml.load(f, Loader=_SafeLoader)
    except OSError as e:
        raise EnvironmentMissing(
            f"Cannot read Suricata's default configuration {path}: {e}.",
            fix="Install Suricata from the distribution packages (it ships /etc/suricata/suricata.yaml).",
        ) from e
    if not isinstance(data, dict):
        raise EnvironmentMissing(f"{path} is not a Suricata YAML configuration.")
    _parsed[key] = data
    return copy.deepcopy(data)


def cluster_id_for(run_dir: Path) -> int:
    """A stable AF_PACKET fanout id per run dir, so parallel sensors never join each other's group."""
    return 1 + zlib.crc32(str(run_dir.resolve()).encode()) % 65000


def max_frame_for(mtu: int | None) -> int | None:
    """Largest frame (headers and two VLAN tags included) for a wire MTU, or None for the default."""
    if mtu is None:
        return None
    return max(SURICATA_DEFAULT_PACKET_SIZE, mtu + L2_OVERHEAD)


def _block_size(max_frame: int | None) -> int:
    # tpacket-v3 needs a power of two, multiple of the page size, holding several frames.
    need = max(TPACKET_V3_MIN_BLOCK, 4 * (max_frame or 0))
    return 1 << math.ceil(math.log2(need))


def _config_file(base: SuricataYaml, key: str, fallback_dir: Path) -> str | None:
    """Absolute path of classification/reference config, or None if none exists."""
    value = base.get(key)
    candidates = [Path(str(value))] if value else []
    candidates.append(fallback_dir / Path(str(value or key)).name)
    for c in candidates:
        if c.is_absolute() and c.exists():
            return str(c)
    return None


def render_config(
    base: SuricataYaml,
    paths: RunPaths,
    interface: str,
    rules: Sequence[Path],
    stats_interval_s: int,
    threads: int | None = None,
    mtu: int | None = None,
    cluster_id: int | None = None,
    config_dir: Path = DEFAULT_CONFIG.parent,
    capture: str = "af-packet",
    capture_options: Mapping[str, Scalar] | None = None,
    bypass: str = "off",
    bypass_program: str | None = None,
) -> SuricataYaml:
    """Return a new config dict: `base` with outputs, logging, capture and rules replaced (`capture`:
    the method, idsbench.capture; `capture_section` says which options its section gets; `bypass`: the
    flow bypass mode, idsbench.bypass, `bypass_program` the eBPF object its kernel-side modes load)."""
    if stats_interval_s < 1:
        raise ValueError("stats_interval_s must be >= 1 (Suricata counts it in whole seconds)")
    cfg = dict(base)
    run_dir = str(paths.run_dir)
    cfg["default-log-dir"] = run_dir
    cfg["stats"] = {"enabled": True, "interval": int(stats_interval_s)}
    cfg["outputs"] = [
        {
            "eve-log": {
                "enabled": True,
                "filetype": "regular",
                "filename": str(paths.eve),
                "types": [
                    {"alert": {"tagged-packets": False}},
                    {"stats": {"totals": True, "threads": False, "deltas": False}},
                ],
            }
        }
    ]
    cfg["logging"] = {
        "default-log-level": "info",
        "outputs": [
            {"console": {"enabled": True, "level": "notice"}},
            {"file": {"enabled": True, "level": "info", "filename": str(paths.log)}},
            {"syslog": {"enabled": False}},
        ],
    }
    max_frame = max_frame_for(mtu)
    if max_frame is not None:
        cfg["default-packet-size"] = max_frame
    cid = cluster_id if cluster_id is not None else cluster_id_for(paths.run_dir)
    section, _ = capture_section(capture, interface, threads, cid, max_frame, capture_options or {})
    apply_bypass(cfg, section[0], bypass, bypass_program)
    cfg[_SECTION[capture]] = section
    # AF_XDP: Suricata 7 and 8 size "threads" by the interface's RSS queues, which a veth does not report
    # (0 queues: no worker at all); the single runmode starts the one capture thread regardless
    cfg["runmode"] = "single" if capture == "af-xdp" else "workers"
    cfg["pid-file"] = str(paths.pid)
    cfg["unix-command"] = {"enabled": False}
    cfg["default-rule-path"] = run_dir
    cfg["rule-files"] = [str(Path(r).resolve()) for r in rules]
    for key in ("classification-file", "reference-config-file"):
        found = _config_file(base, key, config_dir)
        if found:
            cfg[key] = found
        else:
            cfg.pop(key, None)
    cfg.pop("threshold-file", None)
    # Write-side features that would touch paths outside run_dir.
    cfg["coredump"] = {"max-dump": 0}
    return cfg


_SECTION = {"af-packet": "af-packet", "af-packet-v2": "af-packet", "af-xdp": "af-xdp", "pcap": "pcap"}


def _yes(value: Scalar) -> bool:
    return bool(value) if isinstance(value, bool) else str(value).lower() in ("yes", "true", "on")


def capture_section(method: str, interface: str, threads: int | None, cluster_id: int, max_frame: int | None,
                    options: Mapping[str, Scalar]) -> tuple[list[SuricataYaml], dict[str, Scalar]]:
    """The capture section of suricata.yaml for `method` on `interface` (its list: the interface, then
    the `default` entry) and the effective options, every default the run depends on written out."""
    if method not in _SECTION:
        raise ValueError(f"unknown Suricata capture method {method!r}")
    eff = effective_options("suricata", CAPTURE.method(method), options)
    if method in ("af-packet", "af-packet-v2"):
        afp: SuricataYaml = {"interface": interface, "threads": threads if threads else "auto",
                               "cluster-id": cluster_id, "cluster-type": eff["cluster-type"], "defrag": True,
                               "use-mmap": _yes(eff["use-mmap"]), "tpacket-v3": _yes(eff["tpacket-v3"]),
                               "checksum-checks": "no"}
        if method == "af-packet":
            eff["block-size"] = int(eff.get("block-size") or _block_size(max_frame))
            afp["block-size"] = eff["block-size"]
        if "ring-size" in eff:
            afp["ring-size"] = eff["ring-size"]
        if max_frame is not None:
            afp["snaplen"] = max_frame
        eff["threads"] = afp["threads"]
        return [afp, {"interface": "default"}], eff
    if method == "af-xdp":
        xdp = {"interface": interface, "threads": 1, "disable-promisc": False,
               "force-xdp-mode": eff["xdp-mode"], "force-bind-mode": eff["force-bind-mode"],
               "enable-busy-poll": _yes(eff["enable-busy-poll"]), "mem-unaligned": "no"}
        eff.update({"threads": 1, "runmode": "single"})
        return [xdp, {"interface": "default"}], eff
    # libpcap: one thread (without a fanout group every further handle would see every packet again)
    pcap: SuricataYaml = {"interface": interface, "threads": 1, "buffer-size": eff["buffer-size"],
                            "checksum-checks": "no", "promisc": True}
    if max_frame is not None:
        pcap["snaplen"] = max_frame
    eff["threads"] = 1
    return [pcap, {"interface": "default"}], eff


def apply_bypass(cfg: SuricataYaml, iface: SuricataYaml, mode: str, program: str | None) -> dict[str, Scalar]:
    """Write the bypass `mode`'s settings (bypass/suricata.settings) into `cfg` (its stream section) and
    `iface` (the capture interface's entry); returns them. Every mode pins `stream.bypass` and the stream
    depth, so off and on run the same depth."""
    eff = bypass_settings(mode, program)
    stream = dict(cfg.get("stream") or {})
    stream["bypass"] = bool(eff["stream.bypass"])
    stream["reassembly"] = {**dict(stream.get("reassembly") or {}), "depth": eff["stream.reassembly.depth"]}
    cfg["stream"] = stream
    for key, value in eff.items():
        if key.startswith("af-packet."):
            iface[key.removeprefix("af-packet.")] = value
    return eff


def dump_config(cfg: SuricataYaml) -> str:
    """YAML text with the `%YAML 1.1` header Suricata insists on."""
    body = yaml.dump(cfg, Dumper=_Dumper, default_flow_style=False, sort_keys=False)
    return "%YAML 1.1\n---\n" + body
