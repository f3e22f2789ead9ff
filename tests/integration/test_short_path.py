"""The short path end to end (issue 41 item 7), the real CLI, Suricata and replayer: `idsbench run --trace
PCAP --rules FILE --out DIR` without a spec file, and `--duet-rules A B`. The spec the flags make is written
into the campaign (spec.toml) and is the spec the campaign ran; a named ruleset's rule counts are the loaded
ones (item 2), and a duet of 2 samples gives no verdict (item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import tomllib

from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")
RULES = ['alert http any any -> any any (msg:"short path GET"; http.method; content:"GET"; sid:3900001; rev:1;)',
         'alert dns any any -> any any (msg:"short path DNS"; dns.query; content:"."; sid:3900002; rev:1;)',
         'alert tcp any any -> any any (msg:"short path SYN"; flags:S; sid:3900003; rev:1;)']


@pytest.fixture
def env(state_dir, cache_dir):
    return {**os.environ, "IDSBENCH_STATE_DIR": str(state_dir), "IDSBENCH_CACHE": str(cache_dir),
            "IDSBENCH_PREFIX": TEST_PREFIX}


def _idsbench(*args, env, timeout=600):
    return subprocess.run([sys.executable, "-m", "idsbench.cli.main", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_run_from_a_trace_and_rules_without_a_spec_file(tmp_path, env, pcaps):
    rules = tmp_path / "mine.rules"
    rules.write_text("\n".join(RULES) + "\n")
    out = tmp_path / "out"
    done = _idsbench("run", "--trace", pcaps / "tcpreplay_test.pcap", "--rules", rules, "--rate", "2000pps",
                     "--samples", "2", "--out", out, "--no-report", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"spec: {out / 'spec.toml'}" in done.stdout
    kept = tomllib.loads((out / "spec.toml").read_text())
    campaign = load_campaign(out)
    assert spec_from_dict(kept).model_dump(mode="json") == campaign.doc.spec.model_dump(mode="json")
    rows = json.loads(_idsbench("results", out, "--format", "json", env=env).stdout)
    (row,) = rows
    print({k: row.get(k) for k in ("status", "rules_total", "rules_loaded", "alerts", "alert_recall",
                                   "sensor_us_per_pkt", "sensor_us_per_pkt_net", "ci_level")})
    assert row["status"] == "ok" and row["samples"] == 2 and row["ci_level"] == 0.5
    assert row["rules_total"] == row["rules_loaded"] == len(RULES)
    assert row["sensor_us_per_pkt"] is not None and row["sensor_us_per_pkt_net"] is not None
    assert 0 < row["sensor_us_per_pkt_net"] < row["sensor_us_per_pkt"]
    table = _idsbench("results", out, env=env).stdout
    assert "sensor µs/pkt" in table and "net of idle" in table


def test_a_duet_of_two_rule_files_from_flags(tmp_path, env, pcaps):
    base, more = tmp_path / "base.rules", tmp_path / "more.rules"
    base.write_text(RULES[0] + "\n")
    more.write_text("\n".join(RULES) + "\n")
    out = tmp_path / "duet"
    done = _idsbench("run", "--trace", pcaps / "tcpreplay_test.pcap", "--duet-rules", base, more,
                     "--rate", "2000pps", "--samples", "2", "--out", out, "--no-report", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(_idsbench("results", out, "--format", "json", env=env).stdout)
    sides = {r["duet_side"]: r for r in rows if r.get("duet_side")}
    (pair,) = [r for r in rows if "duet_ratio" in r]
    print({s: (r["rules_total"], r["rules_loaded"]) for s, r in sides.items()}, pair["duet_ratio"], pair["ci_level"])
    assert (sides["a"]["rules_total"], sides["a"]["rules_loaded"]) == (1, 1)
    assert (sides["b"]["rules_total"], sides["b"]["rules_loaded"]) == (3, 3)
    assert pair["ci_level"] == pair["duet_ratio_ci_level"] == 0.5 and pair["duet_verdict"] == "inconclusive"
    table = _idsbench("results", out, env=env).stdout
    assert "duet side a: rules=base" in table and "duet side b: rules=more" in table
