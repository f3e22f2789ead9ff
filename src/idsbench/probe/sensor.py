"""The sensor's build: Suricata `--build-info` (version, capture methods, Hyperscan, SIMD, and
whether profiling is compiled in: its per-packet ticks are what a VM makes expensive)."""

from __future__ import annotations

import re
import shutil

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.probemodel import SensorProbe

# `--build-info` "<X> support:" lines that name capture methods.
CAPTURE_LINES = (
    ("AF_PACKET support", "af-packet"),
    ("AF_XDP support", "af-xdp"),
    ("DPDK support", "dpdk"),
    ("PF_RING support", "pf-ring"),
    ("NFQueue support", "nfqueue"),
    ("NFLOG support", "nflog"),
    ("IPFW support", "ipfw"),
    ("Netmap support", "netmap"),
    ("DAG enabled", "dag"),
    ("Napatech enabled", "napatech"),
    ("WinDivert enabled", "windivert"),
)


def _yes(text: str, label: str) -> bool | None:
    match = re.search(rf"^\s*{re.escape(label)}:\s+(\S+)", text, re.MULTILINE)
    return match.group(1).lower().startswith("yes") if match else None


def parse_build_info(text: str, binary: str = "suricata") -> SensorProbe | None:
    """SensorProbe from `suricata --build-info` text; None when it is not Suricata's."""
    version = re.search(r"This is Suricata version (\S+)", text)
    if not version:
        return None
    features_line = re.search(r"^Features:\s*(.*)$", text, re.MULTILINE)
    features = features_line.group(1).split() if features_line else []
    simd_line = re.search(r"^SIMD support:\s*(.*)$", text, re.MULTILINE)
    methods = ["pcap"] if "PCAP_SET_BUFF" in features or re.search(r"libpcap", text, re.IGNORECASE) else []
    methods += [name for label, name in CAPTURE_LINES if _yes(text, label)]
    profiling = bool(_yes(text, "Profiling enabled")) or "PROFILING" in features
    return SensorProbe(
        engine="suricata",
        binary=binary,
        version=version.group(1),
        profiling=profiling,
        profiling_locks=_yes(text, "Profiling locks enabled"),
        profiling_rules=_yes(text, "Profiling rules enabled"),
        capture_methods=methods,
        hyperscan=_yes(text, "Hyperscan support"),
        features=features,
        simd=simd_line.group(1).split() if simd_line else [],
    )


def probe_suricata(binary: str = "suricata") -> tuple[SensorProbe | None, str | None]:
    """(the probe, None) or (None, why not). Version, features and Hyperscan come from the Suricata
    adapter's `build_info()`; profiling, capture methods and SIMD from this module's parse."""
    if shutil.which(binary) is None:
        return None, f"sensor: {binary} is not installed"
    from idsbench.sensors.suricata import Suricata

    try:
        info = Suricata(binary).build_info()
        done = proc.run([binary, "--build-info"], timeout=30, check=False)
    except EnvironmentMissing as exc:
        return None, f"sensor: {exc.message}"
    probe = parse_build_info(done.stdout, binary)
    if probe is None:
        return None, f"sensor: `{binary} --build-info` did not report a Suricata version"
    features = info.get("features")
    return probe.model_copy(update={
        "version": str(info.get("version") or probe.version),
        "features": [str(f) for f in features] if isinstance(features, list) else probe.features,
        "hyperscan": bool(info.get("hyperscan")),
    }), None
