"""A campaign whose traces each name their own rules, with the real Suricata and replayer: every case runs
its trace's rules and no other, and `idsbench results DIR --format json` gives each case's alerts per
signature, equal to what those rules raise on the trace offline (the ground truth, `suricata -r`)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from idsbench.run.campaign import run_campaign
from idsbench.spec import spec_from_dict

from .conftest import TEST_PREFIX, unavailable

pytestmark = pytest.mark.usefixtures("need_root")

SMTP = "sv_smtp-data-rejected.pcap"   # 199 packets; "EHLO" once, no "GET "
HTTP = "tcpreplay_test.pcap"          # 179 packets; "GET " in 9 requests, no "EHLO"
# Each file: a rule only its own trace matches, and one (CRLF) both traces match: had a trace's cases
# run the other file too, that file's CRLF sid would show up on it.
SMTP_RULES = ('alert tcp any any -> any any (msg:"smtp EHLO"; content:"EHLO"; sid:9900001; rev:1;)\n'
              'alert tcp any any -> any any (msg:"smtp file: CRLF"; content:"|0d 0a|"; sid:9900011; rev:1;)\n')
HTTP_RULES = ('alert tcp any any -> any any (msg:"http GET"; content:"GET "; sid:9900002; rev:1;)\n'
              'alert tcp any any -> any any (msg:"http file: CRLF"; content:"|0d 0a|"; sid:9900021; rev:1;)\n')
OWN = {SMTP: ("smtp", {"9900001", "9900011"}), HTTP: ("http", {"9900002", "9900021"})}


def test_each_trace_runs_its_own_rules_and_results_give_alerts_per_signature(tmp_path: Path, state_dir: Path,
                                                                             cache_dir: Path, pcaps: Path) -> None:
    for name in OWN:
        if not (pcaps / name).is_file():
            unavailable(f"shared capture {pcaps / name} is absent")
    (tmp_path / "smtp.rules").write_text(SMTP_RULES)
    (tmp_path / "http.rules").write_text(HTTP_RULES)
    spec = spec_from_dict({
        "name": "own-rules", "samples": 1, "timing": {"settle_s": 1},
        "traffic": {"traces": [{"path": str(pcaps / SMTP), "rules": [str(tmp_path / "smtp.rules")]},
                               {"path": str(pcaps / HTTP), "rules": [str(tmp_path / "http.rules")]}],
                    "replayers": [1], "rate": [{"pps": 400}]}})
    out = tmp_path / "campaign"
    started = time.monotonic()
    result = run_campaign(spec, out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    print(f"campaign of 2 cases x 1 sample: {time.monotonic() - started:.1f} s")
    assert result.failed == [] and result.ran == 2

    doc = json.loads((out / "campaign.json").read_text())
    assert doc["inputs"]["rulesets"] == {"smtp": [str(tmp_path / "smtp.rules")], "http": [str(tmp_path / "http.rules")]}
    assert set(doc["inputs"]["rule_load"]) == {"suricata smtp", "suricata http"}
    # no case runs sensor.rules (builtin:events): it was neither resolved nor loaded
    assert sorted(r["path"] for r in doc["inputs"]["rules"]) == sorted(str(tmp_path / f) for f in ("http.rules", "smtp.rules"))

    cli = subprocess.run([str(Path(sys.executable).parent / "idsbench"), "results", str(out), "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    rows = {Path(r["trace"]).name: r for r in json.loads(cli.stdout)}
    assert set(rows) == set(OWN)
    for name, (ruleset, sids) in OWN.items():
        row = rows[name]
        assert row["status"] == "ok" and row["samples"] == 1, row
        assert f"-rs_{ruleset}-" in row["case"]
        truth = json.loads((out / "truth" / f"{row['case']}.json").read_text())["alerts_by_sid"]
        assert set(truth) == sids, truth                      # offline, its own rules raise both of its sids
        assert row["alerts_by_sid"] == truth, (name, row["alerts_by_sid"], truth)   # live == offline
        assert row["alert_recall"] == 1 and row["alerts"] == sum(truth.values())
        summary = json.loads(next((out / "cases" / row["case"]).glob("s0/summary.json")).read_text())
        assert [r["source"] for r in summary["sensor"]["rule_sets"]] == [str(tmp_path / f"{ruleset}.rules")]
