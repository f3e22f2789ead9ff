"""Writes the fixture probes of the tuning-plan unit tests (run: python tests/data/probes/generate.py).

Synthetic hosts with Linux's usual CPU numbering (socket-major first threads, then the siblings):
  two_socket_i40e.json   2 sockets x 16 cores x 2 threads, 128 GB, i40e 10G, 16 queues, node 0
  one_socket_ixgbe.json  1 socket x 8 cores x 2 threads, 32 GB, ixgbe 10G, symmetric key already
  nic_on_node1.json      2 sockets x 8 cores x 2 threads, 64 GB, mlx5 25G on node 1
  no_rss_e1000e.json     1 socket x 4 cores, 8 GB, e1000e 1G (no channels, no RSS), one IRQ
  vm_virtio.json         KVM guest, 4 vCPUs, 8 GB, virtio_net with 4 queues (no RSS table)
  veth.json              1 socket x 2 cores, 4 GB, a veth (no channels, no IRQs)
"""

from __future__ import annotations

from pathlib import Path

from idsbench.probemodel import (
    BootParams,
    Channels,
    Coalesce,
    CpuInfo,
    HostProbe,
    InterfaceProbe,
    Irq,
    LogicalCpu,
    NumaNode,
    Pause,
    Rings,
    Rss,
    SensorProbe,
    TimerCosts,
)

GIB = 2**30
HERE = Path(__file__).parent
OFFLOADS = {"rx-checksumming": True, "tx-checksumming": True, "scatter-gather": True,
            "tcp-segmentation-offload": True, "generic-segmentation-offload": True,
            "generic-receive-offload": True, "large-receive-offload": False, "rx-vlan-offload": True,
            "tx-vlan-offload": True, "receive-hashing": True, "ntuple-filters": False}
SENSOR = SensorProbe(version="7.0.10", profiling=False, capture_methods=["pcap", "af-packet"], hyperscan=True)
TIMERS = TimerCosts(cpuid_rdtsc_ns=60.0, rdtsc_ns=7.0, rdtscp_ns=9.0, clock_gettime_ns=18.0, rounds=7)


def topology(sockets: int, cores: int, threads: int) -> tuple[CpuInfo, list[NumaNode]]:
    """CPU ids: thread t of core c on socket s = t*sockets*cores + s*cores + c; one node per socket."""
    cpus: list[LogicalCpu] = []
    for t in range(threads):
        for s in range(sockets):
            for c in range(cores):
                cpu = t * sockets * cores + s * cores + c
                siblings = [k * sockets * cores + s * cores + c for k in range(threads)]
                cpus.append(LogicalCpu(cpu=cpu, socket=s, core=c, node=s, siblings=siblings))
    cpus.sort(key=lambda x: x.cpu)
    nodes = [NumaNode(id=s, cpus=[x.cpu for x in cpus if x.socket == s], memory_bytes=0) for s in range(sockets)]
    info = CpuInfo(model="Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz", vendor="GenuineIntel", count=len(cpus),
                   flags=["constant_tsc", "rdtscp", "sse4_2", "avx2"], sockets=sockets, cores_per_socket=cores,
                   threads_per_core=threads, online=[x.cpu for x in cpus], topology=cpus)
    return info, nodes


def with_memory(nodes: list[NumaNode], total: int) -> list[NumaNode]:
    return [n.model_copy(update={"memory_bytes": total // len(nodes)}) for n in nodes]


def queue_irqs(prefix: str, first: int, count: int, cpus: list[int]) -> list[Irq]:
    return [Irq(number=first + q, name=f"{prefix}-TxRx-{q}", affinity=cpus, queue=True) for q in range(count)]


def host(name: str, sockets: int, cores: int, threads: int, memory: int, iface: InterfaceProbe, *,
         hypervisor: str | None = None, irqbalance: bool = True) -> HostProbe:
    cpu, nodes = topology(sockets, cores, threads)
    return HostProbe(schema=1, created_unix=1_700_000_000.0, hostname=name, cpu=cpu,
                     numa_nodes=with_memory(nodes, memory), memory_bytes=memory, hypervisor=hypervisor,
                     kernel="6.1.0-18-amd64", os="Debian GNU/Linux 12 (bookworm)",
                     cmdline="BOOT_IMAGE=/vmlinuz-6.1.0-18-amd64 root=/dev/sda1 ro quiet",
                     boot=BootParams(), clocksource="tsc", clocksources_available=["tsc", "hpet"],
                     cgroup_version=2, cgroup_controllers=["cpu", "cpuset", "memory", "pids"],
                     irqbalance=irqbalance, timers=TIMERS, interfaces={iface.name: iface}, sensor=SENSOR)


def key(octets: int, symmetric: bool) -> str:
    if symmetric:
        return ":".join("6d" if i % 2 == 0 else "5a" for i in range(octets))
    return ":".join(f"{(i * 37 + 11) % 256:02x}" for i in range(octets))


def main() -> None:
    all_cpus_64 = list(range(64))
    i40e = InterfaceProbe(
        name="ens1f0", driver="i40e", driver_version="2.20.12", firmware="8.70 0x8000c40f 1.3179.0",
        bus_info="0000:3b:00.0", numa_node=0, speed_mbps=10000, mtu=1500, operstate="up", queues=16,
        offloads=OFFLOADS, rings=Rings(rx=512, tx=512, rx_max=4096, tx_max=4096),
        channels=Channels(combined=16, combined_max=64, other=1, other_max=1),
        rss=Rss(hash_key=key(52, False), indirection=[i % 16 for i in range(512)], hash_function="toeplitz",
                symmetric=False),
        rx_flow_hash={"tcp4": "sdfn", "udp4": "sd"}, coalesce=Coalesce(adaptive_rx=True, rx_usecs=50),
        pause=Pause(autoneg=False, rx=True, tx=True),
        irqs=[Irq(number=99, name="i40e-0000:3b:00.0:misc", affinity=all_cpus_64, queue=False)]
        + queue_irqs("i40e-ens1f0", 100, 16, all_cpus_64))
    ixgbe = InterfaceProbe(
        name="eth1", driver="ixgbe", driver_version="5.1.0-k", firmware="0x800004f8", bus_info="0000:01:00.0",
        numa_node=0, speed_mbps=10000, mtu=1500, operstate="up", queues=8, offloads=OFFLOADS,
        rings=Rings(rx=4096, tx=4096, rx_max=4096, tx_max=4096), channels=Channels(combined=8, combined_max=63),
        rss=Rss(hash_key=key(40, True), indirection=[i % 8 for i in range(128)], hash_function="toeplitz",
                symmetric=True),
        rx_flow_hash={"tcp4": "sdfn", "udp4": "sdfn"}, coalesce=Coalesce(adaptive_rx=False, rx_usecs=125),
        pause=Pause(autoneg=False, rx=False, tx=False), irqs=queue_irqs("eth1", 40, 8, list(range(16))))
    mlx5 = InterfaceProbe(
        name="ens2f0", driver="mlx5_core", driver_version="6.1.0", firmware="16.35.2000", bus_info="0000:af:00.0",
        numa_node=1, speed_mbps=25000, mtu=1500, operstate="up", queues=8, offloads=OFFLOADS,
        rings=Rings(rx=1024, tx=1024, rx_max=8192, tx_max=8192), channels=Channels(combined=8, combined_max=32),
        rss=Rss(hash_key=key(40, False), indirection=[i % 8 for i in range(128)], hash_function="toeplitz",
                symmetric=False),
        rx_flow_hash={"tcp4": "sdfn", "udp4": "sdfn"}, coalesce=Coalesce(adaptive_rx=True, rx_usecs=8),
        pause=Pause(autoneg=False, rx=True, tx=True),
        irqs=[Irq(number=200 + q, name=f"mlx5_comp{q}@pci:0000:af:00.0", affinity=list(range(32)), queue=True)
              for q in range(8)])
    e1000e = InterfaceProbe(
        name="eno1", driver="e1000e", driver_version="6.1.0", firmware="0.13-4", bus_info="0000:00:1f.6",
        numa_node=None, speed_mbps=1000, mtu=1500, operstate="up", queues=1, offloads=OFFLOADS,
        rings=Rings(rx=256, tx=256, rx_max=4096, tx_max=4096), channels=None, rss=None, rx_flow_hash=None,
        coalesce=Coalesce(adaptive_rx=None, rx_usecs=3), pause=Pause(autoneg=True, rx=True, tx=True),
        irqs=[Irq(number=30, name="eno1", affinity=[0, 1, 2, 3], queue=False)])
    virtio = InterfaceProbe(
        name="ens3", driver="virtio_net", driver_version="1.0.0", bus_info="0000:00:03.0", numa_node=None,
        speed_mbps=None, mtu=1500, operstate="up", queues=4, offloads=OFFLOADS,
        rings=Rings(rx=256, tx=256, rx_max=256, tx_max=256), channels=Channels(combined=4, combined_max=4),
        rss=None, rx_flow_hash={"tcp4": "", "udp4": ""}, coalesce=Coalesce(adaptive_rx=False, rx_usecs=0),
        irqs=[Irq(number=25 + q, name=f"virtio2-input.{q}", affinity=[q], queue=True) for q in range(4)])
    veth = InterfaceProbe(name="ibrx0", netns="ibX-sen", driver="veth", driver_version="1.0", speed_mbps=10000,
                          mtu=1500, operstate="up", queues=1,
                          offloads={**OFFLOADS, "receive-hashing": False}, channels=None)
    fixtures = {
        "two_socket_i40e": host("dual", 2, 16, 2, 128 * GIB, i40e),
        "one_socket_ixgbe": host("single", 1, 8, 2, 32 * GIB, ixgbe, irqbalance=False),
        "nic_on_node1": host("node1nic", 2, 8, 2, 64 * GIB, mlx5),
        "no_rss_e1000e": host("small", 1, 4, 1, 8 * GIB, e1000e),
        "vm_virtio": host("guest", 1, 4, 1, 8 * GIB, virtio, hypervisor="kvm", irqbalance=False)
        .model_copy(update={"sensor": SENSOR.model_copy(update={"profiling": True}),
                            "timers": TIMERS.model_copy(update={"cpuid_rdtsc_ns": 7400.0})}),
        "veth": host("lab", 1, 2, 1, 4 * GIB, veth, irqbalance=False),
    }
    for name, probe in fixtures.items():
        (HERE / f"{name}.json").write_text(probe.to_json() + "\n")


if __name__ == "__main__":
    main()
