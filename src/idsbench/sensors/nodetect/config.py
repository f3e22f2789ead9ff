"""Command lines and readiness of the nodetect engine's readers (`engine = "nodetect"`).

- `sensor.capture = "afpacket"`: ibcapture (src/idsbench/native/src/ibcapture.c), a TPACKET_V3 ring reader
  written for this: it does nothing but read the rings, so its ceiling is the capture path's own.
  (Suricata with detection and app-layer off would still decode, track flows and run its packet
  pipeline per packet; that is a "minimal IDS", not a capture baseline.) Stats: one JSON line per
  interval to a file, a final line after draining at SIGTERM/SIGINT.
- `sensor.capture = "libpcap"`: tcpdump writing to /dev/null. Without --immediate-mode, so libpcap uses a
  TPACKET_V3 ring with block delivery (1 s buffer timeout) like the IDS engines' AF_PACKET capture;
  immediate mode would switch libpcap to a per-packet TPACKET_V2 ring, a different and slower method.
  Stats: SIGUSR1 makes tcpdump print them (one line); it prints them again at exit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from idsbench.errors import SpecError
from idsbench.sensors.nodetect.capture import AFPACKET, CAPTURE, LIBPCAP

PAGE_SIZE = 4096
TCPDUMP_BUFFER_TIMEOUT_S = 1.0  # libpcap's timeout as tcpdump sets it: stop no earlier after the traffic

_READY = {
    AFPACKET: re.compile(r"^ibcapture: capturing on (?P<interface>\S+)", re.MULTILINE),
    LIBPCAP: re.compile(r"^tcpdump: listening on (?P<interface>[^,\s]+),", re.MULTILINE),
}
METHODS = CAPTURE.names()


@dataclass(frozen=True)
class RingOptions:
    """ibcapture's ring per thread: block_count blocks of block_size bytes; a block is handed over
    when full or after block_timeout_ms."""

    block_size: int = 1 << 20
    block_count: int = 64
    block_timeout_ms: int = 10

    def __post_init__(self) -> None:
        if self.block_size < PAGE_SIZE or self.block_size % PAGE_SIZE:
            raise SpecError(f"capture ring block_size {self.block_size} is not a multiple of {PAGE_SIZE}.",
                            fix="use a power of two such as 1048576 (1 MiB).")
        if not 1 <= self.block_count <= 1 << 20:
            raise SpecError(f"capture ring block_count {self.block_count} is out of range.",
                            fix="use 1..1048576 blocks (64 by default).")
        if not 1 <= self.block_timeout_ms <= 60_000:
            raise SpecError(f"capture ring block_timeout_ms {self.block_timeout_ms} is out of range.",
                            fix="use 1..60000 ms (10 by default).")

    @property
    def bytes_per_thread(self) -> int:
        return self.block_size * self.block_count


def ibcapture_argv(binary: Path, interface: str, stats_path: Path, *, interval_s: float, threads: int = 1,
                   ring: RingOptions = RingOptions(), fanout_id: int | None = None,
                   promisc: bool = True) -> list[str]:
    """Command line of ibcapture on `interface`, writing stats to `stats_path` every `interval_s`."""
    if not 1 <= threads <= 64:
        raise SpecError(f"capture threads {threads} is out of range.", fix="use 1..64 threads.")
    if interval_s < 0:
        raise SpecError(f"stats interval {interval_s} s is negative.", fix="use 0 (final only) or more.")
    argv = [str(binary), "-i", interface, "--stats", str(stats_path), "--interval", f"{interval_s:g}",
            "--threads", str(threads), "--block-size", str(ring.block_size),
            "--block-count", str(ring.block_count), "--block-timeout-ms", str(ring.block_timeout_ms)]
    if fanout_id is not None:
        if not 0 <= fanout_id <= 0xFFFF:
            raise SpecError(f"fanout id {fanout_id} is out of range.", fix="use 0..65535.")
        argv += ["--fanout", str(fanout_id)]
    if not promisc:
        argv.append("--no-promisc")
    return argv


def tcpdump_argv(interface: str, *, buffer_kib: int | None = None, binary: str = "tcpdump") -> list[str]:
    """tcpdump reading `interface` into /dev/null (no name resolution); `buffer_kib` sets libpcap's
    ring (-B, KiB; libpcap's default is 2 MiB)."""
    argv = [binary, "-i", interface, "-n", "-w", "/dev/null"]
    if buffer_kib is not None:
        if buffer_kib < 1:
            raise SpecError(f"tcpdump buffer {buffer_kib} KiB is too small.", fix="use 1 KiB or more.")
        argv += ["-B", str(buffer_kib)]
    return argv


_THREADS = re.compile(r"ibcapture: capturing on \S+ \(threads (?P<threads>\d+),")


def capture_threads(method: str, stderr_text: str) -> int | None:
    """The reader threads the engine started: ibcapture's ready line says; tcpdump reads with one."""
    if method != AFPACKET:
        return 1 if ready_interface(method, stderr_text) else None
    found = _THREADS.search(stderr_text)
    return int(found.group("threads")) if found else None


def ready_interface(method: str, stderr_text: str) -> str | None:
    """The interface the engine reports it is capturing on, once it is ready; else None."""
    try:
        pattern = _READY[method]
    except KeyError:
        raise SpecError(f"unknown capture method {method!r}.", fix=f"use one of {', '.join(METHODS)}.") from None
    found = pattern.search(stderr_text)
    return found.group("interface") if found else None
