"""Workers follow the allocation (issue 28.1): `sensor.threads` in the spec and the plan, each engine
rendering `SensorOptions.threads` (Suricata's af-packet threads, Snort's -z, ibcapture's --threads),
an engine setting that names its threads winning, and each engine's worker count read back from its
own output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from idsbench.buildstamp import SnortBuild
from idsbench.errors import SpecError
from idsbench.plan import plan
from idsbench.sensors.base import SensorOptions
from idsbench.sensors.nodetect import NoDetect
from idsbench.sensors.nodetect.config import capture_threads
from idsbench.sensors.snort import Snort
from idsbench.sensors.snort import log as snort_log
from idsbench.sensors.snort.config import SnortInstall
from idsbench.sensors.snort.run import SnortRun
from idsbench.sensors.suricata import Suricata
from idsbench.sensors.suricata import log as slog
from idsbench.spec import spec_from_dict

TRAFFIC = {"traces": ["builtin:mixed"], "rate": {"pps": 1000}}


def test_sensor_threads_is_a_count_auto_or_an_axis():
    def threads(value: object) -> list[object]:
        return list(spec_from_dict({"name": "x", "sensor": {"threads": value}}).sensor.threads)

    assert spec_from_dict({"name": "x"}).sensor.threads == [None]
    assert threads(2) == [2] and threads("auto") == ["auto"] and threads([1, 2, "auto"]) == [1, 2, "auto"]
    for bad in (0, 257, "many", True, 1.5):
        with pytest.raises(SpecError, match="sensor.threads: threads = .* is not a worker count"):
            threads(bad)
    # unset, it is left out of the spec's dump (resume compares dumps of older campaigns)
    assert "threads" not in spec_from_dict({"name": "x"}).model_dump(mode="json")["sensor"]
    assert spec_from_dict({"name": "x", "sensor": {"threads": 2}}).model_dump(mode="json")["sensor"]["threads"] == [2]


def test_threads_is_an_axis_and_leaves_older_case_ids_unchanged():
    spec = spec_from_dict({"name": "x", "traffic": TRAFFIC, "setup": {"cpus": [None, 0.5]},
                           "sensor": {"engine": ["suricata", "snort"]}})
    # the ids main computed for this spec before sensor.threads existed
    assert [c.case_id for c in plan(spec)] == [
        "mixed-baremetal-r1-pps_1000-native-fe6af8", "mixed-baremetal-r1-pps_1000-native-c0.5-00f152",
        "mixed-snort-baremetal-r1-pps_1000-native-fe1cad", "mixed-snort-baremetal-r1-pps_1000-native-c0.5-957078"]
    axis = plan(spec_from_dict({"name": "x", "traffic": TRAFFIC, "sensor": {"threads": [1, 2, "auto"]}}))
    assert [c.threads for c in axis] == [1, 2, "auto"]
    assert [c.case_id.split("-")[-2] for c in axis] == ["t1", "t2", "tauto"]
    assert axis[0].params()["threads"] == 1


BASE = """%YAML 1.1
---
default-log-dir: /var/log/suricata/
af-packet:
  - interface: eth0
"""


@pytest.mark.parametrize(("threads", "rendered"), [(1, 1), (3, 3), (None, "auto")])
def test_suricata_renders_the_worker_count(tmp_path: Path, threads: int | None, rendered: object):
    base = tmp_path / "suricata.yaml"
    base.write_text(BASE)
    run = Suricata(default_config=base).prepare(tmp_path / "run", "ibr1", SensorOptions(threads=threads))
    cfg = yaml.safe_load(run.yaml_path.read_text().split("---", 1)[1])
    assert cfg["af-packet"][0]["threads"] == rendered and cfg["runmode"] == "workers"


def test_suricata_reads_back_its_workers():
    log = ["[5377 - Suricata-Main] 2026-11-22 05:12:26 Notice: threads: Threads created -> W: 2 FM: 1 FR: 1   "
           "Engine started.",
           "[9 - Suricata-Main] 2026-11-22 05:12:26 Notice: threads: Threads created -> RX: 1 W: 4 FM: 1 FR: 1"]
    assert slog.worker_threads(log[:1]) == 2
    assert slog.worker_threads(log[1:]) == 4
    assert slog.worker_threads(["Notice: suricata: This is Suricata version 8.0.6 RELEASE"]) is None


def _snort(tmp_path: Path) -> Snort:
    install = SnortInstall(tmp_path / "prefix", SnortBuild("3.12.2.0", "3.0.25", "d1", 2, 22, 472, 1))
    return Snort(install=install, cache_dir=tmp_path, variables=())


def test_snort_runs_the_worker_count_unless_its_own_setting_names_one(tmp_path: Path):
    snort = _snort(tmp_path)
    assert snort._options(SensorOptions(threads=1), tmp_path, "ibr1", None).threads == 1
    assert snort._options(SensorOptions(threads=3), tmp_path, "ibr1", None).threads == 3
    own = SensorOptions(threads=1, overrides=(("threads", "2"),))  # [sensor.set.snort] threads = 2
    assert snort._options(own, tmp_path, "ibr1", None).threads == 2
    assert snort._options(SensorOptions(), tmp_path, "ibr1", None).threads == (os.cpu_count() or 1)  # "auto"


def test_snort_reads_back_its_packet_threads(tmp_path: Path):
    console = tmp_path / "stdout.txt"
    run = SnortRun(argv=[], log_dir=tmp_path, config_path=tmp_path / "snort.lua", console_path=console,
                   interface="ibr1", threads=2)
    assert run.worker_threads() is None  # not started
    console.write_text("Commencing packet processing\n++ [0] ibr1\n++ [1] ibr1\n")
    assert run.worker_threads() == 2 and len(snort_log.sources_started(console.read_text())) == 2


class FakeNoDetect(NoDetect):
    def _program(self, name: str) -> Path:
        return Path(f"/cache/native/{name}-0123456789abcdef")


def test_the_nodetect_engine_follows_the_worker_count(tmp_path: Path):
    def threads(options: SensorOptions) -> str:
        argv = FakeNoDetect().prepare(tmp_path, "ibr1", options).argv
        return argv[argv.index("--threads") + 1]

    assert threads(SensorOptions(threads=1)) == "1" and threads(SensorOptions(threads=3)) == "3"
    assert threads(SensorOptions(threads=1, overrides=(("threads", "2"),))) == "2"  # its own setting wins
    text = "ibcapture: capturing on ibr1 (threads 3, ring 64 x 1048576 bytes, fanout 77)\n"
    assert capture_threads("afpacket", text) == 3 and capture_threads("afpacket", "") is None
    assert capture_threads("libpcap", "tcpdump: listening on ibr1, link-type EN10MB (Ethernet)\n") == 1
