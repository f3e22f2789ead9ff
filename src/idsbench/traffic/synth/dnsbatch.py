"""DNS lookups built in batches: every random parameter of a batch drawn at once (numpy), frames
assembled from precompiled pieces (wire names per host, per-qtype question tails) and vectorised
Ethernet/IPv4/UDP/DNS headers; Python only joins three or four byte strings per frame.

The generator's main loop records (t0, marker, answered) per lookup; `build` turns them into
(timestamps, frames). Content is as realistic as the per-flow builder it replaces: query names of
varied lengths (optional host label, marker label), A/AAAA (1-4 addresses), HTTPS, MX, TXT and PTR
answers, 6 % NXDOMAIN, EDNS0 in queries, lognormal resolver latency (median 4 ms, 0.2-150 ms),
client ports unique per (client, server) pair.
"""

from __future__ import annotations

import math

import numpy as np

from idsbench.traffic.synth import apps
from idsbench.traffic.synth.frames import GATEWAY_MAC

SERVER_TTLS = np.array((52, 54, 57, 116, 243), dtype=np.uint8)
MS = 1_000_000
N_PREFIX_NUM = 99  # optional first label: <word><1..99>
_HDR = np.dtype([("dst", "u1", 6), ("src", "u1", 6), ("etype", ">u2"),
                 ("vihl", "u1"), ("tos", "u1"), ("tot", ">u2"), ("ipid", ">u2"), ("frag", ">u2"), ("ttl", "u1"),
                 ("proto", "u1"), ("ipsum", ">u2"), ("sip", "u1", 4), ("dip", "u1", 4),
                 ("sport", ">u2"), ("dport", ">u2"), ("ulen", ">u2"), ("usum", ">u2"),
                 ("txid", ">u2"), ("flags", ">u2"), ("qd", ">u2"), ("an", ">u2"), ("ns", ">u2"), ("ar", ">u2")])
HDR_LEN = _HDR.itemsize  # 54: Ethernet 14 + IPv4 20 + UDP 8 + DNS header 12
_GW = np.frombuffer(GATEWAY_MAC, dtype=np.uint8)

# precompiled pieces
HOSTS = [f"{a}.{b}-example.{t}" for a in apps.WORDS for b in apps.WORDS for t in apps.TLDS]
HOST_WIRE = [apps.dns_name(h) for h in HOSTS]
PREFIX_WIRE = [apps.dns_label(b"%s%d" % (w.encode(), k)) for w in apps.WORDS for k in range(1, N_PREFIX_NUM + 1)]
QTYPE_CODES = apps.QTYPE_CODES
QTYPE_P = np.diff([0, *apps.QTYPE_CUM]) / apps.QTYPE_CUM[-1]
QUERY_TAIL = [q.to_bytes(2, "big") + b"\x00\x01" + apps._EDNS0 for q in QTYPE_CODES]  # qtype, IN, OPT
QUESTION_TAIL = [q.to_bytes(2, "big") + b"\x00\x01" for q in QTYPE_CODES]
ADDRESS_COUNTS = np.array(apps.ADDRESS_COUNTS, dtype=np.int64)
_QI = {q: i for i, q in enumerate(QTYPE_CODES)}
QI_A, QI_AAAA, QI_HTTPS, QI_MX, QI_TXT, QI_PTR = (_QI[q] for q in (1, 28, 65, 15, 16, 12))
HTTPS_RDATA = b"\x00\x01\x00\x00\x01\x00\x03\x02h2"  # priority 1, target ".", alpn h2
MX_WIRE = [b"\x00\x0a" + apps.dns_name(f"mx{k}.{h}") for k in (1, 2, 3) for h in HOSTS]
TXT_RDATA = [bytes([len(t)]) + t for t in (b"v=spf1 include:_spf." + w.encode() + b".example ~all"
                                             for w in apps.WORDS)]


def _rr_head(qtype: int, ttl: np.ndarray, rdlen: np.ndarray) -> np.ndarray:
    """(n, 12) answer record heads: name pointer to the question, type, class IN, TTL, rdlength."""
    h = np.empty((ttl.size, 12), dtype=np.uint8)
    h[:, 0:2] = (0xC0, 0x0C)
    h[:, 2:4] = (qtype >> 8, qtype & 0xFF)
    h[:, 4:6] = (0, 1)
    h[:, 6:10] = ttl.astype(">u4").view(np.uint8).reshape(-1, 4)
    h[:, 10:12] = rdlen.astype(">u2").view(np.uint8).reshape(-1, 2)
    return h


class DnsBatch:
    def __init__(self, seed: int, clients: list[bytes], servers: list[bytes]):
        self.gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0x53])))
        self.clients = np.frombuffer(b"".join(clients), dtype=np.uint8).reshape(-1, 4)
        self.servers = np.frombuffer(b"".join(servers), dtype=np.uint8).reshape(-1, 4)
        self.t0: list[int] = []
        self.markers: dict[int, bytes] = {}  # lookup index -> marker token
        self.unanswered: list[int] = []
        self.recent_keys = np.empty(0, dtype=np.int64)  # (client, server, port) of the previous batch

    def add(self, t0: int, marker: bytes | None, answered: bool = True) -> None:
        if marker:
            self.markers[len(self.t0)] = marker
        if not answered:
            self.unanswered.append(len(self.t0))
        self.t0.append(t0)

    def __len__(self) -> int:
        return len(self.t0)

    def _ports(self, ci: np.ndarray, si: np.ndarray) -> np.ndarray:
        """Client ports in 32768..60999, each (client, server, port) used once in this batch and the
        previous one (while possible)."""
        g = self.gen
        cport = g.integers(32768, 61000, ci.size)
        pair = ci * len(self.servers) + si
        recent = self.recent_keys
        for _ in range(64):
            key = pair * 28232 + (cport - 32768)
            _, first = np.unique(np.concatenate((recent, key)), return_index=True)
            dup = np.ones(recent.size + key.size, dtype=bool)
            dup[first] = False
            dup = dup[recent.size:]
            if not dup.any():
                break
            cport[dup] = g.integers(32768, 61000, int(dup.sum()))
        self.recent_keys = pair * 28232 + (cport - 32768)
        return cport

    def build(self, end_ns: int) -> tuple[list[int], list[bytes]]:
        """(timestamps ns, frames) of the lookups added since the last build: per lookup its query,
        then its answer (if any)."""
        n = len(self.t0)
        if n == 0:
            return [], []
        try:
            return self._build(n, end_ns)
        finally:
            self.t0, self.markers, self.unanswered = [], {}, []

    def _build(self, n: int, end_ns: int) -> tuple[list[int], list[bytes]]:
        g = self.gen
        t0 = np.asarray(self.t0, dtype=np.int64)
        ci = g.integers(0, len(self.clients), n)
        si = g.integers(0, len(self.servers), n)
        cport = self._ports(ci, si)
        client_id, server_id, txid = g.integers(0, 1 << 16, (3, n))
        server_ttl = SERVER_TTLS[g.integers(0, SERVER_TTLS.size, n)]
        host = g.integers(0, len(HOSTS), n)
        prefix = np.where(g.random(n) < 0.3, g.integers(0, len(PREFIX_WIRE), n), -1)
        qi = g.choice(len(QTYPE_CODES), size=n, p=QTYPE_P)
        nx = g.random(n) < 0.06
        count = np.where((qi == QI_A) | (qi == QI_AAAA), ADDRESS_COUNTS[g.integers(0, ADDRESS_COUNTS.size, n)], 1)
        rr_ttl = g.integers(30, 86401, n)  # one TTL per answer RRset
        delay = np.clip(g.lognormal(math.log(4.0), 1.0, n), 0.2, 150.0)
        extra = g.integers(0, 1 << 30, n)  # MX host / TXT word choice
        answered = np.ones(n, dtype=bool)
        answered[self.unanswered] = False
        nx &= answered
        count = np.where(nx | ~answered, 0, count)

        # query names
        host_l, pref_l = host.tolist(), prefix.tolist()
        qnames = [PREFIX_WIRE[p] + HOST_WIRE[h] if p >= 0 else HOST_WIRE[h] for p, h in zip(pref_l, host_l)]
        for k, marker in self.markers.items():
            qnames[k] = apps.dns_label(marker) + HOST_WIRE[host_l[k]]
        qlen = np.fromiter(map(len, qnames), dtype=np.int64, count=n)

        # answers
        answers = self._answers(n, qi, count, rr_ttl, extra, host)
        alen = np.fromiter(map(len, answers), dtype=np.int64, count=n)

        cl, sv = self.clients[ci], self.servers[si]
        q = np.zeros(n, dtype=_HDR)
        q["dst"] = _GW
        q["src"][:, :2] = (0x02, 0x1D)
        q["src"][:, 2:] = cl
        q["etype"], q["vihl"], q["ttl"], q["proto"] = 0x0800, 0x45, 64, 17
        q["tot"] = 28 + 12 + qlen + 15
        q["ipid"] = (client_id + 1) & 0xFFFF
        q["sip"], q["dip"] = cl, sv
        q["sport"], q["dport"] = cport, 53
        q["ulen"] = 8 + 12 + qlen + 15
        q["txid"], q["flags"], q["qd"], q["ar"] = txid, 0x0100, 1, 1
        r = q.copy()
        r["dst"], r["src"] = q["src"], _GW
        r["ttl"] = server_ttl
        r["tot"] = 28 + 12 + qlen + 4 + alen
        r["ipid"] = (server_id + 1) & 0xFFFF
        r["sip"], r["dip"] = sv, cl
        r["sport"], r["dport"] = 53, cport
        r["ulen"] = 8 + 12 + qlen + 4 + alen
        r["flags"] = np.where(nx, 0x8183, 0x8180)
        r["an"], r["ar"] = count, 0
        qh, rh = q.tobytes(), r.tobytes()

        t_ans = np.minimum(t0 + (delay * MS).astype(np.int64), end_ns)  # squeezed into the trace
        qi_l, ans_l = qi.tolist(), answered.tolist()
        ts: list[int] = []
        frames: list[bytes] = []
        t0_l, ta_l = t0.tolist(), t_ans.tolist()
        L = HDR_LEN
        for k in range(n):
            qn, qt = qnames[k], qi_l[k]
            o = k * L
            frames.append(b"".join((qh[o:o + L], qn, QUERY_TAIL[qt])))
            if ans_l[k]:
                frames.append(b"".join((rh[o:o + L], qn, QUESTION_TAIL[qt], answers[k])))
                ts.append(t0_l[k])
                ts.append(ta_l[k])
            else:
                ts.append(t0_l[k])
        return ts, frames

    def _answers(self, n: int, qi: np.ndarray, count: np.ndarray, rr_ttl: np.ndarray, extra: np.ndarray,
                 host: np.ndarray) -> list[bytes]:
        g = self.gen
        answers = [b""] * n
        for qidx, qtype, addr_len, fixed in ((QI_A, 1, 4, b""), (QI_AAAA, 28, 16, b"\x20\x01\x0d\xb8")):
            sel = np.nonzero((qi == qidx) & (count > 0))[0]
            if sel.size == 0:
                continue
            c = count[sel]
            nrec = int(c.sum())
            rec = np.empty((nrec, 12 + addr_len), dtype=np.uint8)
            rec[:, :12] = _rr_head(qtype, np.repeat(rr_ttl[sel], c), np.full(nrec, addr_len))
            rec[:, 12:12 + len(fixed)] = np.frombuffer(fixed, dtype=np.uint8)
            rec[:, 12 + len(fixed):] = g.integers(0, 256, (nrec, addr_len - len(fixed)), dtype=np.uint8)
            blob = rec.tobytes()
            ends = (np.cumsum(c) * rec.shape[1]).tolist()
            start = 0
            for k, e in zip(sel.tolist(), ends):
                answers[k] = blob[start:e]
                start = e
        others = np.nonzero(~((qi == QI_A) | (qi == QI_AAAA)) & (count > 0))[0]
        heads: dict[int, bytes] = {}  # qtype index -> answer head up to the TTL
        for k, qidx, ttl, x, h in zip(others.tolist(), qi[others].tolist(), rr_ttl[others].tolist(),
                                      extra[others].tolist(), host[others].tolist()):
            if qidx == QI_HTTPS:
                rdata = HTTPS_RDATA
            elif qidx == QI_MX:
                rdata = MX_WIRE[(x % 3) * len(HOSTS) + (x // 3) % len(HOSTS)]
            elif qidx == QI_TXT:
                rdata = TXT_RDATA[x % len(TXT_RDATA)]
            else:  # PTR
                rdata = HOST_WIRE[(h + x) % len(HOSTS)]
            head = heads.get(qidx)
            if head is None:
                head = heads[qidx] = (0xC00C0000 | QTYPE_CODES[qidx]).to_bytes(4, "big") + b"\x00\x01"
            answers[k] = head + ttl.to_bytes(4, "big") + len(rdata).to_bytes(2, "big") + rdata
        return answers
