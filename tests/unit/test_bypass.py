"""Flow bypass as an axis (issue 30 item 3): the spec's axis and its validation before anything starts,
Suricata's config per mode with its settings written out, the bypass counters, the waterfall's own
"bypassed" line closing exactly, and the elephants profile."""

from __future__ import annotations

import collections
import struct
from pathlib import Path

import pytest

from idsbench import bypass
from idsbench.accounting import WaterfallInput, waterfall
from idsbench.bypass import suricata as suricata_bypass
from idsbench.capture import CaptureCatalogue, CaptureMethod
from idsbench.errors import SpecError
from idsbench.plan import plan
from idsbench.sensors import registry
from idsbench.sensors.base import SensorOptions
from idsbench.sensors.suricata import Suricata, counters_from_stats
from idsbench.sensors.suricata.config import RunPaths, render_config
from idsbench.spec import Spec, spec_from_dict


def _spec(sensor: dict[str, object], **extra: object) -> Spec:
    return spec_from_dict({"name": "byp", "samples": 1, "sensor": sensor, **extra})


# --- the spec and the plan ---------------------------------------------------------------------------
def test_bypass_is_an_axis_in_case_ids_and_params():
    cases = plan(_spec({"bypass": ["off", "local", "xdp", "ebpf"]}))
    assert [c.bypass for c in cases] == ["off", "local", "xdp", "ebpf"]
    assert "-byp_xdp-" in cases[2].case_id and cases[2].params()["bypass"] == "xdp"
    assert [c.bypass for c in plan(_spec({"bypass": "local"}))] == ["local"]


def test_unset_bypass_keeps_case_ids_and_the_spec_dump():
    spec = _spec({})
    assert "bypass" not in spec.model_dump()["sensor"]
    (case,) = plan(spec)
    assert case.bypass is None and "byp_" not in case.case_id
    assert case.case_id == plan(_spec({"capture": [None]}))[0].case_id


@pytest.mark.parametrize("sensor, extra, match", [
    ({"bypass": "dpdk"}, {}, "'dpdk' is not a bypass mode"),
    ({"bypass": ["off", "xdp"], "capture": "af-xdp"}, {}, "'xdp' cannot work with sensor.capture = 'af-xdp'.*af-packet"),
    ({"bypass": "ebpf", "capture": "pcap"}, {}, "'ebpf' cannot work with sensor.capture = 'pcap'"),
    ({"bypass": "local", "engine": ["snort"]}, {}, "snort has no flow bypass"),
    ({"bypass": "xdp", "engine": ["nodetect"]}, {}, "nodetect has no flow bypass.*inspects nothing"),
    ({"bypass": "xdp", "engine": ["capture"]}, {}, "nodetect has no flow bypass"),  # the engine's older name
    ({"bypass": "xdp"}, {"setup": {"kinds": ["container"]}}, "does not run in setup 'container'"),
])
def test_bad_bypass_input_is_a_spec_error_naming_the_fix(sensor, extra, match):
    with pytest.raises(SpecError, match=match) as err:
        plan(_spec(sensor, **extra))
    assert err.value.fix


def _catalogues(*engines: str) -> dict[str, CaptureCatalogue]:
    return {name: registry.capture_methods(name) for name in engines}


def test_off_is_fine_for_every_engine_and_local_for_every_capture():
    bypass.check(_catalogues("snort", "nodetect"), ["off", None], [None])
    bypass.check(_catalogues("suricata"), ["local"], ["af-packet", "af-packet-v2", "af-xdp", "pcap"])
    bypass.check(_catalogues("suricata@8.0.6"), ["xdp", "ebpf"], ["af-packet", "af-packet-v2", None])


def test_the_check_reads_what_each_engine_declares():
    """No engine name in the generic check: an engine declaring a bypass mode gets it, one declaring none is
    refused with its own reason, and a kernel-side mode needs a method that declares it can load it."""
    toy = CaptureCatalogue(engine="toy", default="ring", methods=(CaptureMethod("ring", kernel_bypass=("xdp",)),
                                                                   CaptureMethod("copy")),
                           bypass=("xdp",))
    bypass.check({"toy": toy}, ["xdp"], ["ring"])
    with pytest.raises(SpecError, match="'xdp' cannot work with sensor.capture = 'copy': toy loads its xdp program "
                                        "through ring only") as err:
        bypass.check({"toy": toy}, ["xdp"], ["copy"])
    assert err.value.fix and 'capture = "ring"' in err.value.fix
    with pytest.raises(SpecError, match="toy has no 'ebpf' bypass \\(it has xdp\\)"):
        bypass.check({"toy": toy}, ["ebpf"], ["ring"])
    quiet = CaptureCatalogue(engine="quiet", default="ring", methods=(CaptureMethod("ring"),), no_bypass="it sleeps")
    with pytest.raises(SpecError, match="quiet has no flow bypass \\(it sleeps\\)") as err:
        bypass.check({"quiet": quiet, "toy": toy}, ["xdp"], ["ring"])
    assert err.value.fix == 'use bypass = "off" for quiet, or run toy for the bypass axis.'


# --- Suricata's config per mode ----------------------------------------------------------------------
def test_every_mode_pins_stream_bypass_and_the_depth(tmp_path: Path):
    base = {"stream": {"memcap": "64mb", "reassembly": {"memcap": "256mb", "depth": "4mb"}}}
    off = render_config(base, RunPaths(tmp_path), "eth0", [], 1)
    assert off["stream"]["bypass"] is False and off["stream"]["reassembly"] == {"memcap": "256mb", "depth": "1mb"}
    local = render_config(base, RunPaths(tmp_path), "eth0", [], 1, bypass="local")
    assert local["stream"]["bypass"] is True and "bypass" not in local["af-packet"][0]
    assert base["stream"]["reassembly"]["depth"] == "4mb"  # the base config is not changed


def test_xdp_and_ebpf_load_their_programs_on_the_interface(tmp_path: Path):
    xdp = render_config({}, RunPaths(tmp_path), "eth0", [], 1, bypass="xdp", bypass_program="/c/xdp_filter.bpf")
    afp = xdp["af-packet"][0]
    assert afp["bypass"] is True and afp["xdp-filter-file"] == "/c/xdp_filter.bpf" and afp["xdp-mode"] == "driver"
    assert afp["use-percpu-hash"] is True and xdp["stream"]["bypass"] is True
    ebpf = render_config({}, RunPaths(tmp_path), "eth0", [], 1, capture="af-packet-v2", bypass="ebpf",
                         bypass_program="/c/bypass_filter.bpf")
    afp = ebpf["af-packet"][0]
    assert afp["ebpf-filter-file"] == "/c/bypass_filter.bpf" and afp["bypass"] is True and "xdp-filter-file" not in afp
    assert suricata_bypass.settings("ebpf", "/c/bypass_filter.bpf") == {
        "stream.bypass": True, "stream.reassembly.depth": "1mb", "af-packet.bypass": True,
        "af-packet.ebpf-filter-file": "/c/bypass_filter.bpf", "af-packet.use-percpu-hash": True}


def test_a_kernel_side_bypass_preloads_the_memlock_shim(tmp_path: Path, monkeypatch):
    from idsbench.sensors import suricata as mod

    monkeypatch.setattr(mod, "bypass_program", lambda name, cache, sources: tmp_path / f"{name}.bpf")
    monkeypatch.setattr(mod.native, "program", lambda name: tmp_path / name)
    (tmp_path / "none.yaml").write_text("%YAML 1.1\n---\nvars: {}\n")
    sur = Suricata(default_config=tmp_path / "none.yaml")
    run = sur.prepare(tmp_path / "x", "x0", SensorOptions(bypass="xdp"))
    assert run.argv[:2] == ["env", f"LD_PRELOAD={tmp_path / 'ibmemlock'}"] and "--af-packet=x0" in run.argv
    assert run.bypass_info() == ("xdp", suricata_bypass.settings("xdp", str(tmp_path / "xdp_filter.bpf")))
    local = sur.prepare(tmp_path / "l", "x0", SensorOptions(bypass="local"))
    assert local.argv[0] != "env" and local.bypass_info()[0] == "local"


def test_a_build_without_ebpf_is_refused_before_the_run(monkeypatch):
    monkeypatch.setattr(Suricata, "build_info", lambda self: {"version": "8.0.6", "ebpf": False})
    monkeypatch.setattr(Suricata, "version", lambda self: "8.0.6")
    with pytest.raises(SpecError, match="without eBPF support") as err:
        Suricata().check_bypass("xdp")
    assert "local" in (err.value.fix or "")
    Suricata().check_bypass("local")  # needs nothing from the build
    Suricata().check_bypass(None)


# --- counters and the waterfall ----------------------------------------------------------------------
def test_bypass_counters_split_the_filters_drops_from_the_locally_skipped():
    stats = {"capture": {"kernel_packets": 9000, "kernel_drops": 0}, "decoder": {"pkts": 9000},
             "flow_bypassed": {"local_pkts": 100, "local_capture_pkts": 20, "pkts": 31000, "bytes": 1}}
    c = counters_from_stats(stats)
    assert (c.bypassed_pkts, c.bypassed_local_pkts) == (31120, 120)
    assert counters_from_stats({"capture": {"kernel_packets": 5}}).bypassed_pkts == 0


def test_waterfall_closes_with_a_bypassed_line():
    # kernel-side: 31000 of 40000 dropped by the filter before the capture, 120 decoded then skipped
    w = waterfall(WaterfallInput(sent=40000, sender_tx=40000, sensor_rx=40000, captured=9000, dropped=0,
                                 decoded=9000, bypassed=31120, bypassed_local=120))
    assert (w.bypassed_pkts, w.decoded_pkts, w.unaccounted_pkts, w.lost_pkts) == (31120, 8880, 0, 0)
    assert w.lost_pkts + w.bypassed_pkts + w.unprocessed_pkts + w.decoded_pkts + w.unaccounted_pkts == w.sent
    assert w.loss_ratio == 0.0  # dropped by design is not a loss
    # local bypass: every packet captured and decoded, the bypassed ones not inspected
    local = waterfall(WaterfallInput(sent=40000, sender_tx=40000, sensor_rx=40000, captured=40000, decoded=40000,
                                     bypassed=30000, bypassed_local=30000))
    assert (local.bypassed_pkts, local.decoded_pkts, local.unaccounted_pkts) == (30000, 10000, 0)
    # under overload: ring drops, softnet drops and bypass side by side, still closing
    busy = waterfall(WaterfallInput(sent=40000, sender_tx=40000, sensor_rx=39500, sensor_rx_dropped=500,
                                    softnet_dropped=300, captured=20000, dropped=5000, decoded=14000,
                                    bypassed=19300, bypassed_local=100))
    assert (busy.loss_nic_pkts, busy.loss_softnet_pkts, busy.loss_capture_pkts, busy.unprocessed_pkts) == (500, 300,
                                                                                                         5000, 1000)
    assert busy.lost_pkts + busy.bypassed_pkts + busy.unprocessed_pkts + busy.decoded_pkts == busy.sent
    assert busy.unaccounted_pkts == 0


# --- the elephants profile ---------------------------------------------------------------------------
def _flow_sizes(pcap: Path) -> list[int]:
    """Packets per TCP/UDP 5-tuple (either direction) of a classic little-endian pcap of Ethernet/IPv4."""
    data = pcap.read_bytes()
    off, sizes = 24, collections.Counter[tuple[bytes, ...]]()
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        frame = data[off + 16: off + 16 + incl]
        off += 16 + incl
        if frame[12:14] != b"\x08\x00":
            continue
        ihl = (frame[14] & 0x0F) * 4
        a, b = frame[26:30] + frame[14 + ihl: 16 + ihl], frame[30:34] + frame[16 + ihl: 18 + ihl]
        sizes[(bytes([frame[23]]), *sorted((a, b)))] += 1
    return sorted(sizes.values(), reverse=True)


def test_elephants_profile_a_few_downloads_carry_most_packets(tmp_path: Path):
    from idsbench.traffic.synth import synthesize

    res = synthesize("elephants", tmp_path / "e.pcap", packets=30000, seed=3)
    assert res.packets == 30000 and res.markers_by_sid.get(1990001, 0) > 0
    sizes = _flow_sizes(tmp_path / "e.pcap")
    big = [n for n in sizes if n >= 1000]
    assert 1 <= len(big) <= 10 and len(sizes) > 10 * len(big), sizes[:12]
    assert sum(big) > 0.5 * res.packets, (sum(big), sizes[:12])


def test_rows_and_report_compare_the_bypass_modes(tmp_path: Path):
    from idsbench.analysis import case_table
    from idsbench.report import write_report
    from idsbench.store.reader import load_campaign
    from tests.fakecampaign import FakeCase, write_campaign

    root = write_campaign(tmp_path / "c", [FakeCase(bypass="off", sensor_cpu=40.0),
                                           FakeCase(bypass="xdp", sensor_cpu=30.0)])
    rows = {r.params.bypass: r.to_row() for r in case_table(load_campaign(root))}
    assert rows["xdp"]["bypass"] == "xdp" and rows["xdp"]["bypass_settings"] == {"stream.bypass": True}
    assert rows["off"]["bypass"] == "off" and "bypassed_pkts" in rows["off"]
    html = write_report(root).read_text()
    assert "Bypass compared" in html and "bypass mode" in html
