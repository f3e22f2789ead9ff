"""Rendering suricata.yaml and argv: the YAML loads, the keys are right, nothing points outside run_dir."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from idsbench.errors import SpecError
from idsbench.sensors.suricata import Suricata
from idsbench.sensors.suricata.config import (
    DEFAULT_CONFIG,
    RunPaths,
    cluster_id_for,
    dump_config,
    max_frame_for,
    render_config,
)

BASE_YAML = """%YAML 1.1
---
vars:
  address-groups:
    HOME_NET: "[10.0.0.0/8]"
default-log-dir: /var/log/suricata/
stats:
  enabled: yes
  interval: 8
plugins:
outputs:
  - fast:
      enabled: yes
      filename: fast.log
  - eve-log:
      enabled: yes
      filename: eve.json
logging:
  default-log-level: notice
  outputs:
  - console:
      enabled: yes
af-packet:
  - interface: eth0
    cluster-id: 99
app-layer:
  protocols:
    dnp3:
      enabled: no
    http:
      enabled: yes
unix-command:
  enabled: yes
  filename: /var/run/suricata-command.socket
default-rule-path: /var/lib/suricata/rules
rule-files:
  - suricata.rules
classification-file: {conf}/classification.config
reference-config-file: /nonexistent/reference.config
threshold-file: /etc/suricata/threshold.config
"""


@pytest.fixture()
def base_config(tmp_path: Path) -> Path:
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "classification.config").write_text("config classification: x,y,1\n")
    path = conf / "suricata.yaml"
    path.write_text(BASE_YAML.format(conf=conf))
    return path


def _render(base_config: Path, run_dir: Path, **kw) -> dict:
    sur = Suricata(binary="suricata-not-needed", default_config=base_config)
    rules = [base_config.parent / "a.rules"]
    rules[0].write_text("")
    run = sur.prepare_config(run_dir, "veth-sen", rules, {"detect.profile": "high"}, 2, **kw)
    text = run.yaml_path.read_text()
    assert text.startswith("%YAML 1.1\n---\n")
    return yaml.safe_load(text)


def test_rendered_outputs_logging_and_paths(base_config: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    cfg = _render(base_config, run_dir)
    rd = str(run_dir.resolve())
    assert cfg["default-log-dir"] == rd
    assert cfg["stats"] == {"enabled": True, "interval": 2}
    (only,) = cfg["outputs"]
    eve = only["eve-log"]
    assert eve["filename"] == f"{rd}/eve.json" and eve["enabled"] is True
    types = {next(iter(t)): next(iter(t.values())) for t in eve["types"]}
    assert set(types) == {"alert", "stats"}
    assert types["stats"] == {"totals": True, "threads": False, "deltas": False}
    files = [o["file"] for o in cfg["logging"]["outputs"] if "file" in o]
    assert files == [{"enabled": True, "level": "info", "filename": f"{rd}/suricata.log"}]
    assert cfg["pid-file"] == f"{rd}/suricata.pid"
    assert cfg["unix-command"] == {"enabled": False}
    assert cfg["rule-files"] == [str((base_config.parent / "a.rules").resolve())]
    # classification exists -> absolute; reference.config missing everywhere -> dropped.
    assert cfg["classification-file"] == str(base_config.parent / "classification.config")
    assert "reference-config-file" not in cfg and "threshold-file" not in cfg
    # Untouched parts of the distro config survive; empty values stay empty (not "null").
    assert cfg["vars"]["address-groups"]["HOME_NET"] == "[10.0.0.0/8]"
    assert "plugins: \n" in (run_dir / "suricata.yaml").read_text() or cfg["plugins"] is None


def test_af_packet_section(base_config: Path, tmp_path: Path) -> None:
    cfg = _render(base_config, tmp_path / "run", threads=3)
    afp, default = cfg["af-packet"]
    assert default == {"interface": "default"}
    assert afp["interface"] == "veth-sen"
    assert afp["threads"] == 3
    assert afp["cluster-type"] == "cluster_flow"
    assert afp["cluster-id"] == cluster_id_for(tmp_path / "run")
    assert afp["defrag"] is True and afp["use-mmap"] is True and afp["tpacket-v3"] is True
    assert afp["checksum-checks"] == "no"
    # A block must hold a whole defragmented 64 KiB packet.
    assert afp["block-size"] >= 65561 and afp["block-size"] & (afp["block-size"] - 1) == 0
    assert "snaplen" not in afp and "default-packet-size" not in cfg


def test_mtu_sets_snaplen_and_packet_size(base_config: Path, tmp_path: Path) -> None:
    cfg = _render(base_config, tmp_path / "run", mtu=9000)
    afp = cfg["af-packet"][0]
    assert afp["snaplen"] == 9000 + 14 + 8 == cfg["default-packet-size"]
    assert afp["threads"] == "auto"
    assert max_frame_for(1500) == 1522 and max_frame_for(None) is None
    big = _render(base_config, tmp_path / "run64k", mtu=65000)
    assert big["af-packet"][0]["block-size"] >= 4 * 65022


def test_cluster_ids_differ_per_run_dir(tmp_path: Path) -> None:
    ids = {cluster_id_for(tmp_path / f"s{i}") for i in range(50)}
    assert len(ids) == 50 and all(1 <= i <= 65000 for i in ids)


def test_argv_and_overrides(base_config: Path, tmp_path: Path) -> None:
    sur = Suricata(binary="/opt/suricata/bin/suricata", default_config=base_config)
    run_dir = tmp_path / "run"
    (run_dir).mkdir()
    (run_dir / "suricata.pid").write_text("12345\n")  # stale: removed by prepare
    run = sur.prepare_config(run_dir, "eth9", [], {"detect.profile": "low", "af-packet.0.ring-size": "4096"}, 1)
    rd = run_dir.resolve()
    assert run.argv == [
        "/opt/suricata/bin/suricata", "-c", f"{rd}/suricata.yaml", "--af-packet=eth9",
        "-l", str(rd), "--pidfile", f"{rd}/suricata.pid",
        "--set", "detect.profile=low", "--set", "af-packet.0.ring-size=4096",
    ]
    assert run.eve_path == rd / "eve.json" and run.log_path == rd / "suricata.log"
    assert run.log_dir == rd and not run.pid_path.exists()
    assert sorted(p.name for p in rd.iterdir()) == ["suricata.yaml"]  # nothing else written


@pytest.mark.parametrize("key", ["a b", "x=y", "", "rm -rf;"])
def test_bad_override_keys_are_spec_errors(base_config: Path, tmp_path: Path, key: str) -> None:
    with pytest.raises(SpecError, match="override key"):
        Suricata(default_config=base_config).prepare_config(tmp_path, "eth0", [], {key: "1"}, 1)


def test_stats_interval_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        render_config({}, RunPaths(tmp_path), "eth0", [], 0)


def test_null_is_written_as_empty_value() -> None:
    text = dump_config({"plugins": None, "a": {"b": None}})
    assert "null" not in text and yaml.safe_load(text) == {"plugins": None, "a": {"b": None}}


@pytest.mark.skipif(not DEFAULT_CONFIG.exists(), reason="no distro suricata.yaml on this host")
def test_distro_config_renders_with_only_run_dir_paths(tmp_path: Path) -> None:
    run = Suricata().prepare_config(tmp_path / "r", "eth0", [], {}, 1)
    cfg = yaml.safe_load(run.yaml_path.read_text())
    rd = str((tmp_path / "r").resolve())
    written = [cfg["outputs"][0]["eve-log"]["filename"], cfg["pid-file"], cfg["default-log-dir"]]
    written += [o["file"]["filename"] for o in cfg["logging"]["outputs"] if "file" in o]
    assert all(p.startswith(rd) for p in written)
    assert len(cfg["outputs"]) == 1
