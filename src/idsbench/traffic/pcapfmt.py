"""Low-level capture file walking: classic pcap (both byte orders, µs/ns) and pcapng.

The only Python loop touches record headers; everything else is numpy gathers on the
collected offsets. `index_capture(buf, path)` returns a `RecordIndex` of per-packet arrays.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from idsbench.errors import InputError
from idsbench.traffic.protocols import (
    CORRUPT_FIX,
    FORMAT_FIX,
    PCAP_MAGIC_NS,
    PCAP_MAGIC_US,
    PCAPNG_BOM,
    PCAPNG_SHB,
    detect_format,
)

_FIX = FORMAT_FIX


@dataclass(frozen=True)
class RecordIndex:
    """Per-packet arrays (all int64) pointing into the capture buffer."""

    fmt: str  # "pcap" or "pcapng"
    data_off: np.ndarray
    caplen: np.ndarray
    wirelen: np.ndarray
    ts_ns: np.ndarray
    link: np.ndarray  # link type per packet
    link_type: int  # link type of the first interface (0 when there is none)

    @property
    def packets(self) -> int:
        return int(self.data_off.size)


def corrupt(path: Path, what: str) -> InputError:
    return InputError(f"{path}: {what}.", fix=CORRUPT_FIX)


def u32_view(buf: np.ndarray, big_endian: bool) -> np.ndarray:
    """An unaligned uint32 view starting at every byte: view[i] = bytes i..i+3."""
    n = max(buf.size - 3, 0)
    dt = np.dtype(">u4" if big_endian else "<u4")
    view: np.ndarray = np.ndarray((n,), dtype=dt, buffer=buf, offset=0, strides=(1,))
    return view


def index_capture(buf: np.ndarray, raw: memoryview | bytes, path: Path) -> RecordIndex:
    """Index every record of the capture held in `raw` (`buf` is the same bytes as uint8)."""
    fmt = detect_format(bytes(raw[:4]))
    if fmt == "pcap":
        return _index_pcap(buf, raw, path)
    if fmt == "pcapng":
        return _index_pcapng(raw, path)
    raise InputError(f"{path} is not a pcap or pcapng capture (unknown magic number "
                     f"{bytes(raw[:4]).hex() or 'empty file'}).", fix=_FIX)


def _index_pcap(buf: np.ndarray, raw: memoryview | bytes, path: Path) -> RecordIndex:
    if len(raw) < 24:
        raise corrupt(path, "the pcap file header is truncated")
    if int.from_bytes(raw[:4], "little") in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        endian, magic = "<", int.from_bytes(raw[:4], "little")
    else:
        endian, magic = ">", int.from_bytes(raw[:4], "big")
    network = struct.unpack_from(endian + "I", raw, 20)[0]
    link_type = network & 0x03FFFFFF  # upper bits may carry FCS information
    end = len(raw)
    offs: list[int] = []
    append = offs.append
    unpack = struct.Struct(endian + "I").unpack_from
    off = 24
    try:
        while True:  # the hot loop: one unpack and one append per record; ends past the data
            append(off)
            off += 16 + unpack(raw, off + 8)[0]
    except struct.error:
        pass
    last = offs.pop()
    if last != end:
        start = offs[-1] if offs and last > end else last
        raise corrupt(path, f"the record at byte {start} runs past the end of the file ({end} bytes):"
                            " the capture was cut short")
    rec = np.asarray(offs, dtype=np.int64)
    u32 = u32_view(buf, endian == ">")
    sec = u32[rec].astype(np.int64)
    frac = u32[rec + 4].astype(np.int64)
    caplen = u32[rec + 8].astype(np.int64)
    wirelen = u32[rec + 12].astype(np.int64)
    ts_ns = sec * 1_000_000_000 + (frac if magic == PCAP_MAGIC_NS else frac * 1000)
    link = np.full(rec.size, link_type, dtype=np.int64)
    return RecordIndex("pcap", rec + 16, caplen, wirelen, ts_ns, link, link_type)


def _ts_ns(ticks: npt.NDArray[np.uint64], resol: int) -> npt.NDArray[np.int64]:
    """pcapng timestamps (units given by if_tsresol) to int64 nanoseconds."""
    exp = resol & 0x7F
    if resol & 0x80:  # power of two
        if exp <= 30:
            whole = (ticks >> np.uint64(exp)).astype(np.int64) * 1_000_000_000
            part = ((ticks & np.uint64((1 << exp) - 1)) * np.uint64(1_000_000_000)) >> np.uint64(exp)
            ns: npt.NDArray[np.int64] = whole + part.astype(np.int64)
            return ns
        return np.asarray([(int(t) * 1_000_000_000) >> exp for t in ticks], dtype=np.int64)
    if exp <= 9:
        ns_per_tick: int = 10 ** (9 - exp)
        scaled: npt.NDArray[np.int64] = ticks.astype(np.int64) * ns_per_tick
        return scaled
    divided: npt.NDArray[np.int64] = (ticks // np.uint64(10 ** (exp - 9))).astype(np.int64)
    return divided


def _idb_options(raw: memoryview | bytes, start: int, stop: int, endian: str) -> tuple[int, int]:
    """(if_tsresol, if_tsoffset) from an IDB's options."""
    resol, offset = 6, 0
    while start + 4 <= stop:
        code, length = struct.unpack_from(endian + "HH", raw, start)
        if code == 0:
            break
        if code == 9 and length >= 1:
            resol = raw[start + 4]
        elif code == 14 and length == 8:
            offset = struct.unpack_from(endian + "q", raw, start + 4)[0]
        start += 4 + ((length + 3) & ~3)
    return resol, offset


def _index_pcapng(raw: memoryview | bytes, path: Path) -> RecordIndex:
    end = len(raw)
    endian = "<"
    ifaces: list[int] = []  # this section's interface number -> global interface id
    iface_info: list[tuple[int, int, int, int]] = []  # global id -> (link type, tsresol, tsoffset, snaplen)
    offs: list[int] = []
    caps: list[int] = []
    wires: list[int] = []
    ifs: list[int] = []
    tss: list[int] = []
    off = 0
    while off < end:
        if off + 12 > end:
            raise corrupt(path, f"the pcapng block at byte {off} is truncated")
        btype = struct.unpack_from(endian + "I", raw, off)[0]
        if btype == PCAPNG_SHB:
            bom = raw[off + 8:off + 12]
            if int.from_bytes(bom, "little") == PCAPNG_BOM:
                endian = "<"
            elif int.from_bytes(bom, "big") == PCAPNG_BOM:
                endian = ">"
            else:
                raise corrupt(path, f"bad byte-order magic in the section header at byte {off}")
            ifaces = []
        blen = struct.unpack_from(endian + "I", raw, off + 4)[0]
        if blen < 12 or blen % 4 or off + blen > end:
            raise corrupt(path, f"the pcapng block at byte {off} is truncated or has a bad length ({blen})")
        if btype == 6:  # Enhanced Packet Block
            iface, hi, lo, cap, wire = struct.unpack_from(endian + "IIIII", raw, off + 8)
            if cap > blen - 32:
                raise corrupt(path, f"packet block at byte {off} claims more data than it holds")
            if iface >= len(ifaces):
                raise corrupt(path, f"packet block at byte {off} names undeclared interface {iface}")
            offs.append(off + 28)
            caps.append(cap)
            wires.append(wire)
            ifs.append(ifaces[iface])
            tss.append((hi << 32) | lo)
        elif btype == 3:  # Simple Packet Block: first interface, no timestamp
            if not ifaces:
                raise corrupt(path, f"simple packet block at byte {off} comes before any interface")
            wire = struct.unpack_from(endian + "I", raw, off + 8)[0]
            snap = iface_info[ifaces[0]][3] or wire
            offs.append(off + 12)
            caps.append(min(wire, snap, blen - 16))
            wires.append(wire)
            ifs.append(ifaces[0])
            tss.append(0)
        elif btype == 2:  # obsolete Packet Block
            iface, _drops, hi, lo, cap, wire = struct.unpack_from(endian + "HHIIII", raw, off + 8)
            if iface >= len(ifaces) or cap > blen - 32:
                raise corrupt(path, f"packet block at byte {off} is inconsistent")
            offs.append(off + 28)
            caps.append(cap)
            wires.append(wire)
            ifs.append(ifaces[iface])
            tss.append((hi << 32) | lo)
        elif btype == 1:  # Interface Description Block
            link, _res, snap = struct.unpack_from(endian + "HHI", raw, off + 8)
            resol, tsoff = _idb_options(raw, off + 16, off + blen - 4, endian)
            ifaces.append(len(iface_info))
            iface_info.append((link, resol, tsoff, snap))
        off += blen
    n = len(offs)
    ifs_a = np.asarray(ifs, dtype=np.int64)
    ticks = np.asarray(tss, dtype=np.uint64)
    ts_ns = np.zeros(n, dtype=np.int64)
    link = np.zeros(n, dtype=np.int64)
    for gid, (lt, resol, tsoff, _snap) in enumerate(iface_info):
        sel = ifs_a == gid
        if sel.any():
            ts_ns[sel] = _ts_ns(ticks[sel], resol) + tsoff * 1_000_000_000
            link[sel] = lt
    link_type = iface_info[0][0] if iface_info else 0
    return RecordIndex("pcapng", np.asarray(offs, dtype=np.int64), np.asarray(caps, dtype=np.int64),
                       np.asarray(wires, dtype=np.int64), ts_ns, link, link_type)
