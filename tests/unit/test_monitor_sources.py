"""Parsers and sources against fixture text of the /proc formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.monitor import CgroupSource, DiskIO, HostCpu, HostMemory, NetDevSource, Softnet
from idsbench.monitor.host import parse_diskstats, parse_meminfo, parse_proc_stat, parse_softnet, whole_disks
from idsbench.monitor.netdev import IfCounters, parse_net_dev

PROC_STAT_0 = """cpu  100 0 100 800 0 0 0 0 0 0
cpu0 50 0 50 400 0 0 0 0 0 0
cpu1 50 0 50 400 0 0 0 0 0 0
intr 12345 0 0
ctxt 999
"""
# cpu0 fully busy for 100 jiffies (60 user + 40 system); cpu1 idle 80 + iowait 20
PROC_STAT_1 = """cpu  160 0 140 880 20 0 0 0 0 0
cpu0 110 0 90 400 0 0 0 0 0 0
cpu1 50 0 50 480 20 0 0 0 0 0
intr 12400 0 0
"""

MEMINFO = """MemTotal:       16000000 kB
MemFree:         2000000 kB
MemAvailable:   10000000 kB
Buffers:          100000 kB
SwapTotal:       4000000 kB
SwapFree:        3000000 kB
HugePages_Total:       0
"""

DISKSTATS = """   7       0 loop0 10 0 80 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   8       0 sda 100 5 2000 30 50 3 4000 20 0 40 50 0 0 0 0 0 0
   8       1 sda1 90 5 1800 30 50 3 4000 20 0 40 50 0 0 0 0 0 0
 259       0 nvme0n1 10 0 100 1 20 0 300 2 0 3 3
 259       1 nvme0n1p1 10 0 100 1 20 0 300 2 0 3 3
 253       0 dm-0 99 0 1800 30 50 0 4000 20 0 40 50 0 0 0 0 0 0
"""

NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     500       5    0    0    0     0          0         0      500       5    0    0    0     0       0          0
  veth0:12345678901  1000    1    7    0     0          0         2   640000    800    0    3    0     0       0          0
  eth1:     100       2    0    1    0     0          0         0      200       4    0    0    0     0       0          0
"""


def test_parse_proc_stat() -> None:
    s = parse_proc_stat(PROC_STAT_0)
    assert s["cpu"] == (200, 1000) and s["cpu1"] == (100, 500) and set(s) == {"cpu", "cpu0", "cpu1"}


def test_host_cpu_percent_over_interval(tmp_path: Path) -> None:
    f = tmp_path / "stat"
    f.write_text(PROC_STAT_0)
    src = HostCpu(f)
    assert src.columns() == ["host_cpu_pct", "cpu0_pct", "cpu1_pct"]
    src.start()
    f.write_text(PROC_STAT_1)
    out = src.sample()
    assert out["cpu0_pct"] == pytest.approx(100.0)
    assert out["cpu1_pct"] == pytest.approx(0.0)  # iowait counts as idle
    assert out["host_cpu_pct"] == pytest.approx(50.0)
    assert src.sample()["host_cpu_pct"] == 0.0  # no jiffies passed: 0, not a division error
    src.stop()


def test_meminfo(tmp_path: Path) -> None:
    m = parse_meminfo(MEMINFO)
    assert m["MemTotal"] == 16_000_000 * 1024 and m["HugePages_Total"] == 0
    f = tmp_path / "meminfo"
    f.write_text(MEMINFO)
    out = HostMemory(f).sample()
    assert out == {"mem_used_bytes": 6_000_000 * 1024, "mem_available_bytes": 10_000_000 * 1024,
                   "swap_used_bytes": 1_000_000 * 1024}


def test_diskstats_whole_disks_only(tmp_path: Path) -> None:
    assert parse_diskstats(DISKSTATS, {"sda", "nvme0n1"}) == ((2000 + 100) * 512, (4000 + 300) * 512)
    f = tmp_path / "diskstats"
    f.write_text(DISKSTATS)
    src = DiskIO(f, disks={"sda"})
    src.start()
    f.write_text(DISKSTATS.replace(" sda 100 5 2000 30 50 3 4000", " sda 101 5 2008 30 51 3 4016"))
    assert src.sample() == {"disk_read_bytes": 8 * 512, "disk_write_bytes": 16 * 512}


def test_whole_disks_skips_virtual(tmp_path: Path) -> None:
    devices = tmp_path / "devices"
    for real in ("pci0000:00/0000:00:04.0/virtio1/block/vda", "virtual/block/loop0", "virtual/block/dm-0"):
        (devices / real).mkdir(parents=True)
    block = tmp_path / "block"
    block.mkdir()
    for real in ("pci0000:00/0000:00:04.0/virtio1/block/vda", "virtual/block/loop0", "virtual/block/dm-0"):
        (block / Path(real).name).symlink_to(devices / real)
    assert whole_disks(block) == {"vda"}
    assert whole_disks(tmp_path / "nope") == set()


def test_softnet_sums_cpus_and_survives_wrap(tmp_path: Path) -> None:
    t0 = "ffffff00 00000001 00000002 0 0 0 0 0 0 0 0 0 00000000 0 0\n" \
         "00000010 00000000 00000003 0 0 0 0 0 0 0 0 0 00000001 0 0\n"
    assert parse_softnet(t0) == [(0xFFFFFF00, 1, 2), (0x10, 0, 3)]
    f = tmp_path / "softnet_stat"
    f.write_text(t0)
    src = Softnet(f)
    src.start()
    # cpu0's processed counter wraps past 2**32 (+0x200); cpu1 +0x10 processed, +1 dropped, +2 squeezed
    f.write_text("00000100 00000001 00000002 0 0 0 0 0 0 0 0 0 00000000 0 0\n"
                 "00000020 00000001 00000005 0 0 0 0 0 0 0 0 0 00000001 0 0\n")
    assert src.sample() == {"softnet_processed": 0x200 + 0x10, "softnet_dropped": 1, "softnet_squeezed": 2}


def test_parse_net_dev() -> None:
    t = parse_net_dev(NET_DEV)
    assert t["veth0"] == IfCounters(rx_pkts=1000, rx_bytes=12345678901, rx_dropped=7,
                                    tx_pkts=800, tx_bytes=640000, tx_dropped=3)
    assert set(t) == {"lo", "veth0", "eth1"}


def _fake_proc(tmp_path: Path, pid: int, text: str) -> Path:
    d = tmp_path / str(pid) / "net"
    d.mkdir(parents=True, exist_ok=True)
    (d / "dev").write_text(text)
    return d / "dev"


def test_netdev_source_one_interface(tmp_path: Path) -> None:
    f = _fake_proc(tmp_path, 42, NET_DEV)
    src = NetDevSource("sensor", 42, "veth0", proc=tmp_path)
    assert src.columns() == ["sensor_rx_pkts", "sensor_rx_bytes", "sensor_rx_dropped",
                             "sensor_tx_pkts", "sensor_tx_bytes", "sensor_tx_dropped"]
    src.start()
    f.write_text(NET_DEV.replace("12345678901  1000    1    7", "12345679901  1010    1    9"))
    assert src.sample() == {"sensor_rx_pkts": 10, "sensor_rx_bytes": 1000, "sensor_rx_dropped": 2,
                            "sensor_tx_pkts": 0, "sensor_tx_bytes": 0, "sensor_tx_dropped": 0}


def test_netdev_source_all_but_lo_and_missing_interface(tmp_path: Path) -> None:
    f = _fake_proc(tmp_path, 7, NET_DEV)
    every = NetDevSource("sender", 7, None, proc=tmp_path)
    gone = NetDevSource("x", 7, "veth9", proc=tmp_path)
    every.start()
    gone.start()
    f.write_text(NET_DEV.replace("    lo:     500       5", "    lo:     900       9")
                 .replace("  eth1:     100       2", "  eth1:     150       3"))
    out = every.sample()
    assert out["sender_rx_pkts"] == 1 and out["sender_rx_bytes"] == 50  # lo's growth not counted
    assert gone.sample() == {}


class FakeCgroup:
    def __init__(self) -> None:
        self.ns = 0
        self.mem = 1000

    def cpu_usage_ns(self) -> int:
        return self.ns

    def memory_bytes(self) -> int:
        return self.mem

    def memory_peak_bytes(self) -> int:
        return 4000


def test_cgroup_source_cpu_is_100_per_core() -> None:
    now = [10.0]
    cg = FakeCgroup()
    src = CgroupSource(cg, clock=lambda: now[0])
    src.start()
    now[0], cg.ns = 12.0, 3_000_000_000  # 3 CPU-seconds in 2 s = 1.5 cores
    assert src.sample() == {"sensor_cpu_pct": pytest.approx(150.0), "sensor_mem_bytes": 1000,
                            "sensor_mem_peak_bytes": 4000}
    now[0], cg.ns = 13.0, 3_500_000_000
    assert src.sample()["sensor_cpu_pct"] == pytest.approx(50.0)


def test_cgroup_source_without_cgroup_keeps_columns() -> None:
    src = CgroupSource(None)
    src.start()
    assert src.columns() == ["sensor_cpu_pct", "sensor_mem_bytes", "sensor_mem_peak_bytes"]
    assert src.sample() == {}
