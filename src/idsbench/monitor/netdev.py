"""Interface counters inside a network namespace, read through /proc/<pid>/net/dev of a process
living there. The open file keeps referring to that namespace even after the process exits."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from idsbench.monitor.base import ProcFile, Value

FIELDS = ("rx_pkts", "rx_bytes", "rx_dropped", "tx_pkts", "tx_bytes", "tx_dropped")


class IfCounters(NamedTuple):
    rx_pkts: int
    rx_bytes: int
    rx_dropped: int
    tx_pkts: int
    tx_bytes: int
    tx_dropped: int


def parse_net_dev(text: str) -> dict[str, IfCounters]:
    """Interface -> counters, from the two-header-line /proc/net/dev format."""
    out: dict[str, IfCounters] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")  # long counters may touch the colon: "eth0:123"
        f = rest.split()
        if not sep or len(f) < 16:
            continue
        # receive: bytes packets errs drop ...; transmit starts at field 8
        out[name.strip()] = IfCounters(int(f[1]), int(f[0]), int(f[3]), int(f[9]), int(f[8]), int(f[11]))
    return out


class NetDevSource:
    """<label>_rx_pkts … <label>_tx_dropped, cumulative since start, for interface `ifname`
    (or the sum of every interface but lo) in the namespace of process `pid`."""

    def __init__(self, label: str, pid: int, ifname: str | None = None, *, proc: Path | str = "/proc"):
        self.label = label
        self.ifname = ifname
        self._file = ProcFile(Path(proc) / str(pid) / "net" / "dev")
        self._base: tuple[int, ...] | None = None

    def columns(self) -> list[str]:
        return [f"{self.label}_{f}" for f in FIELDS]

    def _read(self) -> tuple[int, ...] | None:
        table = parse_net_dev(self._file.read())
        if self.ifname is not None:
            c = table.get(self.ifname)
            return tuple(c) if c is not None else None
        rows = [c for name, c in table.items() if name != "lo"]
        return tuple(sum(col) for col in zip(*rows)) if rows else tuple([0] * len(FIELDS))

    def start(self) -> None:
        self._base = self._read()  # opens the file now, while the process surely lives

    def sample(self) -> dict[str, Value]:
        now = self._read()
        if now is None:  # interface not there (yet/any more): leave the cells empty
            return {}
        if self._base is None:  # appeared after start: count from its first sighting
            self._base = now
        return {col: v - b for col, v, b in zip(self.columns(), now, self._base)}

    def stop(self) -> None:
        self._file.close()
