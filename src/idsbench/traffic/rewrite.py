"""Distinct flows per replayer: a copy of a capture with its IP addresses moved into a range that
belongs to one replayer index, checksums updated, cached.

Replayer 0 replays the original. Replayer i >= 1 maps the k-th distinct address of the capture to
slot k of its own block: private IPv4 (RFC 1918, 100.64/10) into 10.0.0.0/8, other unicast IPv4
into 100.64.0.0/10 (so $HOME_NET/$EXTERNAL_NET sides are kept for Suricata's default HOME_NET), IPv6
unicast into fd1d:5b00:0:<i>::/64. Blocks of different indices never overlap, and slots that hit
an address of the original capture are skipped, so the N copies carry N disjoint sets of flows.
Multicast, broadcast, loopback, unspecified and IPv6 link-local addresses are kept. Checksums are
updated incrementally (RFC 1624): IPv4 header, TCP, UDP (unless 0) and ICMPv6, which also works for
truncated packets; addresses inside ICMP error payloads, ARP or tunnels are left as they are.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
from pathlib import Path

import numpy as np

from idsbench.errors import InputError
from idsbench.traffic.checksum import fold
from idsbench.traffic.dissect import Dissection, dissect
from idsbench.traffic.pcap import read_info
from idsbench.traffic.pcapfmt import index_capture

REWRITE_VERSION = 1
MAX_INDEX = 63
_PRIVATE4 = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")]
_KEEP4 = [ipaddress.ip_network(n) for n in ("0.0.0.0/8", "127.0.0.0/8", "224.0.0.0/3")]
_PRIV_BASE, _PRIV_STRIDE = int(ipaddress.ip_address("10.0.0.0")), 1 << 18
_PUB_BASE, _PUB_STRIDE = int(ipaddress.ip_address("100.64.0.0")), 1 << 16
_V6_HI = 0xFD1D_5B00_0000_0000
M16 = np.uint64(0xFFFF)


def distinct_copy(path: Path | str, index: int, cache_dir: Path | str) -> Path:
    """The capture as replayer `index` sends it (index 0: the original file)."""
    src = Path(path)
    if index == 0:
        return src
    if not 0 < index <= MAX_INDEX:
        raise InputError(f"replayer index {index} is outside 0..{MAX_INDEX} for distinct flows.",
                         fix=f"use at most {MAX_INDEX + 1} replayers, or the `identical` mode.")
    info = read_info(src, cache_dir=cache_dir)
    suffix = ".pcapng" if info.format == "pcapng" else ".pcap"
    out = Path(cache_dir) / "rewrite" / f"{info.sha256[:24]}-r{index}-v{REWRITE_VERSION}{suffix}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.copyfile(src, tmp)
    try:
        with open(tmp, "r+b") as fh:
            data = bytearray(fh.read())
            rewrite_buffer(data, index, tmp)
            fh.seek(0)
            fh.write(data)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def rewrite_buffer(data: bytearray, index: int, name: Path) -> None:
    """Rewrite the addresses of every packet of the capture held in `data`, in place."""
    buf = np.frombuffer(data, dtype=np.uint8)
    idx = index_capture(buf, memoryview(data), name)
    d = dissect(buf, idx)
    end = idx.data_off + idx.caplen
    v4 = np.nonzero(d.l3 == 4)[0]
    if v4.size:
        old_s, old_d = d.src4[v4].astype(np.uint64), d.dst4[v4].astype(np.uint64)
        new_s, new_d = _map_v4(np.concatenate([old_s, old_d]), index, name)
        o = d.l3_off[v4]
        _put(buf, o + 12, new_s, 4)
        _put(buf, o + 16, new_d, 4)
        delta = _delta([_words(old_s, 2), _words(old_d, 2)], [_words(new_s, 2), _words(new_d, 2)])
        _adjust(buf, o + 10, delta, np.ones(v4.size, dtype=bool), zero_means_none=False)
        _fix_l4(buf, d, v4, end, delta)
    v6 = np.nonzero(d.l3 == 6)[0]
    if v6.size:
        old = [d.src6[v6, 0], d.src6[v6, 1], d.dst6[v6, 0], d.dst6[v6, 1]]
        new_hi_s, new_lo_s = _map_v6(d.src6[v6], d.dst6[v6], index, which=0)
        new_hi_d, new_lo_d = _map_v6(d.src6[v6], d.dst6[v6], index, which=1)
        o = d.l3_off[v6]
        for off, val in ((8, new_hi_s), (16, new_lo_s), (24, new_hi_d), (32, new_lo_d)):
            _put(buf, o + off, val, 8)
        delta = _delta([_words(x, 4) for x in old], [_words(x, 4) for x in (new_hi_s, new_lo_s, new_hi_d, new_lo_d)])
        _fix_l4(buf, d, v6, end, delta)


def _fix_l4(buf: np.ndarray, d: Dissection, sel: np.ndarray, end: np.ndarray, delta: np.ndarray) -> None:
    """Update TCP/UDP/ICMPv6 checksums (their pseudo-headers hold the addresses)."""
    proto = d.proto[sel]
    l4 = d.l4_off[sel]
    csum = np.select([proto == 6, proto == 17, proto == 58], [l4 + 16, l4 + 6, l4 + 2], -1)
    ok = (csum >= 0) & d.first_frag[sel] & (csum + 2 <= end[sel])
    _adjust(buf, csum[ok], delta[ok], proto[ok] == 17, zero_means_none=True)


def _adjust(buf: np.ndarray, at: np.ndarray, delta: np.ndarray, udp: np.ndarray, zero_means_none: bool) -> None:
    """RFC 1624: HC' = ~(~HC + ~m + m'); `delta` already holds the sum of ~m + m'."""
    old = (buf[at].astype(np.uint64) << np.uint64(8)) | buf[at + 1]
    new = (~fold((~old & M16) + delta)) & M16
    if zero_means_none:  # UDP over IPv4 may carry no checksum (0): leave it; never produce 0
        new = np.where(udp & (old == 0), np.uint64(0), np.where(udp & (new == 0), M16, new))
    buf[at] = (new >> np.uint64(8)).astype(np.uint8)
    buf[at + 1] = (new & np.uint64(0xFF)).astype(np.uint8)


def _words(values: np.ndarray, count: int) -> list[np.ndarray]:
    v = values.astype(np.uint64)
    return [(v >> np.uint64(16 * (count - 1 - k))) & M16 for k in range(count)]


def _delta(old: list[list[np.ndarray]], new: list[list[np.ndarray]]) -> np.ndarray:
    total = np.zeros(old[0][0].size, dtype=np.uint64)
    for group_old, group_new in zip(old, new):
        for w_old, w_new in zip(group_old, group_new):
            total += (~w_old & M16) + w_new
    return fold(total)


def _put(buf: np.ndarray, at: np.ndarray, values: np.ndarray, size: int) -> None:
    v = values.astype(np.uint64)
    for k in range(size):
        buf[at + k] = ((v >> np.uint64(8 * (size - 1 - k))) & np.uint64(0xFF)).astype(np.uint8)


def _in(nets: list[ipaddress.IPv4Network | ipaddress.IPv6Network], addrs: np.ndarray) -> np.ndarray:
    out = np.zeros(addrs.size, dtype=bool)
    for net in nets:
        lo, hi = int(net.network_address), int(net.broadcast_address)
        out |= (addrs >= lo) & (addrs <= hi)
    return out


def _map_v4(both: np.ndarray, index: int, name: Path) -> tuple[np.ndarray, np.ndarray]:
    """New (src, dst) for the concatenated [src..., dst...] IPv4 addresses."""
    uniq, inv = np.unique(both, return_inverse=True)
    mapped = uniq.copy()
    keep = _in(_KEEP4, uniq) | (uniq == 0xFFFFFFFF)
    private = _in(_PRIVATE4, uniq) & ~keep
    for cls, base, stride in ((private, _PRIV_BASE, _PRIV_STRIDE), (~private & ~keep, _PUB_BASE, _PUB_STRIDE)):
        members = np.nonzero(cls)[0]
        if members.size == 0:
            continue
        lo = base + index * stride
        taken = uniq[(uniq >= lo) & (uniq < lo + stride)]  # originals inside this block are skipped
        if members.size + taken.size >= stride:
            raise InputError(f"{name} holds {members.size} distinct addresses, more than a replayer's "
                             f"block of {stride} can take.", fix="use the `identical` mode for this trace.")
        cand = np.arange(lo + 1, lo + 1 + members.size + taken.size, dtype=np.uint64)  # no x.x.0.0
        cand = cand[~np.isin(cand, taken)][:members.size]
        mapped[members] = cand
    new = mapped[inv]
    half = both.size // 2
    return new[:half], new[half:]


def _map_v6(src: np.ndarray, dst: np.ndarray, index: int, which: int) -> tuple[np.ndarray, np.ndarray]:
    """New (hi, lo) 64-bit halves of the IPv6 sources (which=0) or destinations (which=1)."""
    both = np.concatenate([src, dst])
    uniq, inv = np.unique(both, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    hi, lo = uniq[:, 0], uniq[:, 1]
    keep = ((hi >> np.uint64(56)) == 0xFF) | ((hi >> np.uint64(54)) == (0xFE80 >> 6)) | ((hi == 0) & (lo <= 1))
    new_hi = np.where(keep, hi, np.uint64(_V6_HI + (index << 16)))
    slots = np.cumsum(~keep) - 1
    taken = set(lo[(hi == np.uint64(_V6_HI + (index << 16)))].tolist())
    new_lo = lo.copy()
    free = np.arange(1, int((~keep).sum()) + len(taken) + 1, dtype=np.uint64)
    free = free[~np.isin(free, np.asarray(sorted(taken), dtype=np.uint64))] if taken else free
    new_lo[~keep] = free[slots[~keep]]
    rows = inv[:src.shape[0]] if which == 0 else inv[src.shape[0]:]
    return new_hi[rows], new_lo[rows]
