"""Suricata (offline, -r) on every synthesized profile: every packet decoded, no decoder anomaly,
and exactly the marker alerts the generator promised."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import idsbench
from idsbench.traffic.synth import PROFILES, synthesize

pytestmark = pytest.mark.integration
MARKERS = Path(idsbench.__file__).parent / "sensors" / "rules" / "markers.rules"


def run_suricata(pcap: Path, logdir: Path) -> tuple[dict, Counter]:
    if not shutil.which("suricata"):
        pytest.fail("suricata is not installed (scripts/install-system.sh installs it)")
    logdir.mkdir()
    argv = ["suricata", "-r", str(pcap), "-k", "none", "-l", str(logdir), "-S", str(MARKERS),
            "--set", "unix-command.enabled=no", "--set", "stats.enabled=yes",
            "--set", "outputs.1.eve-log.enabled=yes", "--set", "outputs.1.eve-log.filename=eve.json"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stats, alerts = None, Counter()
    with open(logdir / "eve.json") as fh:
        for line in fh:
            ev = json.loads(line)
            if ev["event_type"] == "stats":
                stats = ev["stats"]
            elif ev["event_type"] == "alert":
                alerts[ev["alert"]["signature_id"]] += 1
    assert stats is not None, "no eve stats record"
    return stats, alerts


def nonzero_events(tree: dict, prefix: str = "") -> dict[str, int]:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(nonzero_events(value, f"{prefix}{key}."))
        elif value:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_suricata_decodes_every_packet_and_alerts_exactly_on_markers(tmp_path, profile):
    packets = {"bulk": 6000, "small-packets": 4000}.get(profile, 3000)
    result = synthesize(profile, tmp_path / f"{profile}.pcap", packets=packets, seed=11,
                        marker_rate=1.0 if profile == "bulk" else 0.2)
    assert result.markers > 0
    stats, alerts = run_suricata(result.path, tmp_path / "log")
    decoder = stats["decoder"]
    assert decoder["pkts"] == result.packets
    assert decoder["bytes"] == result.bytes
    assert decoder.get("invalid", 0) == 0
    assert nonzero_events(decoder.get("event", {})) == {}
    assert stats.get("tcp", {}).get("invalid_checksum", 0) == 0
    assert nonzero_events(stats.get("stream", {})) == {} if "stream" in stats else True
    assert dict(alerts) == {int(k): v for k, v in result.markers_by_sid.items()}
    assert sum(alerts.values()) == result.markers


def test_a_trace_written_in_many_flushes_is_just_as_valid(tmp_path):
    """150k packets: the generator writes it in several flushes (synth/stream.py); Suricata still
    decodes every packet, sees no stream anomaly and raises exactly the promised marker alerts."""
    result = synthesize("mixed", tmp_path / "big.pcap", packets=150_000, seed=12, marker_rate=0.2)
    stats, alerts = run_suricata(result.path, tmp_path / "log")
    assert (stats["decoder"]["pkts"], stats["decoder"]["bytes"]) == (result.packets, result.bytes)
    assert nonzero_events(stats["decoder"].get("event", {})) == {}
    assert stats.get("tcp", {}).get("invalid_checksum", 0) == 0
    assert nonzero_events(stats.get("stream", {})) == {} if "stream" in stats else True
    assert dict(alerts) == {int(k): v for k, v in result.markers_by_sid.items()} and result.markers > 100
