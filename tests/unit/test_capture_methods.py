"""Capture methods as an axis (issue 30): the spec's axis and options, their validation before anything
starts, each engine's config per method with its defaults written out, the counters and drop points of
each method, and the waterfall booking AF_XDP's native-mode drops once."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench import capture
from idsbench.accounting import WaterfallInput, waterfall
from idsbench.buildstamp import SnortBuild
from idsbench.capture import CaptureCatalogue, CaptureMethod, Option
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.plan import plan
from idsbench.sensors import registry
from idsbench.sensors.base import SensorOptions
from idsbench.sensors.snort import Snort
from idsbench.sensors.snort.config import SnortInstall, SnortOptions
from idsbench.sensors.snort.config import render_config as render_snort
from idsbench.sensors.snort.stats import SnortCounters
from idsbench.sensors.suricata import Suricata, capture_drops_from_stats, counters_from_stats
from idsbench.sensors.suricata import capture as suricata_capture
from idsbench.sensors.suricata.config import RunPaths, capture_section, render_config
from idsbench.spec import spec_from_dict


def _spec(sensor: dict[str, object]) -> object:
    return spec_from_dict({"name": "cap", "samples": 1, "sensor": sensor})


# --- the spec and the plan ---------------------------------------------------------------------------
def test_capture_is_an_axis_in_case_ids_and_params():
    cases = plan(_spec({"capture": ["af-packet", "af-xdp"]}))
    assert [c.capture for c in cases] == ["af-packet", "af-xdp"]
    assert "-cap_af_xdp-" in cases[1].case_id and cases[1].params()["capture"] == "af-xdp"
    one = plan(_spec({"capture": "pcap"}))
    assert [c.capture for c in one] == ["pcap"]


def test_unset_capture_keeps_case_ids_and_the_spec_dump():
    spec = _spec({})
    assert "capture" not in spec.model_dump()["sensor"] and "capture_options" not in spec.model_dump()["sensor"]
    (case,) = plan(spec)
    assert case.capture is None and "cap_" not in case.case_id
    assert case.case_id == plan(_spec({"threads": [None]}))[0].case_id


@pytest.mark.parametrize("sensor, match", [
    ({"capture": "pf-ring"}, "suricata has no such capture method"),
    ({"engine": ["snort"], "capture": "af-xdp"}, "snort has no such capture method.*afpacket, pcap"),
    ({"capture": "af-packet", "capture_options": {"ring-szie": 4}}, "'ring-szie' is not an option"),
    ({"capture": ["af-packet", "af-xdp"], "capture_options": {"cluster-type": "cluster_qm"}},
     "'cluster-type' is not an option of suricata's 'af-xdp'"),
    ({"capture": "af-packet-v2", "capture_options": {"block-size": 65536}}, "'block-size' is not an option"),
    ({"capture": "af-packet", "capture_options": {"cluster-type": "cluster_rr"}}, "not one of cluster_flow"),
    ({"capture": "af-xdp", "capture_options": {"af-xdp": {"xdp-mode": "hw"}}}, "not one of drv, skb, driver"),
    ({"capture": "af-packet", "capture_options": {"ring-size": "big"}}, "not a whole number"),
    ({"capture_options": {"af_xdp": {"xdp-mode": "skb"}}}, "names no capture method"),
    ({"capture": "Bad Name"}, "not a capture method name"),
])
def test_bad_capture_input_is_a_spec_error_naming_the_fix(sensor, match):
    with pytest.raises(SpecError, match=match) as err:
        plan(_spec(sensor))
    assert err.value.fix


def test_a_build_is_checked_as_its_engine_and_only_af_xdp_asks_a_container_for_more():
    with pytest.raises(SpecError, match="suricata has no such capture method"):
        plan(_spec({"engine": ["suricata@8.0.6"], "capture": "afpacket"}))  # Snort's name, not Suricata's
    assert registry.family("suricata@8.0.6+profiling") == "suricata" and registry.family("snort") == "snort"
    assert registry.capture_method("suricata@8.0.6", None).name == "af-packet"
    assert registry.capture_method("suricata@8.0.6", "af-xdp").container_capabilities == ("SYS_ADMIN",)
    assert registry.capture_method("suricata", "af-xdp").container_capabilities == ("SYS_ADMIN",)
    assert all(m.container_capabilities == () for e in registry.names() for m in registry.capture_methods(e).methods
               if m.name != "af-xdp")


def test_a_methods_own_table_applies_to_it_only():
    opts = {"use-mmap": True, "af-xdp": {"xdp-mode": "skb"}, "af-packet": {"ring-size": 4096}}
    capture.check({"suricata": registry.capture_methods("suricata")}, ["af-packet", "af-packet-v2"],
                  {"use-mmap": True, "af-packet": {"block-size": 1 << 18}})
    assert capture.options_for("af-xdp", opts) == {"use-mmap": True, "xdp-mode": "skb"}
    assert capture.options_for("af-packet", opts) == {"use-mmap": True, "ring-size": 4096}


def test_the_nodetect_engine_keeps_its_readers_and_refuses_others():
    assert [c.capture for c in plan(_spec({"engine": ["nodetect"], "capture": ["afpacket", "libpcap"]}))] == [
        "afpacket", "libpcap"]
    with pytest.raises(SpecError, match="nodetect has no such capture method"):
        plan(_spec({"engine": ["nodetect"], "capture": "af-xdp"}))
    with pytest.raises(SpecError, match="'block_size' is not an option of nodetect's 'afpacket'"):
        plan(_spec({"engine": ["nodetect"], "capture_options": {"block_size": 4096}}))


def test_the_generic_check_reads_only_what_an_engine_declares():
    """A made-up engine's declaration is all the axis needs: its methods, options, aliases, defaults, what it
    refuses and where it attaches XDP in the driver (no engine name in the generic code)."""
    toy = CaptureCatalogue(engine="toy", default="ring", methods=(
        CaptureMethod("ring", options={"mode": Option("choice", ("fast", "slow"), aliases=(("quick", "fast"),))},
                      defaults={"mode": "fast", "depth": 4}, native_xdp_when=("mode", "fast"),
                      native_xdp_fix="set mode = \"slow\""),
        CaptureMethod("tape", refused="it is not wired yet")))
    assert capture.effective_options("toy", toy.method(None), {"mode": "quick"}) == {"mode": "fast", "depth": 4}
    capture.check({"toy": toy}, ["ring"], {"mode": "slow"}, kinds=["container-vtap"])
    assert capture.native_xdp(toy.method("ring"), {}) and not capture.native_xdp(toy.method("ring"), {"mode": "slow"})
    with pytest.raises(SpecError, match="mode fast.*'container-vtap'") as err:
        capture.check({"toy": toy}, ["ring"], {}, kinds=["baremetal", "container-vtap"])
    assert err.value.fix == 'set mode = "slow", or run ring on another setup kind.'
    with pytest.raises(SpecError, match="toy's 'tape' does not run here yet: it is not wired yet") as err:
        capture.check({"toy": toy}, ["tape"], {})
    assert err.value.fix == "use ring for toy."
    with pytest.raises(SpecError, match="toy has no such capture method") as err:
        capture.check({"toy": toy}, ["disk"], {})
    assert err.value.fix == "toy captures with ring, tape."
    with pytest.raises(ValueError, match="default capture method 'disk'"):
        CaptureCatalogue(engine="toy", default="disk", methods=(CaptureMethod("ring"),))


# --- Suricata's config per method --------------------------------------------------------------------
def test_af_packet_v3_writes_its_defaults_out(tmp_path: Path):
    cfg = render_config({}, RunPaths(tmp_path), "eth0", [], 1, threads=2, cluster_id=7)
    afp = cfg["af-packet"][0]
    assert afp["tpacket-v3"] is True and afp["use-mmap"] is True and afp["cluster-type"] == "cluster_flow"
    assert afp["block-size"] == 131072 and afp["threads"] == 2 and cfg["runmode"] == "workers"
    _, eff = capture_section("af-packet", "eth0", 2, 7, None, {})
    assert eff == {"tpacket-v3": True, "use-mmap": True, "cluster-type": "cluster_flow", "block-size": 131072,
                   "threads": 2}


def test_af_packet_v2_and_its_options(tmp_path: Path):
    cfg = render_config({}, RunPaths(tmp_path), "eth0", [], 1, capture="af-packet-v2",
                        capture_options={"ring-size": 512, "cluster-type": "cluster_qm"})
    afp = cfg["af-packet"][0]
    assert afp["tpacket-v3"] is False and afp["use-mmap"] is True and afp["ring-size"] == 512
    assert afp["cluster-type"] == "cluster_qm" and "block-size" not in afp


def test_af_xdp_section_single_runmode_and_effective_options(tmp_path: Path):
    cfg = render_config({}, RunPaths(tmp_path), "eth0", [], 1, threads=4, capture="af-xdp",
                        capture_options={"xdp-mode": "driver", "enable-busy-poll": "no"})
    xdp = cfg["af-xdp"][0]
    assert xdp["interface"] == "eth0" and xdp["threads"] == 1 and xdp["force-xdp-mode"] == "drv"
    assert xdp["force-bind-mode"] == "copy" and xdp["enable-busy-poll"] is False
    assert cfg["runmode"] == "single"  # a veth reports no RSS queues: workers would start no thread


def test_pcap_section_one_thread_and_libpcaps_ring(tmp_path: Path):
    cfg = render_config({}, RunPaths(tmp_path), "eth0", [], 1, threads=3, mtu=9000, capture="pcap")
    pcap = cfg["pcap"][0]
    assert pcap["threads"] == 1 and pcap["buffer-size"] == suricata_capture.PCAP_DEFAULT_BUFFER and pcap["snaplen"] == 9022


def test_argv_starts_the_method_on_the_interface(tmp_path: Path):
    sur = Suricata(default_config=tmp_path / "none.yaml")
    (tmp_path / "none.yaml").write_text("%YAML 1.1\n---\nvars: {}\n")
    for method, flag in (("af-packet-v2", "--af-packet=x0"), ("af-xdp", "--af-xdp=x0"), ("pcap", "--pcap=x0")):
        run = sur.prepare(tmp_path / method, "x0", SensorOptions(capture=method))
        assert flag in run.argv and run.capture == method and run.capture_options


def test_af_xdp_on_a_build_without_it_is_refused_before_the_run(tmp_path: Path, monkeypatch):
    sur = Suricata()
    monkeypatch.setattr(Suricata, "build_info", lambda self: {"version": "8.0.6", "af_xdp": False})
    monkeypatch.setattr(Suricata, "version", lambda self: "8.0.6")
    with pytest.raises(SpecError, match="without AF_XDP support") as err:
        sur.config_test(SensorOptions(capture="af-xdp"), tmp_path)
    assert "libxdp" in (err.value.fix or "")


# --- counters and drop points ------------------------------------------------------------------------
def test_af_xdp_counters_add_the_sockets_drops_to_what_they_read():
    stats = {"capture": {"afxdp_packets": 14143, "kernel_drops": 26728}, "decoder": {"pkts": 14143}}
    c = counters_from_stats(stats, drops_at_nic=True)
    assert (c.captured_pkts, c.dropped_pkts, c.decoded_pkts, c.dropped_at_nic_pkts) == (40871, 26728, 14143, 26728)
    assert counters_from_stats(stats).dropped_at_nic_pkts == 0
    assert capture_drops_from_stats("af-xdp", stats) == {"af-xdp.socket_drops": 26728}


def test_pcap_drop_points_keep_the_interfaces_own_apart():
    stats = {"capture": {"kernel_packets": 40878, "kernel_drops": 15595, "kernel_ifdrops": 3}}
    assert counters_from_stats(stats).captured_pkts == 40878  # ps_recv counts the ring's drops already
    assert capture_drops_from_stats("pcap", stats) == {"pcap.ps_drop": 15595, "pcap.ps_ifdrop": 3}
    assert capture_drops_from_stats("af-packet-v2", stats) == {"af-packet-v2.ring_drops": 15595}


def test_snort_pcap_daq_received_counts_its_drops_already():
    c = SnortCounters(received=1000, analyzed=700, dropped=300)
    assert c.schema_counters("pcap")["captured_pkts"] == 1000
    assert c.schema_counters("afpacket")["captured_pkts"] == 1300


def test_snort_renders_the_pcap_daq_without_fanout():
    opts = SnortOptions(rules=(), log_dir=Path("/l"), stats_interval_s=1, interface="e0", threads=1,
                        daq_module="pcap", pcap_buffer=1 << 20)
    lua = render_snort(opts, Path("/etc/snort.lua"))
    assert "name = 'pcap', mode = 'passive'" in lua and "buffer_size=1048576" in lua and "fanout" not in lua
    assert "module_dirs" not in lua


def test_a_refused_method_is_a_spec_error_naming_the_usable_ones(monkeypatch: pytest.MonkeyPatch):
    import dataclasses

    from idsbench.sensors.snort import Snort

    # Snort's pcap DAQ runs (idsbench's module): no engine refuses a method now
    assert all(m.refused is None for e in registry.names() for m in registry.capture_methods(e).methods)
    cat = Snort.capture_methods
    monkeypatch.setattr(Snort, "capture_methods", dataclasses.replace(cat, methods=(
        cat.method("afpacket"), dataclasses.replace(cat.method("pcap"), refused="it cannot be stopped"))))
    with pytest.raises(SpecError, match="'pcap' does not run here yet: it cannot be stopped") as err:
        plan(_spec({"engine": ["snort"], "capture": "pcap"}))
    assert err.value.fix == "use afpacket for snort."


def test_snort_pcap_runs_idsbenchs_daq_module_and_records_it(tmp_path: Path):
    install = SnortInstall(tmp_path / "prefix", SnortBuild("3.12.2.0", "3.0.25", "d1", 2, 22, 472, 1))
    snort = Snort(install=install, cache_dir=tmp_path, variables=())
    with pytest.raises(EnvironmentMissing, match="lacks idsbench's pcap DAQ module") as err:
        snort.check_capture("pcap")  # a tree built before the module: `make snort` adds it
    assert "make snort" in err.value.fix
    snort.check_capture("afpacket")  # the stock module needs nothing more
    folder = tmp_path / "prefix" / "lib" / "daq-idsbench"
    folder.mkdir(parents=True)
    (folder / "daq_pcap.so").write_bytes(b"")
    (folder / ".built").write_text("patch_sha256=0\n")
    snort.check_capture("pcap")
    opts = snort._options(SensorOptions(capture="pcap", threads=2), tmp_path, "ibr1", None)
    assert opts.daq_module_dirs == (folder,) and opts.threads == 1
    lua = render_snort(opts, Path("/etc/snort.lua"))
    assert f"module_dirs = {{ '{folder}' }}," in lua and "name = 'pcap'" in lua
    assert snort._options(SensorOptions(capture="afpacket"), tmp_path, "ibr1", None).daq_module_dirs == ()
    assert snort._options(SensorOptions(capture="pcap"), tmp_path, None, None).daq_module_dirs == ()  # -r: none
    run = snort.prepare(tmp_path / "run", "ibr1", SensorOptions(capture="pcap"))
    assert run.capture_options["daq-patch"] == "libdaq-3.0.25-pcap-interrupt"
    assert "daq-patch" not in snort.prepare(tmp_path / "run2", "ibr1", SensorOptions()).capture_options


def test_waterfall_books_native_xdp_drops_once():
    # measured on a veth (native XDP, a tenth of a core): the interface received all 40872 and counted the
    # 26728 failed redirects as rx_dropped; the socket counted the same 26728
    w = waterfall(WaterfallInput(sent=40872, sender_tx=40872, sensor_rx=40872, sensor_rx_dropped=26728,
                                 captured=40872, dropped=26728, decoded=14144, dropped_at_nic=26728))
    assert (w.loss_nic_pkts, w.loss_capture_pkts, w.unaccounted_pkts) == (0, 26728, 0)
    skb = waterfall(WaterfallInput(sent=40872, sender_tx=40872, sensor_rx=40872, captured=40872, dropped=27365,
                                   decoded=13507))
    assert (skb.loss_nic_pkts, skb.loss_capture_pkts, skb.unaccounted_pkts) == (0, 27365, 0)


# --- results and report ------------------------------------------------------------------------------
def test_rows_and_report_compare_the_capture_methods(tmp_path: Path):
    from idsbench.analysis import case_table
    from idsbench.report import write_report
    from idsbench.store.reader import load_campaign
    from tests.fakecampaign import FakeCase, write_campaign

    root = write_campaign(tmp_path / "c", [FakeCase(capture="af-packet", sensor_cpu=40.0),
                                           FakeCase(capture="pcap", sensor_cpu=60.0, drop_fraction=0.01)])
    rows = {r.params.capture: r.to_row() for r in case_table(load_campaign(root))}
    assert rows["pcap"]["capture"] == "pcap" and rows["pcap"]["capture_options"] == {"threads": 1}
    assert rows["pcap"]["waterfall_capture"] == {"pcap.drops": rows["pcap"]["dropped_pkts"]}
    html = write_report(root).read_text()
    assert "Capture methods compared" in html and "pcap.drops" in html


def test_pcap_total_at_exit_counts_what_was_left_in_libpcaps_ring():
    from idsbench.sensors.suricata import log as slog

    lines = ["[1 - W#01-x0] 2026-11-28 15:07:52 Info: pcap: x0: packets 25283, bytes 1800822",
             "[1 - W#01-x0] 2026-11-28 15:07:52 Info: pcap: x0: pcap total:40879 recv:25284 drop:15595 (38.1%)"]
    assert slog.pcap_total(lines) == 40879 and slog.pcap_total(lines[:1]) is None
    assert (suricata_capture.PCAP.quiet_window_s or 0) > 1.0  # two of libpcap's 500-ms block timeouts


def test_a_build_has_its_engines_methods_defaults_and_windows():
    """`suricata@8.0.6` (and `+profiling`) is Suricata: its methods are checked, its default method is
    af-packet, libpcap's longer quiet window and cold search trials apply to it too."""
    for name in ("suricata@8.0.6", "suricata@8.0.6+profiling", "suricata+profiling"):
        assert registry.family(name) == "suricata"
        assert registry.capture_methods(name) is suricata_capture.CAPTURE
        assert registry.capture_method(name, None).name == "af-packet"
        assert registry.capture_method(name, "pcap").quiet_window_s == suricata_capture.PCAP.quiet_window_s
        assert registry.capture_method(name, "af-packet").quiet_window_s is None  # the drain's own
        assert "new second" in (registry.capture_method(name, "pcap").cold_trials or "")
        assert registry.capture_method(name, "af-xdp").cold_trials is None
    builds = {"suricata@8.0.6": registry.capture_methods("suricata@8.0.6")}
    with pytest.raises(SpecError, match="suricata has no such capture method"):
        capture.check(builds, ["pf-ring"], {})
    with pytest.raises(SpecError, match="'cluster-type' is not an option of suricata's 'af-xdp'"):
        capture.check(builds, ["af-xdp"], {"cluster-type": "cluster_qm"})
    assert registry.capture_method("snort", "pcap").cold_trials is None  # only Suricata's libpcap reader lags
    assert registry.capture_methods("snort+profiling") is registry.capture_methods("snort")


def test_af_xdp_in_native_mode_on_a_macvtap_setup_is_refused_naming_skb():
    doc = {"name": "cap", "samples": 1, "sensor": {"capture": ["af-packet", "af-xdp"]},
           "setup": {"kinds": ["baremetal", "container-vtap"]}}
    with pytest.raises(SpecError, match="xdp-mode drv.*'container-vtap'.*no native XDP") as err:
        plan(spec_from_dict(doc))
    assert 'xdp-mode = "skb"' in (err.value.fix or "")
    skb = {**doc, "sensor": {"capture": ["af-packet", "af-xdp"], "capture_options": {"af-xdp": {"xdp-mode": "skb"}}}}
    assert len(plan(spec_from_dict(skb))) == 4
    assert len(plan(spec_from_dict({**doc, "setup": {"kinds": ["baremetal", "container"]}}))) == 4
