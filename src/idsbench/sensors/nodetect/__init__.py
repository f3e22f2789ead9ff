"""The nodetect engine (`engine = "nodetect"`; "capture" before): the capture path's ceiling, without
detection — it reads the wire and counts, and inspects nothing.

`sensor.capture` picks the reader (its methods: nodetect/capture.py; docs/snort.md, "The capture-only engine"):
- "afpacket": ibcapture (native/src/ibcapture.c), TPACKET_V3 rings in a fanout group, one thread per
  CPU the sensor is given like Suricata's workers (`SensorOptions.threads`), counting packets/bytes/drops — the ring reader alone;
- "libpcap": tcpdump writing to /dev/null (libpcap's own TPACKET_V3 ring and drop counters), under
  ibtick (native/src/ibtick.c), which sends it SIGUSR1 every stats interval for its counters.
Both programs are static binaries from the idsbench cache, shared read-only with containers and VMs
at the same path (tcpdump comes from the image: `image_packages`). No rules: `sensor.rules` is ignored.

Settings (`[sensor.set.nodetect]`): threads, block_size, block_count, block_timeout_ms (afpacket
ring per thread), buffer_kib (libpcap's ring, tcpdump -B).
"""

from __future__ import annotations

import os
import re
import shutil
import zlib
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path

from idsbench import native, proc
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.sensors.base import SensorOptions, requirement_met
from idsbench.sensors.nodetect.capture import AFPACKET, CAPTURE, LIBPCAP
from idsbench.sensors.nodetect.config import METHODS, RingOptions, ibcapture_argv, tcpdump_argv
from idsbench.sensors.nodetect.run import NoDetectRun
from idsbench.store.layout import CAPTURE_STATS_FILE, CONSOLE_FILE

SETTINGS = {"threads", "block_size", "block_count", "block_timeout_ms", "buffer_kib"}
L2_SLACK = 14 + 8 + 64  # Ethernet header, two VLAN tags, the TPACKET_V3 headers: what a block must hold


def _int_setting(values: Mapping[str, str], key: str, default: int | None) -> int | None:
    if key not in values:
        return default
    text = values[key]
    if not text.isdigit():
        raise SpecError(f"nodetect setting {key} = {text!r} is not a whole number.",
                        fix=f"give [sensor.set.nodetect] {key} as an integer.")
    return int(text)


def nodetect_settings(options: SensorOptions) -> dict[str, int | None]:
    """The overrides that configure the nodetect engine; SpecError naming an unknown key."""
    values = options.override_map
    unknown = sorted(set(values) - SETTINGS)
    if unknown:
        raise SpecError(f"nodetect engine settings {', '.join(unknown)} are not known.",
                        fix=f"use {', '.join(sorted(SETTINGS))} under [sensor.set.nodetect].")
    ring = RingOptions()
    return {"threads": _int_setting(values, "threads", options.threads or os.cpu_count() or 1),
            "block_size": _int_setting(values, "block_size", ring.block_size),
            "block_count": _int_setting(values, "block_count", ring.block_count),
            "block_timeout_ms": _int_setting(values, "block_timeout_ms", ring.block_timeout_ms),
            "buffer_kib": _int_setting(values, "buffer_kib", None)}


def fanout_id_for(run_dir: Path) -> int:
    """A PACKET_FANOUT group id of this run (distinct runs in one namespace do not share a group)."""
    return zlib.crc32(str(run_dir).encode()) & 0xFFFF


class NoDetect:
    name = "nodetect"
    capture_methods = CAPTURE

    def __init__(self, tcpdump: str = "tcpdump"):
        self.tcpdump = tcpdump

    # --- programs -----------------------------------------------------------------------------
    def _program(self, name: str) -> Path:
        return native.program(name)

    def available(self) -> bool:
        return requirement_met(self.require)

    def require(self) -> None:
        for name in ("ibcapture", "ibtick"):
            self._program(name)  # EnvironmentMissing naming the compiler problem

    @cached_property
    def _tcpdump_version(self) -> tuple[str, str]:
        if shutil.which(self.tcpdump) is None:
            return ("", "")
        text = proc.run([self.tcpdump, "--version"], timeout=30, check=False).stdout
        tcpdump = re.search(r"tcpdump version (\S+)", text)
        libpcap = re.search(r"libpcap version (\S+)", text)
        return (tcpdump.group(1) if tcpdump else "", libpcap.group(1) if libpcap else "")

    def version(self) -> str:
        digest = self._program("ibcapture").name.rsplit("-", 1)[-1][:8]
        tcpdump, libpcap = self._tcpdump_version
        return f"ibcapture-{digest}" + (f"; tcpdump {tcpdump} (libpcap {libpcap})" if tcpdump else "")

    def build_info(self) -> dict[str, object]:
        tcpdump, libpcap = self._tcpdump_version
        return {"version": self.version(), "ibcapture": str(self._program("ibcapture")),
                "ibtick": str(self._program("ibtick")), "tcpdump": tcpdump, "libpcap": libpcap,
                "auto_threads": os.cpu_count() or 1, "methods": list(METHODS)}

    def image_packages(self) -> tuple[str, ...]:
        return ("tcpdump",)  # libpcap's method; ibcapture and ibtick are static and shared

    def host_paths(self) -> tuple[Path, ...]:
        return (self._program("ibcapture"), self._program("ibtick"))

    # --- rules and config ---------------------------------------------------------------------
    def resolve_rules(self, refs: Sequence[str]) -> list[Path]:
        return []  # no detection: no rules

    def offline_alerts(self, pcap: Path, options: SensorOptions, workdir: Path) -> dict[int, int] | None:
        return None  # no detection, so no ground truth

    def _method(self, options: SensorOptions) -> str:
        """The reader: `sensor.capture`, else afpacket."""
        method = CAPTURE.method(options.capture).name  # SpecError naming the readers
        if options.capture_options:
            raise SpecError("sensor.capture_options: the nodetect engine takes none.",
                            fix="set its ring with [sensor.set.nodetect] (block_size, block_count, buffer_kib).")
        return method

    def check_capture(self, method: str | None) -> None:
        """A reader of its own (afpacket, libpcap: tcpdump installed)."""
        self.config_test(SensorOptions(capture=method), Path("."))

    def config_test(self, options: SensorOptions, workdir: Path) -> None:
        """Settings and method valid, the programs built (and tcpdump installed for libpcap)."""
        method = self._method(options)
        settings = nodetect_settings(options)
        self._ring(settings, None)
        self.require()
        if method == LIBPCAP and shutil.which(self.tcpdump) is None:
            raise EnvironmentMissing("sensor.capture = \"libpcap\" runs tcpdump, which is not installed.",
                                     fix="apt-get install tcpdump (`make setup`).")

    def _ring(self, settings: Mapping[str, int | None], mtu: int | None) -> RingOptions:
        ring = RingOptions(block_size=settings["block_size"] or RingOptions().block_size,
                           block_count=settings["block_count"] or RingOptions().block_count,
                           block_timeout_ms=settings["block_timeout_ms"] or RingOptions().block_timeout_ms)
        if mtu is not None and ring.block_size < mtu + L2_SLACK:
            raise SpecError(f"nodetect block_size {ring.block_size} cannot hold a {mtu}-byte MTU frame.",
                            fix=f"use block_size >= {mtu + L2_SLACK} (a multiple of 4096).")
        return ring

    def prepare(self, run_dir: Path, interface: str, options: SensorOptions, *,
                mtu: int | None = None) -> NoDetectRun:
        method = self._method(options)
        settings = nodetect_settings(options)
        run_dir = Path(run_dir).resolve()
        run_dir.mkdir(parents=True, exist_ok=True)
        stats = run_dir / CAPTURE_STATS_FILE
        if method == AFPACKET:
            threads = settings["threads"] or 1
            argv = ibcapture_argv(self._program("ibcapture"), interface, stats,
                                  interval_s=float(options.stats_interval_s), threads=threads,
                                  ring=self._ring(settings, mtu),
                                  fanout_id=fanout_id_for(run_dir) if threads > 1 else None)
        else:
            argv = [str(self._program("ibtick")), "--interval", str(options.stats_interval_s), "--",
                    *tcpdump_argv(interface, buffer_kib=settings["buffer_kib"], binary=self.tcpdump)]
        return NoDetectRun(argv=argv, log_dir=run_dir, method=method, interface=interface,
                          console_path=run_dir / CONSOLE_FILE, stats_path=stats)
