"""The macvtap setups' broadcast queue for real (wire/macvtap.py): a passthru macvtap's lower device hands
broadcast and multicast frames to a work item on the receiving CPU — the sender's — through a queue it counts
as its own rx_dropped when full. A sender at SCHED_FIFO (as the native replayer runs) keeps that work item off
its CPU, so with the kernel's default queue (1,000) a burst of broadcasts is mostly dropped before the sensor:
the cause of the container-vtap duet samples that were not exact, with identical rx_dropped on both sides'
lower veths (docs/duet.md). The macvtap `macvtap.create` makes holds the burst: every frame reaches it.

Needs root, ip, chrt and taskset; under CI=true anything missing fails. Takes ~2 s."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

import pytest

from idsbench import proc
from idsbench.teardown import TeardownStack
from idsbench.wire import macvtap
from idsbench.wire.netns import add_netns, veth_wire

from .conftest import TEST_PREFIX, unavailable

pytestmark = pytest.mark.integration

BURST = 5000  # broadcasts back to back: five times the kernel's default queue
SEND = f"""import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
frame = b"\\xff" * 6 + b"\\x02\\x00\\x00\\x00\\x00\\x01" + b"\\x08\\x06" + bytes(46)
for _ in range({BURST}):
    s.send(frame)
"""


def _counter(ns: str, ifname: str, name: str) -> int:
    return int(proc.run(["cat", f"/sys/class/net/{ifname}/statistics/{name}"], netns=ns).stdout)


def _burst(td: TeardownStack, *, ours: bool) -> tuple[int, int]:
    """A wire with a passthru macvtap on its sensor end (ours, or one with the kernel's default queue), a burst
    of broadcasts from a SCHED_FIFO sender pinned to one CPU; returns (lower rx_dropped, macvtap rx_packets)."""
    ident = secrets.token_hex(3)
    snd, sen = f"{TEST_PREFIX}{ident}-snd", f"{TEST_PREFIX}{ident}-sen"
    add_netns(td, snd)
    add_netns(td, sen)
    veth_wire(td, snd, "ibs0", sen, "ibr0", 1500)
    if ours:
        tap = macvtap.create(td, lower="ibr0", netns=sen, name="ibvt0", mtu=1500)
    else:
        proc.run(["ip", "-n", sen, "link", "add", "link", "ibr0", "name", "ibvt0", "type", "macvtap", "mode",
                  "passthru"])
        tap = macvtap.Macvtap("ibvt0", sen, 1500)
    macvtap.bring_up(tap)
    cpu = min(os.sched_getaffinity(0))
    proc.run(["chrt", "-f", "10", "taskset", "-c", str(cpu), sys.executable, "-c", SEND, "ibs0"], netns=snd)
    return _counter(sen, "ibr0", "rx_dropped"), _counter(sen, "ibvt0", "rx_packets")


def test_a_realtime_senders_broadcast_burst_reaches_the_macvtap_whole(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        unavailable("needs root (namespaces, macvtap, SCHED_FIFO)")
    missing = [p for p in ("ip", "chrt", "taskset") if shutil.which(p) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    with TeardownStack(state_dir=tmp_path) as td:
        default_dropped, default_rx = _burst(td, ours=False)
        dropped, rx = _burst(td, ours=True)
    print(f"{BURST} broadcasts from a SCHED_FIFO sender: default queue {default_dropped} dropped at the lower veth, "
          f"{default_rx} reached the macvtap; ours ({macvtap.BC_QUEUE_LEN}) {dropped} dropped, {rx} reached it")
    assert default_dropped > 0 and default_dropped + default_rx == BURST, (default_dropped, default_rx)
    assert dropped == 0 and rx == BURST, (dropped, rx)
    assert not list(tmp_path.glob("*.json")), "resources left in the state file"
