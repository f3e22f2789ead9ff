"""Command lines and readiness of the nodetect engine's readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.errors import SpecError
from idsbench.sensors.nodetect.config import RingOptions, ibcapture_argv, ready_interface, tcpdump_argv


def test_ibcapture_argv_defaults_and_options() -> None:
    argv = ibcapture_argv(Path("/c/ibcapture-x"), "ibrx0", Path("/run/s/stats.json"), interval_s=1)
    assert argv == ["/c/ibcapture-x", "-i", "ibrx0", "--stats", "/run/s/stats.json", "--interval", "1",
                    "--threads", "1", "--block-size", "1048576", "--block-count", "64",
                    "--block-timeout-ms", "10"]
    argv = ibcapture_argv(Path("b"), "e", Path("s"), interval_s=0.5, threads=2,
                          ring=RingOptions(block_size=8192, block_count=4, block_timeout_ms=5),
                          fanout_id=77, promisc=False)
    assert argv[argv.index("--interval") + 1] == "0.5"
    assert argv[argv.index("--fanout") + 1] == "77" and argv[-1] == "--no-promisc"
    assert RingOptions(block_size=8192, block_count=4).bytes_per_thread == 32768


@pytest.mark.parametrize("kwargs", [{"block_size": 5000}, {"block_size": 0}, {"block_count": 0},
                                    {"block_timeout_ms": 0}])
def test_ring_options_are_checked(kwargs: dict[str, int]) -> None:
    with pytest.raises(SpecError):
        RingOptions(**kwargs)


def test_ibcapture_argv_rejects_bad_values() -> None:
    with pytest.raises(SpecError):
        ibcapture_argv(Path("b"), "e", Path("s"), interval_s=1, threads=0)
    with pytest.raises(SpecError):
        ibcapture_argv(Path("b"), "e", Path("s"), interval_s=1, fanout_id=70000)
    with pytest.raises(SpecError):
        ibcapture_argv(Path("b"), "e", Path("s"), interval_s=-1)


def test_tcpdump_argv() -> None:
    assert tcpdump_argv("ibrx0") == ["tcpdump", "-i", "ibrx0", "-n", "-w", "/dev/null"]
    assert tcpdump_argv("ibrx0", buffer_kib=64)[-2:] == ["-B", "64"]
    with pytest.raises(SpecError):
        tcpdump_argv("ibrx0", buffer_kib=0)


def test_readiness_lines() -> None:
    assert ready_interface("afpacket", "ibcapture: capturing on ibrx0 (threads 1, ring 64 x 1048576 bytes, "
                                       "fanout -1)\n") == "ibrx0"
    assert ready_interface("afpacket", "ibcapture: error: bind to ibrx0: No such device\n") is None
    assert ready_interface("libpcap", "tcpdump: listening on ibrx0, link-type EN10MB (Ethernet), "
                                      "snapshot length 262144 bytes\n") == "ibrx0"
    assert ready_interface("libpcap", "") is None
    with pytest.raises(SpecError, match="unknown capture method"):
        ready_interface("dpdk", "")
