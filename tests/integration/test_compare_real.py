"""`idsbench compare` on two real campaigns that differ only in the sensor's CPU limit."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from idsbench.run.campaign import run_campaign
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign

from .conftest import PAUSE_RIDING_RING, TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")


def test_compare_cpu_limit_direction_with_cis(tmp_path, state_dir, cache_dir, pcaps, costly_rules):
    def campaign(name, cpus):
        doc = {"name": name, "samples": 3, "timing": {"settle_s": 1},
               "traffic": {"traces": [str(pcaps / "tcpreplay_test.pcap")], "replayers": [1],
                           "rate": {"pps": 30000}, "loops": 335},  # 2 s: the limited sensor overflows the ring in ~1 s
               "sensor": {"rules": ["builtin:events", str(costly_rules)], "set": PAUSE_RIDING_RING},
               "setup": {"cpus": cpus}}
        run_campaign(spec_from_dict(doc), tmp_path / name, state_dir=state_dir, cache_dir=cache_dir,
                     name_prefix=TEST_PREFIX)
        return tmp_path / name

    base, limited = campaign("full", 1.0), campaign("limited", 0.15)
    # 3 samples a side reach a 75% CI: the verdict is asked at that level (the default 95% needs 6)
    done = subprocess.run([sys.executable, "-m", "idsbench.cli.main", "compare", str(base), str(limited),
                           "--format", "json", "--level", "75", "--root", str(tmp_path / "noindex")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    cmp = json.loads(done.stdout)
    for name in ("full", "limited"):
        print(name, [(s.summary.replay.sent_pkts, s.summary.sensor.counters.dropped_pkts)
                     for s in load_campaign(tmp_path / name).samples if s.summary.replay is not None])
    assert cmp["differs"] == {"cpus": [1.0, 0.15]}
    (row,) = cmp["rows"]
    drops, decoded = row["metrics"]["dropped_pkts"], row["metrics"]["decoded_pkts"]
    assert drops["base"] == 0 and drops["contender"] > 0
    assert drops["direction"] == "higher" and drops["ci_overlap"] is False
    assert decoded["direction"] == "lower" and decoded["ci_overlap"] is False
    assert len(drops["contender_ci"]) == 2 and drops["contender_ci"][0] <= drops["contender"] <= drops["contender_ci"][1]
    table = subprocess.run([sys.executable, "-m", "idsbench.cli.main", "compare", str(base), str(limited),
                            "--root", str(tmp_path / "noindex")], capture_output=True, text=True, timeout=120)
    assert table.returncode == 0 and "dropped" in table.stdout
