"""Per-interface facts: sysfs (MTU, state, speed, NUMA node, queues), ethtool (driver, offloads,
rings, channels, RSS, rx-flow-hash, coalescing, pause) and the device's IRQs.

sysfs shows the network devices of the namespace it was mounted in, so an interface inside another
namespace is probed by running this module there (`ip netns exec NS python -m idsbench.probe.netif
IF...`, which prints the probes as JSON).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import TypeAdapter

from idsbench import proc
from idsbench.errors import EnvironmentMissing, InputError
from idsbench.probe import ethtool_text as et
from idsbench.probe import iommu
from idsbench.probe.interrupts import device_irqs
from idsbench.probe.sysfs import read_int, read_text
from idsbench.probemodel import InterfaceProbe, PassthroughProbe

ETHTOOL_TIMEOUT_S = 20.0
FLOW_TYPES = ("tcp4", "udp4")

# Runs `ethtool ARGS...` and returns its stdout, or None when it failed (unsupported, missing).
EthtoolRunner = Callable[[Sequence[str]], str | None]


def run_ethtool(args: Sequence[str]) -> str | None:
    try:
        done = proc.run(["ethtool", *args], timeout=ETHTOOL_TIMEOUT_S, check=False)
    except EnvironmentMissing:
        return None
    return done.stdout if done.returncode == 0 else None


def _numa_node(device_dir: Path) -> int | None:
    for candidate in (device_dir, device_dir.parent):
        node = read_int(candidate / "numa_node")
        if node is not None:
            return node if node >= 0 else None
    return None


def _sysfs_queues(net_dir: Path) -> int | None:
    queues = net_dir / "queues"
    if not queues.is_dir():
        return None
    return len(list(queues.glob("rx-*"))) or None


def probe_interface(name: str, *, root: Path = Path("/"), ethtool: EthtoolRunner = run_ethtool,
                    netns: str | None = None) -> InterfaceProbe:
    """Probe `name` in the current network namespace (`netns` is only recorded)."""
    net_dir = root / "sys/class/net" / name
    if not net_dir.exists():
        where = f"network namespace {netns}" if netns else "this network namespace"
        raise InputError(f"Interface {name!r} does not exist in {where}.",
                         fix="list the interfaces with `ip link` (or `ip -n NS link`) and pass one of them.")
    device_dir = net_dir / "device"
    has_device = device_dir.exists()
    driver = et.parse_driver(ethtool(["-i", name]) or "")
    speed = read_int(net_dir / "speed")
    if speed is None or speed <= 0:
        speed = et.parse_speed(ethtool([name]) or "")
    channels = et.parse_channels(ethtool(["-l", name]) or "")
    queues = None
    if channels is not None and (channels.combined or channels.rx):
        queues = (channels.combined or 0) + (channels.rx or 0)
    if queues is None:
        queues = _sysfs_queues(net_dir)
    features = et.parse_features(ethtool(["-k", name]) or "")
    flow_hash: dict[str, str] = {}
    for flow in FLOW_TYPES:
        letters = et.parse_flow_hash(ethtool(["-n", name, "rx-flow-hash", flow]) or "")
        if letters is not None:
            flow_hash[flow] = letters
    return InterfaceProbe(
        name=name,
        netns=netns,
        driver=driver.driver,
        driver_version=driver.version,
        firmware=driver.firmware,
        bus_info=driver.bus_info,
        numa_node=_numa_node(device_dir) if has_device else None,
        speed_mbps=speed if speed and speed > 0 else None,
        mtu=read_int(net_dir / "mtu"),
        operstate=read_text(net_dir / "operstate"),
        queues=queues,
        offloads=features[0] or None,
        offloads_fixed=features[1],
        rings=et.parse_rings(ethtool(["-g", name]) or ""),
        channels=channels,
        rss=et.parse_rss(ethtool(["-x", name]) or ""),
        rx_flow_hash=flow_hash or None,
        coalesce=et.parse_coalesce(ethtool(["-c", name]) or ""),
        pause=et.parse_pause(ethtool(["-a", name]) or ""),
        irqs=device_irqs(root, name, driver.bus_info, device_dir if has_device else None),
        passthrough=passthrough(driver.bus_info, root),
    )


def passthrough(bus_info: str | None, root: Path = Path("/")) -> PassthroughProbe | None:
    """The IOMMU group and SR-IOV state of a PCI NIC (None: not a PCI function)."""
    if not bus_info or not iommu.BDF_RE.match(bus_info):
        return None
    dev = iommu.pci_device(bus_info, root)
    if not dev.exists:
        return None
    return PassthroughProbe(iommu_group=dev.iommu_group, group_size=len(dev.group) or None,
                            vfio_viable=None if dev.iommu_group is None else not dev.blockers(),
                            sriov_totalvfs=dev.sriov_totalvfs, sriov_numvfs=dev.sriov_numvfs, physfn=dev.physfn)


_LIST = TypeAdapter(list[InterfaceProbe])


def probe_in_netns(names: Sequence[str], netns: str) -> list[InterfaceProbe]:
    """Probe interfaces inside `netns` by running this module there (root needed)."""
    done = proc.run([sys.executable, "-m", "idsbench.probe.netif", "--netns-label", netns, *names],
                    timeout=ETHTOOL_TIMEOUT_S * 12, netns=netns, check=False)
    if done.returncode != 0:
        raise InputError(f"Probing {', '.join(names)} in network namespace {netns} failed: "
                         f"{(done.stderr or done.stdout).strip()[-600:]}",
                         fix="check the namespace exists (`ip netns list`) and run as root.")
    return _LIST.validate_json(done.stdout)


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    label = None
    if args[:1] == ["--netns-label"]:
        label, args = args[1], args[2:]
    try:
        probes = [probe_interface(n, netns=label) for n in args]
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(json.dumps([p.model_dump(mode="json") for p in probes]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
