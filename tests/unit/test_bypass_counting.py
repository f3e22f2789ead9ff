"""The eBPF socket filter's drops (bypass "ebpf", issue 30 item 3): its flow tables found through the sensor's
file descriptors, their per-flow (per-CPU) packet counters summed from a `bpftool map dump -j`, and the
final counters counting them as bypassed once (never on top of flow_bypassed.pkts)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from idsbench.bypass import counting
from idsbench.sensors.suricata import SuricataRun


def _pair(packets: int, bytes_: int) -> list[str]:
    """struct pair {__u64 packets; __u64 bytes;} as bpftool prints a value without BTF: its bytes in hex."""
    raw = packets.to_bytes(8, "little") + bytes_.to_bytes(8, "little")
    return [f"0x{b:02x}" for b in raw]


KEY = [f"0x{b:02x}" for b in range(16)]


def test_per_cpu_dump_without_btf_sums_every_entry_and_cpu():
    dump = [
        {"key": KEY, "values": [{"cpu": 0, "value": _pair(3, 180)}, {"cpu": 1, "value": _pair(300, 18000)}]},
        {"key": KEY, "values": [{"cpu": 0, "value": _pair(0, 0)}, {"cpu": 1, "value": _pair(70000, 1)}]},
    ]
    assert counting.packets_in_dump(dump) == 3 + 300 + 70000


def test_per_cpu_dump_with_btf_reads_the_formatted_packets():
    dump = [{"key": KEY, "values": [{"cpu": 0, "value": _pair(1, 1)}, {"cpu": 1, "value": _pair(1, 1)}],
             "formatted": {"key": {"src": 1, "dst": 2},
                           "values": [{"cpu": 0, "value": {"packets": 12, "bytes": 700}},
                                      {"cpu": 1, "value": {"packets": 30, "bytes": 900}}]}}]
    assert counting.packets_in_dump(dump) == 42  # the formatted values win over the raw bytes


def test_plain_hash_dump_and_empty_dump():
    assert counting.packets_in_dump([{"key": KEY, "value": _pair(5, 9)}, {"key": KEY, "value": _pair(2**40, 0)}]) \
        == 5 + 2**40
    assert counting.packets_in_dump([]) == 0
    with pytest.raises(ValueError):
        counting.packets_in_dump({"error": "no such map"})
    with pytest.raises(ValueError):
        counting.packets_in_dump([{"key": KEY, "value": "junk"}])


def test_map_ids_come_from_the_processes_bpf_map_fds(tmp_path: Path):
    def fd(pid: int, n: int, target: str, info: str) -> None:
        (tmp_path / str(pid) / "fd").mkdir(parents=True, exist_ok=True)
        (tmp_path / str(pid) / "fdinfo").mkdir(parents=True, exist_ok=True)
        os.symlink(target, tmp_path / str(pid) / "fd" / str(n))
        (tmp_path / str(pid) / "fdinfo" / str(n)).write_text(info)

    fd(10, 3, "anon_inode:bpf-map", "pos:\t0\nflags:\t02000002\nmap_type:\t5\nkey_size:\t16\nmap_id:\t41\n")
    fd(10, 4, "anon_inode:bpf-prog", "prog_type:\t1\nprog_id:\t9\n")
    fd(10, 5, "/dev/null", "pos:\t0\n")
    fd(11, 7, "anon_inode:bpf-map", "map_type:\t5\nmap_id:\t40\n")
    fd(11, 8, "anon_inode:bpf-map", "map_type:\t5\nmap_id:\t41\n")  # the same map through another process
    assert counting.map_ids_of([10, 11, 12], proc_dir=tmp_path) == [40, 41]  # 12: gone, skipped
    assert counting.map_id_of("map_type:\t5\n") == []


def _run(tmp_path: Path, bypass: str, flow_bypassed_pkts: int, filter_drops: int) -> SuricataRun:
    run = SuricataRun(argv=["suricata"], log_dir=tmp_path, eve_path=tmp_path / "eve.json",
                      log_path=tmp_path / "suricata.log", yaml_path=tmp_path / "suricata.yaml",
                      pid_path=tmp_path / "suricata.pid", console_path=tmp_path / "stdout.txt",
                      bypass=bypass, filter_drops=filter_drops)
    stats = {"uptime": 3, "capture": {"kernel_packets": 1000}, "decoder": {"pkts": 1000},
             "flow_bypassed": {"local_pkts": 7, "local_capture_pkts": 3, "pkts": flow_bypassed_pkts}}
    run.eve_path.write_text(json.dumps({"timestamp": "2026-01-01T00:00:01.000000+0000", "event_type": "stats",
                                        "stats": stats}, separators=(",", ":")) + "\n")
    return run


def test_final_counters_count_the_socket_filters_drops_once(tmp_path: Path):
    # within a sample flow_bypassed.pkts is 0: the filter's counters are all of it
    final = _run(tmp_path, "ebpf", 0, 21190).final_counters()
    assert (final.bypassed_pkts, final.bypassed_local_pkts) == (10 + 21190, 10)
    # the flow manager reported part of the live entries' growth: a part of the same counters, not added
    assert _run(tmp_path, "ebpf", 5000, 21190).final_counters().bypassed_pkts == 10 + 21190
    # it deleted entries (flows idle past their timeout): their packets are only in flow_bypassed.pkts
    assert _run(tmp_path, "ebpf", 30000, 21190).final_counters().bypassed_pkts == 10 + 30000
    # the XDP filter's interface drops keep their own path
    assert _run(tmp_path, "xdp", 0, 500).final_counters().bypassed_pkts == 10 + 500


def test_the_filter_is_read_only_in_ebpf_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    calls: list[list[int]] = []
    monkeypatch.setattr(counting, "flow_maps", lambda pids: calls.append(pids) or [40, 41])
    monkeypatch.setattr(counting, "filtered_packets", lambda ids: 7 * len(ids))
    assert _run(tmp_path, "xdp", 0, 0).bypass_filter_pkts([1]) == 0 and calls == []
    run = _run(tmp_path, "ebpf", 0, 0)
    assert run.bypass_filter_pkts([1]) == 14 and run.bypass_filter_pkts([1]) == 14
    assert calls == [[1]]  # the maps are found once, then read by id
