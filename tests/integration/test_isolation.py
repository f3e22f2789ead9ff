"""The isolation comparison of issue 4 in single campaigns: all four setups on the same wire and
trace; a CPU limit that makes the container drop while unlimited bare metal keeps up."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from idsbench.analysis.sample import resources_in_window
from idsbench.run.campaign import run_campaign
from idsbench.settings import cache_dir as default_cache_dir
from idsbench.spec import spec_from_dict

from .conftest import PAUSE_RIDING_RING

pytestmark = pytest.mark.usefixtures("need_root")

PREFIX = f"ibiso{os.getpid() % 10000}"
LOOPS = 894  # 8 s of the 179-packet trace at 20k pps


def _need(*programs):
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (scripts/install-system.sh installs them)")


def _campaign(tmp_path, state_dir, doc):
    out = tmp_path / "campaign"
    run_campaign(spec_from_dict({"name": "iso", "samples": 1, "timing": {"settle_s": 2}, **doc}), out,
                 state_dir=state_dir, cache_dir=default_cache_dir(), name_prefix=PREFIX)
    return [json.loads(p.read_text()) for p in sorted(out.glob("cases/*/s0/summary.json"))]


def test_all_four_setups_on_the_same_trace_and_load(tmp_path, state_dir, pcaps):
    _need("podman", "runc", "debootstrap", "qemu-system-x86_64")
    trace = pcaps / "sv_smtp-data-rejected.pcap"  # 199 packets
    summaries = _campaign(tmp_path, state_dir, {
        "traffic": {"traces": [str(trace)], "replayers": [2], "rate": {"pps": 400}},
        "setup": {"kinds": ["baremetal", "container", "container-vtap", "vm"], "cpus": 1.0,
                  "memory": "1g", "runtime": "podman"},
    })
    by_setup = {s["case"]["setup"]: s for s in summaries}
    assert set(by_setup) == {"baremetal", "container", "container-vtap", "vm"}
    # Same sender side for all: the same trace sha, the same packets sent.
    assert len({s["trace"]["sha256"] for s in summaries}) == 1
    assert {s["replay"]["sent_pkts"] for s in summaries} == {2 * 199}
    for setup in ("baremetal", "container", "container-vtap"):
        c = by_setup[setup]["sensor"]["counters"]
        assert by_setup[setup]["status"] == "ok", by_setup[setup]
        assert (c["dropped_pkts"], c["decoded_pkts"]) == (0, 2 * 199), (setup, c)
    vm = by_setup["vm"]
    assert vm["status"] == "ok", vm
    (vm_json,) = (tmp_path / "campaign").glob("cases/*-vm-*/s0/vm.json")
    accel = json.loads(vm_json.read_text())["accel"]
    assert ("emulated" in vm["labels"]) == (accel == "tcg"), (accel, vm["labels"])
    assert vm["sensor"]["counters"]["decoded_pkts"] + vm["sensor"]["counters"]["dropped_pkts"] \
        == vm["sensor"]["counters"]["captured_pkts"]
    assert vm["sensor"]["counters"]["decoded_pkts"] == 2 * 199


def test_cpu_limit_drops_in_container_not_on_unlimited_bare_metal(tmp_path, state_dir, pcaps, costly_rules):
    _need("podman", "runc", "debootstrap")
    trace = str(pcaps / "tcpreplay_test.pcap")  # 179 packets: HTTP, DNS, ...
    # 8 s at 20k pps (76-79% of a CPU here): a 0.1-CPU sensor falls behind by more than its ring holds,
    # whose depth lets the unlimited one ride out the host's pauses.
    traffic = {"traces": [trace], "replayers": [1], "rate": {"pps": 20000}, "loops": LOOPS}
    sensor = {"rules": ["builtin:events", str(costly_rules)], "set": PAUSE_RIDING_RING}
    bare = _campaign(tmp_path / "bare", state_dir,
                     {"traffic": traffic, "sensor": sensor, "setup": {"kinds": ["baremetal"]}})
    limited = _campaign(tmp_path / "limited", state_dir, {
        "traffic": traffic, "sensor": sensor,
        "setup": {"kinds": ["container"], "cpus": 0.1, "runtime": "podman"}})
    b = bare[0]["sensor"]["counters"]
    c = limited[0]["sensor"]["counters"]
    sample = tmp_path / "bare" / "campaign" / "cases" / bare[0]["case_id"] / "s0"
    replaying = resources_in_window(sample / "monitor.csv", bare[0]["replay"]["start_unix"],
                                    bare[0]["replay"]["end_unix"])
    print(f"unlimited: dropped {b['dropped_pkts']} of {b['captured_pkts']}, "
          f"{replaying.sensor_cpu_pct:.0f}% of a CPU while replaying; "
          f"0.1 CPU: dropped {c['dropped_pkts']} of {c['captured_pkts']}")
    assert b["decoded_pkts"] + b["dropped_pkts"] == b["captured_pkts"] == LOOPS * 179, b
    assert c["decoded_pkts"] + c["dropped_pkts"] == c["captured_pkts"] == LOOPS * 179, c
    # the limit binds: unlimited, the sensor wanted over twice the 0.1 cores it is limited to below
    assert replaying.sensor_cpu_pct > 20, replaying
    # so the limit, not the host, is what drops: the 0.1-CPU sensor gets through at most half of what
    # the unlimited one does (here 34%: what 0.1 CPU decodes while the replay runs, then its rings'
    # worth after it). Compared as packets decoded, not dropped: the unlimited sensor's few drops are
    # this shared host's pauses (CI: 0, 8 and 3,977 of 239,860 at 30k pps, where it needed 97-98% of a
    # CPU), which a ratio of drops would make the test's subject. With 0.2 CPU the limited one decoded
    # 31-52%, too near half.
    assert c["decoded_pkts"] <= b["decoded_pkts"] / 2, (b, c)
    assert c["captured_pkts"] == c["decoded_pkts"] + c["dropped_pkts"]
