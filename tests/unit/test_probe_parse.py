"""Probe parsers and readers: ethtool text, /proc/interrupts, build-info, ibtimer JSON, and sysfs/procfs
readers over a fake root tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.probe import ethtool_text as et
from idsbench.probe import host
from idsbench.probe.hypervisor import detect
from idsbench.probe.interrupts import device_irqs, parse_interrupts
from idsbench.probe.sensor import parse_build_info
from idsbench.probe.sysfs import bracketed_choice, format_cpulist, parse_cpulist
from idsbench.probe.timers import parse_output
from idsbench.probe.warnings import warnings
from idsbench.probemodel import HostProbe, SensorProbe, TimerCosts

I40E_X = """RX flow hash indirection table for ens1f0 with 4 RX ring(s):
    0:      0     1     2     3     0     1     2     3
    8:      0     1     2     3     0     1     2     3
RSS hash key:
6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a:6d:5a
RSS hash function:
    toeplitz: on
    xor: off
    crc32: off
"""
VIRTIO_X = """RX flow hash indirection table for eth0 with 1 RX ring(s):
Operation not supported
RSS hash key:
Operation not supported
RSS hash function:
    toeplitz: on
    xor: off
    crc32: off
"""
VETH_L = """Channel parameters for ibpb:
Pre-set maximums:
RX:\t\t2
TX:\t\t2
Other:\t\tn/a
Combined:\tn/a
Current hardware settings:
RX:\t\t1
TX:\t\t1
Other:\t\tn/a
Combined:\tn/a
"""
RINGS = """Ring parameters for eth0:
Pre-set maximums:
RX:\t\t4096
RX Mini:\tn/a
RX Jumbo:\tn/a
TX:\t\t4096
Current hardware settings:
RX:\t\t512
RX Mini:\tn/a
RX Jumbo:\tn/a
TX:\t\t512
"""
COALESCE = """Coalesce parameters for eth0:
Adaptive RX: on  TX: n/a
stats-block-usecs: n/a
rx-usecs: 50
rx-frames: 1
tx-usecs: 0
tx-frames: 1
"""
FEATURES = """Features for eth0:
rx-checksumming: on [fixed]
tx-checksumming: on
\ttx-checksum-ipv4: off [fixed]
generic-receive-offload: on
large-receive-offload: off [fixed]
receive-hashing: off
"""
FLOW_HASH = """TCP over IPV4 flows use these fields for computing Hash flow key:
IP SA
IP DA
L4 bytes 0 & 1 [TCP/UDP src port]
L4 bytes 2 & 3 [TCP/UDP dst port]
"""
INTERRUPTS = """           CPU0       CPU1
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 37:          0          0 PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
 38:          0      15498 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:      11644          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
 50:          5          0 PCI-MSIX-0000:3b:00.0   1-edge      i40e-ens1f0-TxRx-0
NMI:          0          0   Non-maskable interrupts
"""
BUILD_INFO = """This is Suricata version 7.0.10 RELEASE
Features: NFQ PCAP_SET_BUFF AF_PACKET HAVE_PACKET_FANOUT PROFILING
SIMD support: SSE_4_2 SSE_4_1
Suricata Configuration:
  AF_PACKET support:                       yes
  AF_XDP support:                          no
  DPDK support:                            yes
  PF_RING support:                         no
  Hyperscan support:                       yes
  Profiling enabled:                       yes
  Profiling locks enabled:                 no
  Profiling rules enabled:                 no
"""


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cpulist_round_trip():
    assert parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("0-7:2") == [0, 2, 4, 6]
    assert parse_cpulist("") == [] and parse_cpulist(None) == []
    assert format_cpulist([5, 0, 1, 2]) == "0-2,5"
    assert bracketed_choice("always [madvise] never") == "madvise"


def test_rss_symmetric_key_and_table():
    rss = et.parse_rss(I40E_X)
    assert rss is not None
    assert rss.indirection == [0, 1, 2, 3] * 4
    assert rss.hash_function == "toeplitz" and rss.symmetric is True
    assert rss.hash_key is not None and len(rss.hash_key.split(":")) == 40


def test_rss_unsupported_is_null_not_guessed():
    rss = et.parse_rss(VIRTIO_X)
    assert rss is not None and rss.indirection is None and rss.hash_key is None and rss.symmetric is None
    assert et.parse_rss("") is None
    assert et.key_is_symmetric("6d:5a:6d:5a:6d:5b:6d:5a") is False


def test_channels_rings_coalesce_features_flowhash():
    ch = et.parse_channels(VETH_L)
    assert ch is not None and (ch.rx, ch.rx_max, ch.combined, ch.combined_max) == (1, 2, None, None)
    rings = et.parse_rings(RINGS)
    assert rings is not None and (rings.rx, rings.rx_max) == (512, 4096)
    co = et.parse_coalesce(COALESCE)
    assert co is not None and (co.adaptive_rx, co.adaptive_tx, co.rx_usecs) == (True, None, 50)
    active, fixed = et.parse_features(FEATURES)
    assert active["generic-receive-offload"] is True and active["tx-checksum-ipv4"] is False
    assert fixed == ["rx-checksumming", "tx-checksum-ipv4", "large-receive-offload"]
    assert et.parse_flow_hash(FLOW_HASH) == "sdfn"
    assert et.parse_flow_hash("TCP over IPV4 flows use these fields for computing Hash flow key:\nNone\n") == ""
    assert et.parse_flow_hash("Cannot get RX network flow hashing options: Operation not supported") is None
    assert et.parse_speed("\tSpeed: 10000Mb/s\n") == 10000 and et.parse_speed("\tSpeed: Unknown!\n") is None
    assert et.parse_rings("") is None and et.parse_channels("") is None and et.parse_pause("") is None


def test_interrupts_of_a_device(tmp_path):
    lines = parse_interrupts(INTERRUPTS)
    assert [line.number for line in lines] == [24, 37, 38, 39, 50]
    assert lines[2].name == "virtio2-input.0" and "0000:00:03.0" in lines[2].chip
    write(tmp_path, "proc/interrupts", INTERRUPTS)
    for irq, cpus in ((37, "0-1"), (38, "1"), (39, "0"), (50, "2")):
        write(tmp_path, f"proc/irq/{irq}/smp_affinity_list", cpus + "\n")
    irqs = device_irqs(tmp_path, "eth0", "0000:00:03.0", None)
    assert [(i.number, i.queue, i.affinity) for i in irqs] == [(37, False, [0, 1]), (38, True, [1]), (39, True, [0])]
    named = device_irqs(tmp_path, "ens1f0", None, None)
    assert [i.number for i in named] == [50]


def test_boot_parameters_stop_at_init_arguments():
    boot = host.parse_boot("BOOT_IMAGE=/vmlinuz isolcpus=2-11 nohz_full=2-11 intel_iommu=on "
                           "processor.max_cstate=1 quiet -- --rcu_nocbs=5")
    assert boot.isolcpus == "2-11" and boot.nohz_full == "2-11" and boot.intel_iommu == "on"
    assert boot.processor_max_cstate == "1" and boot.rcu_nocbs is None


def test_cpu_numa_and_cgroups_from_a_fake_root(tmp_path):
    write(tmp_path, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU\n"
          "flags\t\t: fpu hypervisor sse4_2\n\nprocessor\t: 1\n")
    write(tmp_path, "sys/devices/system/cpu/online", "0-3\n")
    for cpu in range(4):
        base = f"sys/devices/system/cpu/cpu{cpu}/topology/"
        write(tmp_path, base + "physical_package_id", f"{cpu // 2}\n")
        write(tmp_path, base + "core_id", f"{cpu % 2}\n")
        write(tmp_path, base + "thread_siblings_list", f"{cpu}\n")
    write(tmp_path, "sys/devices/system/node/node0/cpulist", "0-1\n")
    write(tmp_path, "sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:  1048576 kB\n")
    write(tmp_path, "sys/devices/system/node/node1/cpulist", "2-3\n")
    write(tmp_path, "sys/devices/system/node/node1/meminfo", "Node 1 MemTotal:  2097152 kB\n")
    cpu = host.read_cpu(tmp_path)
    assert (cpu.model, cpu.count, cpu.sockets, cpu.cores_per_socket, cpu.threads_per_core) == ("Test CPU", 4, 2, 2, 1)
    assert "hypervisor" in cpu.flags and cpu.topology[3].node == 1
    nodes = host.read_numa(tmp_path)
    assert [(n.id, n.cpus, n.memory_bytes) for n in nodes] == [(0, [0, 1], 2**30), (1, [2, 3], 2 * 2**30)]
    write(tmp_path, "proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t4\t1\n"
          "memory\t4\t10\t1\nnet_cls\t0\t3\t1\n")
    write(tmp_path, "proc/mounts", "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
          "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
          "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n")
    assert host.read_cgroups(tmp_path) == (1, ["cpu", "memory"])
    write(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
    assert host.read_cgroups(tmp_path) == (2, ["cpu", "cpuset", "io", "memory", "pids"])


def test_irqbalance_found_by_comm(tmp_path):
    write(tmp_path, "proc/1/comm", "systemd\n")
    assert host.irqbalance_running(tmp_path) is False
    write(tmp_path, "proc/812/comm", "irqbalance\n")
    assert host.irqbalance_running(tmp_path) is True


@pytest.mark.parametrize("vendor,flags,dmi,expected", [
    ("KVMKVMKVM", ["hypervisor"], None, "kvm"),
    (None, ["hypervisor"], "QEMU Standard PC (Q35 + ICH9, 2009)", "qemu"),
    (None, ["hypervisor"], None, "unknown"),
    (None, [], None, None),
    ("Microsoft Hv", ["hypervisor"], None, "hyperv"),
])
def test_hypervisor_detection(tmp_path, vendor, flags, dmi, expected):
    if dmi:
        write(tmp_path, "sys/class/dmi/id/sys_vendor", dmi + "\n")
    facts = detect(tmp_path, flags, vendor)
    assert facts.name == expected
    assert bool(facts.evidence) == (expected is not None)


def test_build_info_profiling_and_capture_methods():
    s = parse_build_info(BUILD_INFO)
    assert s is not None and s.version == "7.0.10" and s.profiling is True
    assert s.capture_methods == ["pcap", "af-packet", "dpdk"] and s.hyperscan is True
    assert s.simd == ["SSE_4_2", "SSE_4_1"] and s.profiling_locks is False
    assert parse_build_info("not suricata") is None
    off = parse_build_info(BUILD_INFO.replace("PROFILING", "").replace("Profiling enabled:                       yes",
                                                                           "Profiling enabled:                       no"))
    assert off is not None and off.profiling is False


def test_timer_output():
    t = parse_output('{"rounds": 7, "hypervisor_vendor": "KVMKVMKVM", "cpuid_rdtsc_ns": 13117.36, '
                     '"rdtsc_ns": 10.97, "rdtscp_ns": null, "clock_gettime_ns": 23.3}\n')
    assert (t.cpuid_rdtsc_ns, t.rdtsc_ns, t.rdtscp_ns, t.clock_gettime_ns) == (13117.36, 10.97, None, 23.3)
    assert t.rounds == 7 and t.cpuid_hypervisor_vendor == "KVMKVMKVM" and t.error is None
    assert parse_output("garbage").error is not None


def _probe(profiling: bool, tick: float | None) -> HostProbe:
    return HostProbe.model_validate({
        "cpu": {"count": 2}, "hypervisor": "kvm",
        "timers": TimerCosts(cpuid_rdtsc_ns=tick, clock_gettime_ns=20.0).model_dump(),
        "sensor": SensorProbe(version="7.0.10", profiling=profiling).model_dump()})


def test_warning_only_for_profiling_build_with_trapping_tick():
    assert any("profiling compiled in" in w and "7.5 µs" in w for w in warnings(_probe(True, 7500.0)))
    assert warnings(_probe(False, 7500.0)) == []
    assert warnings(_probe(True, 40.0)) == []


def test_collect_over_a_fake_root(tmp_path):
    from idsbench.probe.collect import collect

    write(tmp_path, "proc/cpuinfo", "processor\t: 0\nmodel name\t: Fake\nflags\t\t: fpu\n")
    write(tmp_path, "sys/devices/system/cpu/online", "0\n")
    write(tmp_path, "proc/cmdline", "root=/dev/vda ro isolcpus=0 -- init-arg\n")
    write(tmp_path, "proc/sys/kernel/osrelease", "6.1.0-test\n")
    write(tmp_path, "proc/meminfo", "MemTotal:       2048 kB\n")
    write(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    write(tmp_path, "sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n")
    write(tmp_path, "sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")
    p = collect(sensor=False, timers=False, root=tmp_path)
    assert (p.kernel, p.memory_bytes, p.cgroup_version, p.clocksource) == ("6.1.0-test", 2048 * 1024, 2, "tsc")
    assert p.boot.isolcpus == "0" and p.hypervisor is None and p.thp.enabled == "always"
    assert p.timers.error and p.sensor is None and p.interfaces == {}
    assert p.cpu.count == 1 and p.numa_nodes == []
