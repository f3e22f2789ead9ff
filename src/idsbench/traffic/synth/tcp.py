"""A TCP connection as seen from a sensor next to the client: handshake, data with ACKs, FIN/RST.

Client packets are seen when sent; the server's packets one RTT after the client's packet that
caused them. Sequence and acknowledgement numbers follow the bytes actually sent.
"""

from __future__ import annotations

import random
import struct
from typing import TypeVar

import numpy as np

from idsbench.traffic.synth.frames import ACK, FIN, PSH, RST, SYN, Path

MSS = 1460
FLIGHT = 32  # segments sent before waiting for an ACK (32 * 1460 < the 64 KiB windows)
VECTOR_BYTES = 24 * MSS  # sends longer than this are segmented with numpy (same bytes, faster)
# MSS, NOP, NOP, SACK permitted, NOP, window scale 7: 12 bytes, so the header is 32 bytes
_SYN_OPTS = struct.pack("!BBH", 2, 4, MSS) + b"\x01\x01\x04\x02\x01\x03\x03\x07"
US = 1_000
# Ethernet + IPv4 version/TOS | total length | id | flags .. dst address + ports | seq | ack | offset
# | flags | window | checksum | urgent: a TCP segment without options in one pack
_SEG = struct.Struct("!16sHH18sIIBBHHH")
_T = TypeVar("_T")


def _consts(path: Path, sport: int, dport: int) -> tuple[bytes, bytes]:
    """The constant parts of a direction's option-less TCP headers (see `Path.tcp`)."""
    pre = path.dst_mac + path.src_mac + b"\x08\x00\x45\x00"
    mid = struct.pack("!HBBH4s4sHH", 0x4000, path.ttl, 6, 0, path.src, path.dst, sport, dport)
    return pre, mid


def _headers(count: int, const: bytes, total_len: np.ndarray, first_id: int, seqs: np.ndarray,
             acks: np.ndarray, window: int) -> np.ndarray:
    """(count, 54) Ethernet/IPv4/TCP headers as `_SEG` packs them (flags, offset left to the caller):
    `const` = the direction's 16 + 18 constant bytes (see `_consts`)."""
    h = np.zeros((count, 54), dtype=np.uint8)
    c = np.frombuffer(const, dtype=np.uint8)
    h[:, 0:16], h[:, 20:38] = c[:16], c[16:]
    h[:, 16:18] = total_len.astype(">u2").view(np.uint8).reshape(count, 2)
    h[:, 18:20] = ((first_id + np.arange(count)) & 0xFFFF).astype(">u2").view(np.uint8).reshape(count, 2)
    h[:, 38:42] = (seqs & 0xFFFFFFFF).astype(">u4").view(np.uint8).reshape(count, 4)
    h[:, 42:46] = (acks & 0xFFFFFFFF).astype(">u4").view(np.uint8).reshape(count, 4)
    h[:, 48:50] = (window >> 8, window & 0xFF)
    return h


def _interleave(out: list[_T], segs: list[_T], acks: list[_T], m: int) -> None:
    """Fill `out` (3 slots per pair of the m segments) with (odd, even, ack) triples; an odd last
    segment appends (segment, ack)."""
    pairs = m - m % 2
    out[0::3], out[1::3], out[2::3] = segs[0:pairs:2], segs[1:pairs:2], acks[:pairs // 2]
    if m % 2:
        out += [segs[-1], acks[-1]]


class FlowBuf:
    """Packets of one flow before they join the trace (so the flow can be squeezed in time)."""

    __slots__ = ("frames", "ts")

    def __init__(self) -> None:
        self.ts: list[int] = []
        self.frames: list[bytes] = []

    def add(self, t: int, frame: bytes) -> None:
        self.ts.append(t)
        self.frames.append(frame)

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def size(self) -> int:
        """Bytes of all frames."""
        return sum(map(len, self.frames))


class TcpConn:
    def __init__(self, buf: FlowBuf, rng: random.Random, c2s: Path, s2c: Path, cport: int, sport: int,
                 t: int, rtt_ns: int, bw_bps: float):
        self.buf, self.rng = buf, rng
        self.c2s, self.s2c = c2s, s2c
        self.cport, self.sport = cport, sport
        self.cseq = rng.getrandbits(32)  # next sequence number the client sends
        self.sseq = rng.getrandbits(32)
        self.t = t
        self.rtt = rtt_ns
        self.seg_gap = max(int(1514 * 8 / bw_bps * 1e9), 2 * US)  # serialisation gap of a full segment
        self.cwin = 502  # 64256 >> 7 (window scale 7)
        self.swin = 509
        self._consts = {True: (_consts(c2s, cport, sport), _consts(s2c, sport, cport)),
                        False: (_consts(s2c, sport, cport), _consts(c2s, cport, sport))}

    # -- packets ------------------------------------------------------------------------
    def _client(self, t: int, flags: int, payload: bytes = b"", options: bytes = b"") -> None:
        self.buf.add(t, self.c2s.tcp(self.cport, self.sport, self.cseq, self.sseq, flags, self.cwin,
                                     payload, options))

    def _server(self, t: int, flags: int, payload: bytes = b"", options: bytes = b"") -> None:
        self.buf.add(t, self.s2c.tcp(self.sport, self.cport, self.sseq, self.cseq, flags, self.swin,
                                     payload, options))

    def _client_think(self) -> int:
        return self.rng.randint(15, 120) * US

    # -- phases -------------------------------------------------------------------------
    def handshake(self) -> None:
        t = self.t
        self.buf.add(t, self.c2s.tcp(self.cport, self.sport, self.cseq, 0, SYN, 64240, b"", _SYN_OPTS))
        self.cseq += 1
        t += self.rtt
        self.buf.add(t, self.s2c.tcp(self.sport, self.cport, self.sseq, self.cseq, SYN | ACK, 65160, b"",
                                     _SYN_OPTS))
        self.sseq += 1
        t += self._client_think()
        self._client(t, ACK)
        self.t = t

    def send(self, from_client: bool, data: bytes | memoryview, delay_ns: int = 0) -> None:
        """Send `data` in MSS segments; the receiver ACKs every second segment and the last one.

        The per-segment work is inlined (one struct pack per packet with the constant Ethernet/IP
        bytes of each direction precomputed); frames are byte-identical to `Path.tcp`."""
        t = self.t + delay_ns
        n = len(data)
        if n == 0:
            return
        if from_client:
            tx, rx = self.c2s, self.s2c
            seq, peer, win, rwin = self.cseq, self.sseq, self.cwin, self.swin
            seg_ack_delay = self.rtt
        else:
            tx, rx = self.s2c, self.c2s
            seq, peer, win, rwin = self.sseq, self.cseq, self.swin, self.cwin
            seg_ack_delay = self._client_think()
        (tx_pre, tx_mid), (rx_pre, rx_mid) = self._consts[from_client]  # paths and ports never change
        tx_id, rx_id = tx.ip_id, rx.ip_id
        if n > VECTOR_BYTES:
            ends = self._send_vector(data, t, seg_ack_delay, tx_pre + tx_mid, rx_pre + rx_mid, seq, peer, win,
                                     rwin, tx_id, rx_id)
            t, last_ack_t, tx_id, rx_id, seq = ends
            self._sent(from_client, tx_id, rx_id, seq, max(t, last_ack_t))
            return
        pack = _SEG.pack
        ts_add, fr_add = self.buf.ts.append, self.buf.frames.append
        getrandbits = self.rng.getrandbits
        peer &= 0xFFFFFFFF
        last_ack_t = t
        pos, k = 0, 0
        gap = self.seg_gap
        view = memoryview(data)  # segments are views: the frame is the only copy of their bytes
        while pos < n:
            chunk = view[pos:pos + MSS]
            size = len(chunk)
            pos += size
            k += 1
            tx_id = (tx_id + 1) & 0xFFFF
            ts_add(t)
            fr_add(pack(tx_pre, 40 + size, tx_id, tx_mid, seq & 0xFFFFFFFF, peer, 0x50,
                        ACK | PSH if pos >= n else ACK, win, 0, 0) + chunk)
            seq += size
            if k % 2 == 0 or pos >= n:
                ack_t = max(t + seg_ack_delay, last_ack_t + US)
                rx_id = (rx_id + 1) & 0xFFFF
                ts_add(ack_t)
                fr_add(pack(rx_pre, 40, rx_id, rx_mid, peer, seq & 0xFFFFFFFF, 0x50, ACK, rwin, 0, 0))
                last_ack_t = ack_t
            t += gap + (getrandbits(4) * US >> 2)
            if k % FLIGHT == 0:  # stay inside the receiver's window: wait for the ACK clock
                t = max(t, last_ack_t + US)
        self._sent(from_client, tx_id, rx_id, seq, max(t, last_ack_t))

    def _sent(self, from_client: bool, tx_id: int, rx_id: int, seq: int, t: int) -> None:
        """The connection after a send: IP ids of both directions, the sender's sequence, the clock."""
        tx, rx = (self.c2s, self.s2c) if from_client else (self.s2c, self.c2s)
        tx.ip_id, rx.ip_id = tx_id, rx_id
        if from_client:
            self.cseq = seq
        else:
            self.sseq = seq
        self.t = t

    def _send_vector(self, data: bytes | memoryview, t: int, ack_delay: int, tx_const: bytes, rx_const: bytes,
                     seq: int, peer: int, win: int, rwin: int, tx_id: int,
                     rx_id: int) -> tuple[int, int, int, int, int]:
        """`send` for many segments with numpy: the same frames, times and random draws as the loop.

        The loop's times reduce to sums: segment k+1 leaves gap + jitter after segment k, except
        after each full flight, when it also waits for the last ACK (segment time + ack delay + 1 µs);
        ACKs follow their segment by exactly the ack delay (segments are >= 2 µs apart and the delay
        >= 15 µs, so the loop's "1 µs after the previous ACK" never binds). The m jitter draws
        (getrandbits(4) each: the top 4 bits of one 32-bit Mersenne Twister output) are one
        getrandbits(32 m) call, whose little-endian words are those outputs in order.
        Returns (time after the last segment, last ACK time, tx ip id, rx ip id, next seq)."""
        n = len(data)
        m = (n + MSS - 1) // MSS
        sizes = np.full(m, MSS, dtype=np.int64)
        sizes[-1] = n - MSS * (m - 1)
        words = np.frombuffer(self.rng.getrandbits(32 * m).to_bytes(4 * m, "little"), dtype="<u4")
        steps = self.seg_gap + (words >> 28).astype(np.int64) * (US >> 2)
        steps[FLIGHT - 1::FLIGHT] = np.maximum(steps[FLIGHT - 1::FLIGHT], ack_delay + US)
        cum = np.cumsum(steps)
        seg_t = t + cum - steps
        sent = np.cumsum(sizes)  # bytes sent up to and including each segment
        acked = np.arange(1, m, 2) if m % 2 == 0 else np.append(np.arange(1, m - 1, 2), m - 1)
        a = acked.size
        hdr = _headers(m, tx_const, 40 + sizes, tx_id + 1, seq + sent - sizes, np.full(m, peer), win)
        hdr[:, 47] = ACK
        hdr[-1, 47] = ACK | PSH
        acks = _headers(a, rx_const, np.full(a, 40), rx_id + 1, np.full(a, peer), seq + sent[acked], rwin)
        hdr[:, 46] = acks[:, 46] = 0x50
        acks[:, 47] = ACK
        hb, ab = hdr.tobytes(), acks.tobytes()
        view = memoryview(data)
        seg_frames = [hb[54 * i:54 * i + 54] + view[MSS * i:MSS * i + MSS] for i in range(m)]
        ack_frames = [ab[54 * i:54 * i + 54] for i in range(a)]
        seg_ts: list[int] = seg_t.tolist()
        ack_ts: list[int] = (seg_t[acked] + ack_delay).tolist()
        frames: list[bytes] = [b""] * (m // 2 * 3)
        stamps: list[int] = [0] * len(frames)
        _interleave(frames, seg_frames, ack_frames, m)
        _interleave(stamps, seg_ts, ack_ts, m)
        self.buf.ts += stamps
        self.buf.frames += frames
        end_t = t + int(cum[-1])
        return (end_t, int(seg_t[-1]) + ack_delay, (tx_id + m) & 0xFFFF, (rx_id + a) & 0xFFFF,
                seq + n)

    def request_response(self, request: bytes, response: bytes, server_think_ns: int) -> None:
        """Client request; server answers after RTT + think time (its first segment carries the ACK)."""
        self.t += self._client_think()
        self.send(True, request)
        self.t += server_think_ns
        self.send(False, response)

    def close(self, client_first: bool = True, rst: bool = False) -> None:
        t = self.t + self._client_think()
        if rst:
            if client_first:
                self._client(t, RST | ACK)
            else:
                self._server(t, RST | ACK)
            self.t = t
            return
        if client_first:
            self._client(t, FIN | ACK)
            self.cseq += 1
            t += self.rtt
            self._server(t, FIN | ACK)
            self.sseq += 1
            t += self._client_think()
            self._client(t, ACK)
        else:
            self._server(t, FIN | ACK)
            self.sseq += 1
            t += self._client_think()
            self._client(t, FIN | ACK)
            self.cseq += 1
            t += self.rtt
            self._server(t, ACK)
        self.t = t
