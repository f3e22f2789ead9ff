"""Packet sockets from /proc: the text recorded while Snort 3 started two packet threads."""

from __future__ import annotations

import os
from pathlib import Path

from idsbench.sensors.sockets import (
    ETH_P_ALL,
    PacketSocket,
    capturing_sockets,
    interface_index,
    parse_proc_net_packet,
)

HEADER = "sk               RefCnt Type Proto  Iface R Rmem   User   Inode\n"
# libdaq's afpacket: first bound with protocol 0 (receives nothing), then ETH_P_ALL at DAQ start
INSTANTIATED = HEADER + "00000000ff0dcefa 2      3    0000   2     0 0      0      197476\n"
STARTED = HEADER + ("00000000ff0dcefa 3      3    0003   2     1 0      0      197476\n"
                    "000000006fd10e19 3      3    0003   2     1 0      0      197480\n")
DEV_MCAST = ("2    ibsm1           1     0     333300000001\n"
             "2    ibsm1           1     0     01005e000001\n")


def test_parse() -> None:
    assert parse_proc_net_packet(INSTANTIATED) == [PacketSocket(197476, 3, 0, 2, False)]
    started = parse_proc_net_packet(STARTED)
    assert [s.capturing for s in started] == [True, True] and started[0].protocol == ETH_P_ALL
    assert parse_proc_net_packet(HEADER + "short line\n") == []


def _fake_proc(root: Path, pid: int, table: str, inodes: list[int]) -> None:
    (root / str(pid) / "net").mkdir(parents=True)
    (root / str(pid) / "net" / "packet").write_text(table)
    (root / str(pid) / "net" / "dev_mcast").write_text(DEV_MCAST)
    fd = root / str(pid) / "fd"
    fd.mkdir()
    os.symlink("/dev/null", fd / "0")
    for i, inode in enumerate(inodes, start=3):
        os.symlink(f"socket:[{inode}]", fd / str(i))


def test_counts_only_the_processs_capturing_sockets(tmp_path: Path) -> None:
    _fake_proc(tmp_path, 10, STARTED, [197476, 197480])
    _fake_proc(tmp_path, 11, STARTED, [197476])  # holds one of them
    _fake_proc(tmp_path, 12, INSTANTIATED, [197476])
    assert capturing_sockets(10, 2, tmp_path) == 2
    assert capturing_sockets(11, 2, tmp_path) == 1
    assert capturing_sockets(12, 2, tmp_path) == 0
    assert capturing_sockets(10, 3, tmp_path) == 0  # another interface
    assert capturing_sockets(99, 2, tmp_path) == 0  # gone


def test_interface_index(tmp_path: Path) -> None:
    _fake_proc(tmp_path, 10, STARTED, [])
    assert interface_index(10, "ibsm1", tmp_path) == 2
    assert interface_index(10, "other", tmp_path) is None
    assert interface_index(99, "ibsm1", tmp_path) is None
