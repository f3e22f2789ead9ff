"""End-to-end campaigns with the real Suricata and tcpreplay on the namespace wire."""

from __future__ import annotations

import json

import pytest

from idsbench.run.campaign import run_campaign
from idsbench.spec import spec_from_dict

from .conftest import TEST_PREFIX, sample_figures_of

pytestmark = pytest.mark.usefixtures("need_root")


def _run(tmp_path, state_dir, cache_dir, **spec):
    doc = {"name": "t", "samples": 1, "timing": {"settle_s": 1}, **spec}
    out = tmp_path / "campaign"
    result = run_campaign(spec_from_dict(doc), out, state_dir=state_dir, cache_dir=cache_dir,
                          name_prefix=TEST_PREFIX)
    summaries = [json.loads(p.read_text()) for p in sorted(out.glob("cases/*/s*/summary.json"))]
    return result, summaries


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


def test_campaign_on_several_real_captures_with_report(tmp_path, state_dir, cache_dir, pcaps):
    from idsbench.report import write_report
    from idsbench.traffic.pcap import read_info

    traces = [pcaps / n for n in ("sv_smtp-data-rejected.pcap", "ndpi_443-firefox.pcap",
                                  "zeek_dcerpc_mapi.pcap")]
    packets = {str(t): read_info(t, cache_dir=cache_dir).packets for t in traces}
    result, summaries = _run(tmp_path, state_dir, cache_dir,
                             traffic={"traces": [str(t) for t in traces], "replayers": [1, 4],
                                      "rate": {"pps": 3000}})
    assert result.failed == [] and len(summaries) == 6
    # the lossless invariants, in every sample: nothing dropped, every packet sent captured and decoded, no
    # warning, the drain concluded and the wire's far end received them all
    for s in summaries:
        c = s["sensor"]["counters"]
        expected = s["case"]["replayers"] * packets[s["case"]["trace"]]
        assert s["status"] == "ok", s
        assert (c["dropped_pkts"], c["captured_pkts"], c["decoded_pkts"]) == (0, expected, expected), s["case"]
        assert s["replay"]["sent_pkts"] == expected
        assert s["warnings"] == [], (s["case"], s["warnings"])
        assert s["drained"] is True and s["wire"]["sensor_rx_pkts"] == expected
    figures = sample_figures_of(tmp_path / "campaign")
    assert len(figures) == 6 and all(f.stable_after_s is not None and f.sensor_cpu_pct > 0
                                     for f in figures.values())
    noise = json.loads((tmp_path / "campaign" / "probe.json").read_text())["noise"]  # the host's quietness, kept
    assert noise["loop_cv"] > 0 and noise["cpus"] and noise["piece_s"] > 0, noise
    report = write_report(tmp_path / "campaign")
    html = report.read_text()
    assert html.count("<img") >= 4
    for t in traces:
        assert t.stem.split("_", 1)[-1][:8] in html


@pytest.mark.parametrize("mode,low,high", [("distinct", 3.5, 4.5), ("identical", 0.8, 1.3)])
def test_flows_per_replayer_mode(tmp_path, state_dir, cache_dir, pcaps, mode, low, high):
    trace = pcaps / "ppa3_synscan.pcap"  # a SYN scan: ~2000 packets, many flows
    result, summaries = _run(tmp_path, state_dir, cache_dir,
                             traffic={"traces": [str(trace)], "replayers": [1, 4], "rate": {"pps": 4000},
                                      "flows": mode})
    flows = {s["case"]["replayers"]: s["sensor"]["counters"]["flows"] for s in summaries}
    assert flows[1] > 100
    assert low <= flows[4] / flows[1] <= high, flows
    assert all(s["case"]["flows"] == mode for s in summaries)


def test_builtin_trace_detection_ground_truth(tmp_path, state_dir, cache_dir):
    result, summaries = _run(tmp_path, state_dir, cache_dir,
                             traffic={"traces": ["builtin:mixed"], "replayers": [2], "rate": {"pps": 10000}},
                             sensor={"rules": ["builtin:events", "builtin:markers"]})
    (s,) = summaries
    c = s["sensor"]["counters"]
    assert s["status"] == "ok"
    assert s["trace"]["markers"] > 0
    assert c["dropped_pkts"] == 0 and c["decoded_pkts"] == 2 * s["trace"]["packets"]
    assert s["detection"] == {"expected_marker_alerts": 2 * s["trace"]["markers"],
                              "marker_alerts": 2 * s["trace"]["markers"]}
    assert c["alerts"] >= 2 * s["trace"]["markers"]
    assert s["warnings"] == []
    assert c["decoder_events"] == 0 and c["invalid_pkts"] == 0
