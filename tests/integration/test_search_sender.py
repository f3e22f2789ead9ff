"""`idsbench search` of a case the sender bounds, run as a nightly job runs it (no terminal): the sender's
ceiling is measured once and shared by both repeats, the result says whether the sender was the limit,
and stderr carries one line per trial as the search goes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")

# The nodetect engine (no rules: it only reads the rings) at a full CPU takes what one tcpreplay can
# send on this host, so the sender is the limit; a cheap trace and short trials keep it under a minute.
SPEC = """
name = "sender"
[traffic]
traces = ["builtin:mixed?packets=3000"]
replayers = [1]
rate = "topspeed"
[sensor]
engine = "nodetect"
[search]
repeats = 2
precision = 0.2
initial_trial_s = 0.5
trial_s = 1
duration_sum = 1
final_s = 1
max_trials = 6
"""


def test_two_repeats_share_one_sender_ceiling_and_each_trial_is_a_line(tmp_path, state_dir, cache_dir):
    spec = tmp_path / "sender.toml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    env = {**os.environ, "IDSBENCH_PREFIX": TEST_PREFIX, "IDSBENCH_STATE_DIR": str(state_dir),
           "IDSBENCH_CACHE": str(cache_dir)}
    began = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).parent / "idsbench"), "search", str(spec), "--out", str(out), "--no-report"],
                          capture_output=True, text=True, env=env, timeout=300)  # stderr is a pipe: no terminal
    elapsed = time.monotonic() - began
    print(done.stderr)
    assert done.returncode == 0, done.stderr
    (path,) = (out / "search").glob("*/search.json")
    result = json.loads(path.read_text())
    trials, repeats = result["trials"], result["repeats"]
    ceilings = [t for t in trials if t["ceiling"]]
    assert len(repeats) == 2 and len(ceilings) == 1 and ceilings[0]["repeat"] == 0   # measured once
    ceiling = result["sender_ceiling_pps"]
    assert ceiling and ceiling == ceilings[0]["achieved_pps"]
    assert [r["sender_ceiling_pps"] for r in repeats] == [ceiling, ceiling]          # shared by both
    assert [r["ceiling_measured"] for r in repeats] == [True, False]
    # one line per trial (the search's and the verification's), as they ran
    lines = [line for line in done.stderr.splitlines() if " lost " in line and " pkts (" in line]
    assert len(lines) == len(trials) + len(result["verification"]), done.stderr
    assert "sender at full speed" in lines[0] and "repeat 1/2" in lines[0]
    assert any("repeat 2/2" in line for line in lines)
    assert all(line.rsplit(": ", 1)[1].split(" ")[0] in ("pass", "fail", "the", "did", "sensor") for line in lines)
    (ndr,) = result["results"]
    if ndr["relevant_upper"] is None:   # the sensor took the sender's ceiling: the result says so
        assert ndr["sender_limited"] and "the sensor was not the limit" in done.stderr
    print(f"ceiling {ceiling:,.0f} pps (once for 2 repeats), NDR {ndr['value']:,.0f} pps, sender_limited "
          f"{ndr['sender_limited']}, {len(trials)} trials, {elapsed:.0f} s")
    assert elapsed < 60
