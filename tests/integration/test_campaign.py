"""End-to-end campaigns with the real Suricata and tcpreplay on the namespace wire."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idsbench.run.campaign import run_campaign
from idsbench.spec import spec_from_dict

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")


def _run(tmp_path, state_dir, cache_dir, **spec):
    doc = {"name": "t", "samples": 1, "timing": {"settle_s": 1}, **spec}
    out = tmp_path / "campaign"
    result = run_campaign(spec_from_dict(doc), out, state_dir=state_dir, cache_dir=cache_dir,
                          name_prefix=TEST_PREFIX)
    summaries = [json.loads(p.read_text()) for p in sorted(out.glob("cases/*/s*/summary.json"))]
    return result, summaries


def test_lossless_invariants_real_capture(tmp_path, state_dir, cache_dir, pcaps):
    trace = pcaps / "sv_smtp-data-rejected.pcap"  # 199 packets
    result, summaries = _run(tmp_path, state_dir, cache_dir,
                             traffic={"traces": [str(trace)], "replayers": [1, 2], "rate": {"pps": 2000}})
    assert result.failed == []
    assert len(summaries) == 2
    for s in summaries:
        c = s["sensor"]["counters"]
        expected = s["case"]["replayers"] * 199
        assert s["status"] == "ok", s
        assert c["dropped_pkts"] == 0
        assert s["replay"]["sent_pkts"] == expected
        assert c["captured_pkts"] == expected
        assert c["decoded_pkts"] == expected
        assert s["warnings"] == []
        assert s["resources"]["monitor_rows_in_window"] >= 1
        assert s["stable_after_s"] is not None


def test_cpu_limit_and_topspeed_cause_drops_that_add_up(tmp_path, state_dir, cache_dir, pcaps):
    trace = pcaps / "zeek_modbusBig.pcap"  # 13,622 packets
    result, summaries = _run(
        tmp_path, state_dir, cache_dir,
        traffic={"traces": [str(trace)], "replayers": [2], "rate": "topspeed", "loops": 5},
        setup={"cpus": 0.05},
    )
    (s,) = summaries
    c = s["sensor"]["counters"]
    assert s["status"] == "ok"
    assert c["dropped_pkts"] > 0, c
    assert c["captured_pkts"] == c["decoded_pkts"] + c["dropped_pkts"]
    assert c["captured_pkts"] <= s["replay"]["sent_pkts"]
