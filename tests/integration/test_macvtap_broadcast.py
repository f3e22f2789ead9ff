"""The macvtap setups' broadcast queue for real (wire/macvtap.py): a passthru macvtap's lower device hands
broadcast and multicast frames to a work item on the receiving CPU — the sender's — through a queue it counts
as its own rx_dropped when full. A sender at SCHED_FIFO (as the native replayer runs) keeps that work item off
its CPU, so with the kernel's default queue (1,000) a burst of broadcasts is mostly dropped before the sensor:
the cause of the container-vtap duet samples that were not exact, with identical rx_dropped on both sides'
lower veths (docs/duet.md). The macvtap `macvtap.create` makes has a queue longer than the burst (the kernel
says so) and holds it: every frame reaches it.

Needs root, ip, chrt and taskset; under CI=true anything missing fails. Takes ~2 s."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import time
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


def _settled(ns: str) -> tuple[int, int]:
    """(lower rx_dropped, macvtap rx_packets) once the burst is all counted: the queued frames reach the
    macvtap after the sender exits, when the work item gets the CPU, so a read right then can come early.
    Read until every frame is counted one way or the other, or nothing changed for 2 s (10 s at most)."""
    deadline = time.monotonic() + 10
    last, still_since = None, time.monotonic()
    while True:
        now = (_counter(ns, "ibr0", "rx_dropped"), _counter(ns, "ibvt0", "rx_packets"))
        if sum(now) >= BURST or time.monotonic() > deadline:
            return now
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since > 2:
            return now
        time.sleep(0.02)


def _burst(td: TeardownStack, *, ours: bool) -> tuple[int, int, int]:
    """A wire with a passthru macvtap on its sensor end (ours, or one with the kernel's default queue), a burst
    of broadcasts from a SCHED_FIFO sender pinned to one CPU; returns (the queue length the kernel uses for
    the lower device, its rx_dropped, the macvtap's rx_packets)."""
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
    info = json.loads(proc.run(["ip", "-n", sen, "-d", "-j", "link", "show", "ibvt0"]).stdout)[0]["linkinfo"]
    cpu = min(os.sched_getaffinity(0))
    proc.run(["chrt", "-f", "10", "taskset", "-c", str(cpu), sys.executable, "-c", SEND, "ibs0"], netns=snd)
    return (info["info_data"]["usedbcqueuelen"], *_settled(sen))


def test_a_realtime_senders_broadcast_burst_reaches_the_macvtap_whole(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        unavailable("needs root (namespaces, macvtap, SCHED_FIFO)")
    missing = [p for p in ("ip", "chrt", "taskset") if shutil.which(p) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    with TeardownStack(state_dir=tmp_path) as td:
        default_len, default_dropped, default_rx = _burst(td, ours=False)
        queue_len, dropped, rx = _burst(td, ours=True)
    print(f"{BURST} broadcasts from a SCHED_FIFO sender: default queue ({default_len}) {default_dropped} dropped at "
          f"the lower veth, {default_rx} reached the macvtap; ours ({queue_len}) {dropped} dropped, {rx} reached it")
    # The default queue's overflow is printed, not asserted: whether the kernel's work item gets the sender's
    # CPU during the burst is the scheduler's (alone here: 4,000 of 5,000 dropped; in CI #5's suite: none).
    assert default_len < BURST <= queue_len == macvtap.BC_QUEUE_LEN, (default_len, queue_len)
    assert default_dropped + default_rx == BURST, (default_dropped, default_rx)
    assert dropped == 0 and rx == BURST, (dropped, rx)
    assert not list(tmp_path.glob("*.json")), "resources left in the state file"
