"""Vectorised Internet checksums over many packets in one buffer (RFC 1071 sums with numpy).

`segment_sums` adds the bytes of many ranges with one `np.add.reduceat` pass over the buffer as
little-endian 32-bit words, fixing up unaligned head/tail bytes, and byte-swaps the folded result
where RFC 1071 says so.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from idsbench import native
from idsbench.errors import EnvironmentMissing


def fold(total: np.ndarray) -> np.ndarray:
    """One's-complement fold of non-negative sums to 16 bits (0 stays 0)."""
    s = total.astype(np.uint64)
    for _ in range(4):  # enough for any uint64 sum below 2**48
        s = (s & np.uint64(0xFFFF)) + (s >> np.uint64(16))
    return s


def segment_sums(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Folded one's-complement sum of the big-endian words of each buf[start:start+length]
    (odd tails zero-padded). Ranges must not overlap and must be in buffer order (packets of a
    capture are).

    One `np.add.reduceat` pass over the buffer as little-endian 32-bit words (uint64 sums) covers
    each range's 4-byte-aligned interior; the up to 3 bytes before and after it are added
    separately. Summed this way a byte at an even buffer offset weighs 1 and one at an odd offset
    256, which is the range's big-endian sum byte-swapped when the range starts at an even offset
    and the sum itself when it starts at an odd one (RFC 1071: the sum is byte-order independent).
    """
    start = start.astype(np.int64)
    end = start + length
    a = (start + 3) & ~np.int64(3)  # aligned interior [a, b)
    b = np.maximum(end & ~np.int64(3), a)
    head_end = np.minimum(a, end)
    words = _widened(np.frombuffer(buf, dtype="<u4", count=buf.size // 4))
    ws, we = a // 4, b // 4
    bounds = np.empty(2 * start.size, dtype=np.int64)
    bounds[0::2], bounds[1::2] = ws, we
    bounds = bounds[:-1] if bounds[-1] >= words.size else bounds  # last range runs to the end
    sums = np.add.reduceat(words, np.minimum(bounds, max(words.size - 1, 0)))[0::2] \
        if words.size else np.zeros(start.size, dtype=np.uint64)
    sums = np.where(we > ws, sums, np.uint64(0))  # reduceat gives words[ws] when empty
    for k in range(3):  # head bytes start..a-1 and tail bytes b..end-1, at most 3 each
        for pos, ok in ((start + k, start + k < head_end), (b + k, b + k < end)):
            byte = np.where(ok, buf[np.minimum(pos, buf.size - 1)], 0).astype(np.uint64)
            sums += byte << ((pos & 1).astype(np.uint64) * np.uint64(8))
    folded = fold(sums)
    swapped = ((folded & np.uint64(0xFF)) << np.uint64(8)) | (folded >> np.uint64(8))
    return np.where(start % 2 == 0, swapped, folded)


_scratch = np.empty(0, dtype=np.uint64)


def _widened(words: np.ndarray) -> np.ndarray:
    """`words` as uint64 in a reused buffer: reduceat over uint64 is several times faster than with
    dtype=uint64 on many short ranges, and reusing the buffer avoids fresh pages per call."""
    global _scratch
    if _scratch.size < words.size:
        _scratch = np.empty(words.size, dtype=np.uint64)
    out = _scratch[:words.size]
    out[:] = words
    return out


def words_at(buf: np.ndarray, off: np.ndarray, count: int) -> np.ndarray:
    """Sum of `count` big-endian 16-bit words starting at each offset (one gather)."""
    b: npt.NDArray[np.uint64] = buf[off[:, None] + np.arange(2 * count)].astype(np.uint64)
    high: npt.NDArray[np.uint64] = b[:, 0::2].sum(axis=1)
    low: npt.NDArray[np.uint64] = b[:, 1::2].sum(axis=1)
    sums: npt.NDArray[np.uint64] = (high << np.uint64(8)) + low
    return sums


def store16(buf: np.ndarray, off: np.ndarray, value: np.ndarray) -> None:
    buf[off] = (value >> 8) & 0xFF
    buf[off + 1] = value & 0xFF


def fill_ipv4_frames(buf: np.ndarray, frame_off: np.ndarray) -> None:
    """Write IPv4 header and TCP/UDP/ICMP checksums of Ethernet frames (no VLAN, no IP options).

    The frames must hold their full L4 segment (captured length == wire length).
    """
    if frame_off.size == 0:
        return
    ip = frame_off + 14
    buf[ip + 10] = 0
    buf[ip + 11] = 0
    store16(buf, ip + 10, (~fold(words_at(buf, ip, 10))) & np.uint64(0xFFFF))
    proto = buf[ip + 9]
    total_len = (buf[ip + 2].astype(np.int64) << 8) | buf[ip + 3]
    l4 = ip + 20
    l4_len = total_len - 20
    csum_at = np.select([proto == 6, proto == 17, proto == 1], [l4 + 16, l4 + 6, l4 + 2], -1)
    has = csum_at >= 0
    l4, l4_len, csum_at, proto = l4[has], l4_len[has], csum_at[has], proto[has]
    buf[csum_at] = 0
    buf[csum_at + 1] = 0
    s = segment_sums(buf, l4, l4_len)
    pseudo = words_at(buf, ip[has] + 12, 4) + proto.astype(np.uint64) + l4_len.astype(np.uint64)
    s = np.where(proto == 1, s, s + pseudo)
    c = (~fold(s)) & np.uint64(0xFFFF)
    c = np.where((proto == 17) & (c == 0), np.uint64(0xFFFF), c)
    store16(buf, csum_at, c)


def internet_checksum(data: bytes) -> int:
    """Plain RFC 1071 checksum of one byte string (for tests and single packets)."""
    if len(data) % 2:
        data += b"\0"
    s = int(np.frombuffer(data, dtype=">u2").astype(np.uint64).sum())
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


_lib_lock = threading.Lock()
_lib: list[ctypes.CDLL | None] = []  # [] not loaded yet; [None] not available


FillFn = Callable[[int, int, int, int], int]  # (buffer address, length, offsets address, count) -> rc


def _native_fill() -> FillFn | None:
    """ib_fill_ipv4 from the ibsynth library (built once); None without a C compiler."""
    with _lib_lock:
        if not _lib:
            try:
                lib: ctypes.CDLL | None = ctypes.CDLL(str(native.program("ibsynth")))
            except (EnvironmentMissing, OSError):
                lib = None
            if lib is not None:
                lib.ib_fill_ipv4.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
                lib.ib_fill_ipv4.restype = ctypes.c_long
            _lib.append(lib)
        if _lib[0] is None:
            return None
        fill: FillFn = _lib[0].ib_fill_ipv4
        return fill


def fill_ipv4_records(buf: bytearray, frame_off: np.ndarray) -> None:
    """`fill_ipv4_frames` over a bytearray, in C without the GIL when the ibsynth library builds
    (same result; numpy otherwise)."""
    fill = _native_fill()
    if fill is None or not len(buf):
        fill_ipv4_frames(np.frombuffer(buf, dtype=np.uint8), frame_off)
        return
    offs = np.ascontiguousarray(frame_off, dtype=np.int64)
    address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    if fill(address, len(buf), offs.ctypes.data, offs.size) < 0:
        raise ValueError("a frame runs past the end of the buffer")
