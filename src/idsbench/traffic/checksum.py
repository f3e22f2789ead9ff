"""Vectorised Internet checksums over many packets in one buffer (RFC 1071 sums with numpy).

`segment_sums` adds the 16-bit words of many byte ranges with one `np.add.reduceat` pass per start
parity, summing native little-endian words and byte-swapping the folded result, which RFC 1071
allows.
"""

from __future__ import annotations

import numpy as np


def fold(total: np.ndarray) -> np.ndarray:
    """One's-complement fold of non-negative sums to 16 bits (0 stays 0)."""
    s = total.astype(np.uint64)
    for _ in range(3):
        s = (s & np.uint64(0xFFFF)) + (s >> np.uint64(16))
    return s


def segment_sums(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Folded one's-complement sum of the big-endian words of each buf[start:start+length]
    (odd tails zero-padded). Ranges are at most 64 KiB long and must not overlap; ranges of the
    same start parity must be in buffer order (packets of a capture are)."""
    out = np.zeros(start.size, dtype=np.uint64)
    for parity in (0, 1):
        sel = np.nonzero((start % 2) == parity)[0]
        if sel.size == 0:
            continue
        s, n = start[sel], length[sel]
        words = np.frombuffer(buf, dtype="<u2", offset=parity, count=(buf.size - parity) // 2)
        ws = (s - parity) // 2
        we = ws + n // 2
        # reduceat over [ws0, we0, ws1, we1, ...]: even slots are the ranges, odd ones the gaps.
        # A range of at most 32 Ki words fits in uint32; gap sums may wrap and are dropped.
        bounds = np.empty(2 * sel.size, dtype=np.int64)
        bounds[0::2], bounds[1::2] = ws, we
        bounds = bounds[:-1] if bounds[-1] >= words.size else bounds  # last range runs to the end
        sums = np.add.reduceat(words, np.minimum(bounds, words.size - 1), dtype=np.uint32)[0::2]
        sums = np.where(we > ws, sums, 0).astype(np.uint64)  # reduceat gives words[ws] when empty
        tail = np.where(n % 2 == 1, buf[np.minimum(s + n - 1, buf.size - 1)], 0).astype(np.uint64)
        folded = fold(sums + tail)
        out[sel] = ((folded & np.uint64(0xFF)) << np.uint64(8)) | (folded >> np.uint64(8))
    return out


def words_at(buf: np.ndarray, off: np.ndarray, count: int) -> np.ndarray:
    """Sum of `count` big-endian 16-bit words starting at each offset (one gather)."""
    b = buf[off[:, None] + np.arange(2 * count)].astype(np.uint64)
    return (b[:, 0::2].sum(axis=1) << np.uint64(8)) + b[:, 1::2].sum(axis=1)


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
