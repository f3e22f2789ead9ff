"""Vectorised header dissection: link layer -> IPv4/IPv6 -> TCP/UDP ports, for every packet at once.

Supports Ethernet (with up to two VLAN tags and MPLS label stacks carrying IP), Linux cooked
capture v1/v2, BSD loopback and raw IP link types. Non-IP frames get `l3 == 0`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from idsbench.traffic.pcapfmt import RecordIndex
from idsbench.traffic.protocols import PROTO_NAMES, WELL_KNOWN_PORTS, ordered_tally

ETH_IPV4, ETH_IPV6 = 0x0800, 0x86DD
_VLAN = (0x8100, 0x88A8, 0x9100)
_MPLS = (0x8847, 0x8848)
LINK_ETHERNET, LINK_NULL, LINK_LOOP, LINK_RAW, LINK_SLL, LINK_SLL2 = 1, 0, 108, 101, 113, 276
LINK_IPV4, LINK_IPV6 = 228, 229

@dataclass(frozen=True)
class Dissection:
    """Per-packet header fields; offsets are absolute byte positions in the capture buffer."""

    l3: np.ndarray  # int8: 0 (not IP), 4 or 6
    l3_off: np.ndarray
    proto: np.ndarray  # IP protocol / IPv6 upper-layer header, -1 when not IP
    l4_off: np.ndarray
    first_frag: np.ndarray  # bool: an IP packet that starts its datagram (fragment offset 0)
    has_ports: np.ndarray  # bool: TCP/UDP/SCTP header present (first fragment, captured)
    sport: np.ndarray
    dport: np.ndarray
    src4: np.ndarray  # uint32 (IPv4 packets only)
    dst4: np.ndarray
    src6: np.ndarray  # (n, 2) uint64 (IPv6 packets only)
    dst6: np.ndarray


Offsets = npt.NDArray[np.int64]  # absolute byte positions in the capture buffer


def _views(buf: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.uint16], npt.NDArray[np.uint32],
                                                 npt.NDArray[np.uint64]]:
    def view(dt: str, size: int) -> np.ndarray:
        out: np.ndarray = np.ndarray((max(buf.size - size + 1, 0),), dtype=np.dtype(dt), buffer=buf, strides=(1,))
        return out

    return view(">u2", 2), view(">u4", 4), view(">u8", 8)


class _Reader:
    """Big-endian gathers at per-packet offsets (clipped to the buffer only when needed)."""

    def __init__(self, buf: npt.NDArray[np.uint8]):
        self.buf = buf
        self.u16, self.u32, self.u64 = _views(buf)

    @staticmethod
    def _safe(view: np.ndarray, off: Offsets) -> Offsets:
        if off.size and (int(off.max()) >= view.size or int(off.min()) < 0):
            return np.clip(off, 0, max(view.size - 1, 0))
        return off

    def u8(self, off: Offsets) -> npt.NDArray[np.uint8]:
        return self.buf[self._safe(self.buf, off)]

    def be16(self, off: Offsets) -> npt.NDArray[np.uint16]:
        return self.u16[self._safe(self.u16, off)]

    def be32(self, off: Offsets) -> npt.NDArray[np.uint32]:
        return self.u32[self._safe(self.u32, off)]

    def be64(self, off: Offsets) -> npt.NDArray[np.uint64]:
        return self.u64[self._safe(self.u64, off)]


def _isin(values: np.ndarray, choices: tuple[int, ...]) -> npt.NDArray[np.bool_]:
    out: npt.NDArray[np.bool_] = values == choices[0]
    for c in choices[1:]:
        out |= values == c
    return out


def _ethernet(r: _Reader, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(l3 offset, ethertype) for Ethernet frames: VLAN/QinQ tags and MPLS stacks over IP."""
    off = start + 12
    et = np.where(off + 2 <= end, r.be16(off), 0).astype(np.int32)
    for _ in range(2):  # VLAN / QinQ tags: only the tagged subset is touched
        sel = np.nonzero(_isin(et, _VLAN))[0]
        if sel.size == 0:
            break
        off[sel] += 4
        et[sel] = np.where(off[sel] + 2 <= end[sel], r.be16(off[sel]), 0)
    l3 = off + 2
    sel = np.nonzero(_isin(et, _MPLS))[0]
    if sel.size:
        pos, sub_end = l3[sel], end[sel]
        inner = np.zeros(sel.size, dtype=np.int64)
        live = np.ones(sel.size, dtype=bool)
        for _ in range(4):  # the bottom-of-stack bit ends the label stack
            bos = live & ((r.u8(pos + 2) & 1) == 1) & (pos + 4 <= sub_end)
            pos = np.where(live, pos + 4, pos)
            first = r.u8(pos) >> 4
            inner = np.where(bos, np.select([first == 4, first == 6], [ETH_IPV4, ETH_IPV6], 0), inner)
            live &= ~bos & (pos + 4 <= sub_end)
        et[sel], l3[sel] = inner, pos
    return l3, et


def _link_to_l3(r: _Reader, idx: RecordIndex, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(l3 offset, ethertype-like protocol) per packet; protocol 0 when unknown."""
    start = idx.data_off
    l3 = start.copy()
    etype = np.zeros(start.size, dtype=np.int64)
    for lt in np.unique(idx.link).tolist():
        sel = slice(None) if idx.link[0] == idx.link[-1] == lt and (idx.link == lt).all() \
            else np.nonzero(idx.link == lt)[0]
        s = start[sel]
        if lt == LINK_ETHERNET:
            l3[sel], etype[sel] = _ethernet(r, s.copy(), end[sel])
        elif lt in (LINK_NULL, LINK_LOOP):
            fam = (r.u8(s) | r.u8(s + 3)).astype(np.int64)  # AF value in either byte order (< 256)
            etype[sel] = np.select([fam == 2, _isin(fam, (10, 24, 28, 30))], [ETH_IPV4, ETH_IPV6], 0)
            l3[sel] = s + 4
        elif lt in (LINK_RAW, 12, 14, LINK_IPV4, LINK_IPV6):
            ver = r.u8(s) >> 4
            etype[sel] = np.select([ver == 4, ver == 6], [ETH_IPV4, ETH_IPV6], 0)
        elif lt in (LINK_SLL, LINK_SLL2):
            proto_at, hdr = (14, 16) if lt == LINK_SLL else (0, 20)
            etype[sel] = r.be16(s + proto_at)
            l3[sel] = s + hdr
    return l3, etype


def dissect(buf: np.ndarray, idx: RecordIndex) -> Dissection:
    n = idx.packets
    end = idx.data_off + idx.caplen
    r = _Reader(buf)
    l3_off, etype = _link_to_l3(r, idx, end)
    l3 = np.zeros(n, dtype=np.int8)
    proto = np.full(n, -1, dtype=np.int64)
    l4_off = np.zeros(n, dtype=np.int64)
    first_frag = np.zeros(n, dtype=bool)
    src4 = np.zeros(n, dtype=np.uint32)
    dst4 = np.zeros(n, dtype=np.uint32)
    src6 = np.zeros((n, 2), dtype=np.uint64)
    dst6 = np.zeros((n, 2), dtype=np.uint64)

    cand = np.nonzero(etype == ETH_IPV4)[0]
    o = l3_off[cand]
    b0 = r.u8(o)
    ok = ((b0 >> 4) == 4) & ((b0 & 0x0F) >= 5) & (o + 20 <= end[cand])
    sel, o, ihl = cand[ok], o[ok], (b0[ok] & 0x0F).astype(np.int64) * 4
    l3[sel] = 4
    proto[sel] = r.u8(o + 9)
    first_frag[sel] = (r.be16(o + 6) & 0x1FFF) == 0
    l4_off[sel] = o + ihl
    src4[sel], dst4[sel] = r.be32(o + 12), r.be32(o + 16)

    cand = np.nonzero(etype == ETH_IPV6)[0]
    o = l3_off[cand]
    ok = ((r.u8(o) >> 4) == 6) & (o + 40 <= end[cand])
    sel, o = cand[ok], o[ok]
    if sel.size:
        l3[sel] = 6
        src6[sel, 0], src6[sel, 1] = r.be64(o + 8), r.be64(o + 16)
        dst6[sel, 0], dst6[sel, 1] = r.be64(o + 24), r.be64(o + 32)
        nh, l4, sub_end = r.u8(o + 6), o + 40, end[sel]
        first = np.ones(sel.size, dtype=bool)
        for _ in range(3):  # hop-by-hop / routing / destination options / fragment headers
            ext = _isin(nh, (0, 43, 60)) & (l4 + 2 <= sub_end)
            frag = (nh == 44) & (l4 + 8 <= sub_end)
            if not (ext.any() or frag.any()):
                break
            step = np.where(ext, (r.u8(l4 + 1).astype(np.int64) + 1) * 8, np.where(frag, 8, 0))
            first = np.where(frag, (r.be16(l4 + 2) >> 3) == 0, first)
            nh = np.where(ext | frag, r.u8(l4), nh)
            l4 = l4 + step
        proto[sel], l4_off[sel], first_frag[sel] = nh, l4, first

    has_ports = first_frag & _isin(proto, (6, 17, 132)) & (l4_off + 4 <= end)
    sel = np.nonzero(has_ports)[0]
    sport = np.zeros(n, dtype=np.int64)
    dport = np.zeros(n, dtype=np.int64)
    sport[sel], dport[sel] = r.be16(l4_off[sel]), r.be16(l4_off[sel] + 2)
    return Dissection(l3, l3_off, proto, l4_off, first_frag, has_ports, sport, dport, src4, dst4, src6, dst6)


def _unique_rows(cols: list[np.ndarray]) -> int:
    """Number of distinct rows; a 64-bit hash sorts fast, and a check makes the count exact."""
    if not cols or cols[0].size == 0:
        return 0
    mat = np.stack([c.astype(np.uint64) for c in cols], axis=1)
    same_as_prev = np.zeros(mat.shape[0], dtype=bool)  # packets of a flow tend to be adjacent
    same_as_prev[1:] = (mat[1:] == mat[:-1]).all(axis=1)
    mat = mat[~same_as_prev]
    h = np.zeros(mat.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(mat.shape[1]):
            h = (h ^ mat[:, k]) * np.uint64(0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(29)
    order = np.argsort(h, kind="stable")
    hs, ms = h[order], mat[order]
    same_h = hs[1:] == hs[:-1]
    if (same_h & ~(ms[1:] == ms[:-1]).all(axis=1)).any():  # a hash collision: count exactly
        return int(np.unique(np.ascontiguousarray(mat).view(np.dtype((np.void, 8 * mat.shape[1])))).size)
    return int(hs.size - same_h.sum())


def count_flows(d: Dissection) -> dict[str, int]:
    """Bidirectional 5-tuple flows per transport (A->B and B->A are one flow), like tshark conv."""
    out: dict[str, int] = {}
    for name, p in (("tcp", 6), ("udp", 17), ("sctp", 132)):
        sel4 = d.has_ports & (d.l3 == 4) & (d.proto == p)
        a = (d.src4[sel4].astype(np.uint64) << np.uint64(16)) | d.sport[sel4].astype(np.uint64)
        b = (d.dst4[sel4].astype(np.uint64) << np.uint64(16)) | d.dport[sel4].astype(np.uint64)
        total = _unique_rows([np.minimum(a, b), np.maximum(a, b)])
        sel6 = d.has_ports & (d.l3 == 6) & (d.proto == p)
        if sel6.any():
            s_hi, s_lo, sp = d.src6[sel6, 0], d.src6[sel6, 1], d.sport[sel6].astype(np.uint64)
            t_hi, t_lo, tp = d.dst6[sel6, 0], d.dst6[sel6, 1], d.dport[sel6].astype(np.uint64)
            less = (s_hi < t_hi) | ((s_hi == t_hi) & ((s_lo < t_lo) | ((s_lo == t_lo) & (sp <= tp))))
            cols = [np.where(less, x, y) for x, y in ((s_hi, t_hi), (s_lo, t_lo), (sp, tp))]
            cols += [np.where(less, y, x) for x, y in ((s_hi, t_hi), (s_lo, t_lo), (sp, tp))]
            total += _unique_rows(cols)
        if total or name != "sctp":
            out[name] = total
    return out


def proto_mix(d: Dissection, caplen: np.ndarray) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """(by transport, by well-known service port): {name: {"packets", "bytes"}}, largest first."""
    t_names = ["non-ip", "other-ip"] + list(PROTO_NAMES.values())
    t_table = np.ones(257, dtype=np.int64)  # index proto+1; -1 (not IP) -> 0
    t_table[0] = 0
    for k, num in enumerate(PROTO_NAMES):
        t_table[num + 1] = k + 2
    codes = t_table[np.clip(d.proto, -1, 255) + 1]
    codes = np.where(d.l3 > 0, codes, 0)
    by_transport = _tally(codes, caplen, t_names)
    s_names = ["other"] + sorted(set(WELL_KNOWN_PORTS.values()))
    table = np.zeros(65536, dtype=np.int64)
    for port, svc in WELL_KNOWN_PORTS.items():
        table[port] = s_names.index(svc)
    sel = d.has_ports
    svc_d = table[d.dport[sel]]
    svc = np.where(svc_d > 0, svc_d, table[d.sport[sel]])
    return by_transport, _tally(svc, caplen[sel], s_names)


def _tally(codes: np.ndarray, caplen: np.ndarray, names: list[str]) -> dict[str, dict[str, int]]:
    pk = np.bincount(codes, minlength=len(names))
    by = np.bincount(codes, weights=caplen, minlength=len(names))
    return ordered_tally(pk.tolist(), [int(b) for b in by.tolist()], names)
