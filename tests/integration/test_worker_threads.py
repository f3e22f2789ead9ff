"""Workers follow the allocation, read back from the real engines (issue 28.1): one campaign of Suricata
and Snort with a 1-CPU quota on a sensor pinned to one CPU — unset `sensor.threads` runs one worker
(Suricata's own `auto` would start one per online CPU), `sensor.threads = 2` runs two — counted from
each engine's own log ("Threads created -> W: N", Snort's "++ [i]" lines), exact counts either way, and
the results rows and the report carry it.

Needs root, tcpreplay/ip/ethtool/stdbuf/suricata, the Snort build (`make snort`) and
../shared/data/pcaps; under CI=true / IDSBENCH_STRICT=1 anything missing fails."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from idsbench import settings
from idsbench.analysis import case_table
from idsbench.report import write_report
from idsbench.run.campaign import run_campaign
from idsbench.sensors.snort import Snort
from idsbench.sensors.suricata import log as slog
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign
from idsbench.traffic.pcap import read_info
from tests.integration.conftest import unavailable

from .conftest import PCAPS, TEST_PREFIX

pytestmark = [pytest.mark.integration, pytest.mark.builds]  # Suricata 8.0.6 or Snort from source: after the builds

TRACE = PCAPS / "nf_evidence02.pcap"  # 572 packets


def test_suricata_and_snort_run_one_worker_per_cpu_given_or_the_count_asked(tmp_path: Path, state_dir: Path):
    if os.geteuid() != 0:
        unavailable("needs root (namespaces, AF_PACKET, cgroups)")
    missing = [p for p in ("ip", "ethtool", "tcpreplay", "stdbuf", "suricata") if shutil.which(p) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    if not TRACE.is_file():
        unavailable(f"shared capture {TRACE} is absent (../shared/data/pcaps beside the checkout)")
    if not Snort().available():
        unavailable("Snort 3 is not built (run `make snort`)")
    if len(os.sched_getaffinity(0)) < 2:
        unavailable("needs two CPUs (the sender on one, the sensor pinned to the other)")
    spec = spec_from_dict({
        "name": "workers", "samples": 1, "timing": {"settle_s": 0.5},
        "traffic": {"traces": [str(TRACE)], "rate": [{"pps": 1000}], "sender": "native"},
        "sensor": {"engine": ["suricata", "snort"], "threads": [None, 2], "ground_truth": False},
        "setup": {"cpus": [1.0]},
    })
    out = tmp_path / "c"
    run_campaign(spec, out, state_dir=state_dir, cache_dir=settings.cache_dir(), name_prefix=TEST_PREFIX)
    packets = read_info(TRACE, cache_dir=tmp_path / "info").packets
    seen = {}
    for path in sorted(out.glob("cases/*/s0/summary.json")):
        s = json.loads(path.read_text())
        engine, asked = s["case"]["engine"], s["case"]["threads"]
        assert s["status"] == "ok", (engine, asked, s["reason"], s["warnings"])
        assert s["sensor"]["counters"]["decoded_pkts"] == packets  # exact with one worker or two
        assert s["placement"]["sensor_cpus"] and len(s["placement"]["sensor_cpus"]) == 1
        seen[(engine, asked)] = (s["placement"]["sensor_workers"], s["sensor"]["threads"])
        if engine == "suricata":  # what the engine's own log says, not what idsbench asked
            log = (path.parent / "suricata.log").read_text().splitlines()
            assert slog.worker_threads(log) == s["sensor"]["threads"]
    assert seen == {("suricata", None): (1, 1), ("suricata", 2): (2, 2), ("snort", None): (1, 1),
                    ("snort", 2): (2, 2)}
    rows = {(r.params.engine, r.params.threads): r.to_row() for r in case_table(load_campaign(out))}
    assert {k: r["sensor_threads"] for k, r in rows.items()} == {k: ran for k, (_, ran) in seen.items()}
    assert "1 CPU, 2 workers" in write_report(out).read_text()
