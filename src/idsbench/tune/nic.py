"""How the capture NIC spreads packets: RSS queues and the af-packet cluster type that matches."""

from __future__ import annotations

from dataclasses import dataclass

from idsbench.probemodel import InterfaceProbe
from idsbench.tune.model import DOCS, SEPTUN, Knob

SYMMETRIC_OCTETS = ("6D", "5A")
DEFAULT_KEY_BYTES = 40  # the Toeplitz key length of most NICs (i40e: 52) when the probe has none


@dataclass(frozen=True)
class Spread:
    cluster_type: str
    threads: int  # af-packet threads
    queues: int | None  # RSS queues to set (None: leave the NIC's channels alone)
    set_key: bool  # program the symmetric Toeplitz key
    knobs: tuple[Knob, ...]
    warnings: tuple[str, ...]


def queue_max(iface: InterfaceProbe) -> int | None:
    c = iface.channels
    if c is None:
        return None
    return c.combined_max or c.rx_max or None


def rss_capable(iface: InterfaceProbe) -> bool:
    """More than one RX queue possible and an RSS indirection table ethtool can read."""
    qmax = queue_max(iface)
    return bool(qmax and qmax > 1 and iface.rss is not None and iface.rss.indirection)


def symmetric_key(iface: InterfaceProbe) -> str:
    key = iface.rss.hash_key if iface.rss is not None else None
    length = len(key.split(":")) if key else DEFAULT_KEY_BYTES
    return ":".join(SYMMETRIC_OCTETS[i % 2] for i in range(length))


def choose_spread(iface: InterfaceProbe | None, workers: int) -> Spread:
    if iface is None:
        return Spread("cluster_flow", workers, None, False, (
            Knob(name="af-packet.cluster-type", value="cluster_flow",
                 why=f"no capture interface named: the kernel hashes flows to threads ({DOCS}: packet capture)."),), ())
    qmax = queue_max(iface)
    if rss_capable(iface) and iface.rss is not None and iface.rss.hash_key:
        queues = min(workers, qmax or workers)
        warnings: tuple[str, ...] = ()
        if queues < workers:
            warnings = ((f"{iface.name} has at most {qmax} RX queues: {queues} af-packet threads on "
                         f"{queues} of the {workers} worker CPUs; the others stay idle. Fix: fewer --cpus."),)
        return Spread("cluster_qm", queues, queues, True, (
            Knob(name="af-packet.cluster-type", value="cluster_qm",
                 why=f"symmetric RSS puts both directions of a flow in one queue; cluster_qm binds thread i to "
                 f"queue i, so no second hash and no cross-CPU hand-off ({DOCS}: packet capture/RSS; {SEPTUN})."),
            Knob(name="af-packet.threads", value=str(queues),
                 why=f"one thread per RSS queue, as many as worker CPUs (min of {workers} workers, "
                 f"{qmax} queues) ({SEPTUN})."),
            Knob(name="nic.rss-key", value=f"{SYMMETRIC_OCTETS[0]}:{SYMMETRIC_OCTETS[1]} repeated",
                 why="a Toeplitz key with a 16-bit period hashes (src,dst) and (dst,src) alike: symmetric RSS "
                 f"(Woo & Park; {DOCS}: high performance configuration)."),
        ), warnings)
    if rss_capable(iface):
        return Spread("cluster_flow", workers, 1, False, (
            Knob(name="af-packet.cluster-type", value="cluster_flow",
                 why=f"{iface.name}'s RSS key cannot be read, so RSS cannot be made symmetric: one queue, and "
                 f"the kernel hashes flows to threads ({DOCS}: high performance configuration)."),
            Knob(name="af-packet.threads", value=str(workers), why="one thread per worker CPU."),
        ), (f"{iface.name}: RSS key unreadable: a single RX queue (ethtool -L ... 1) keeps flows whole.",))
    return Spread("cluster_flow", workers, None, False, (
        Knob(name="af-packet.cluster-type", value="cluster_flow",
             why=f"{iface.name} has no RSS ({qmax or 'no'} queue(s) ethtool can change): the kernel's "
             f"symmetric flow hash spreads packets over the threads ({DOCS}: packet capture)."),
        Knob(name="af-packet.threads", value=str(workers), why="one thread per worker CPU."),
    ), ())
