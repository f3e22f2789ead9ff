"""A TCP connection as seen from a sensor next to the client: handshake, data with ACKs, FIN/RST.

Client packets are seen when sent; the server's packets one RTT after the client's packet that
caused them. Sequence and acknowledgement numbers follow the bytes actually sent.
"""

from __future__ import annotations

import random
import struct

from idsbench.traffic.synth.frames import ACK, FIN, PSH, RST, SYN, Path

MSS = 1460
FLIGHT = 32  # segments sent before waiting for an ACK (32 * 1460 < the 64 KiB windows)
# MSS, NOP, NOP, SACK permitted, NOP, window scale 7: 12 bytes, so the header is 32 bytes
_SYN_OPTS = struct.pack("!BBH", 2, 4, MSS) + b"\x01\x01\x04\x02\x01\x03\x03\x07"
US = 1_000
# Ethernet + IPv4 version/TOS | total length | id | flags .. dst address + ports | seq | ack | offset
# | flags | window | checksum | urgent: a TCP segment without options in one pack
_SEG = struct.Struct("!16sHH18sIIBBHHH")


def _consts(path: Path, sport: int, dport: int) -> tuple[bytes, bytes]:
    """The constant parts of a direction's option-less TCP headers (see `Path.tcp`)."""
    pre = path.dst_mac + path.src_mac + b"\x08\x00\x45\x00"
    mid = struct.pack("!HBBH4s4sHH", 0x4000, path.ttl, 6, 0, path.src, path.dst, sport, dport)
    return pre, mid


class FlowBuf:
    """Packets of one flow before they join the trace (so the flow can be squeezed in time)."""

    __slots__ = ("ts", "frames")

    def __init__(self) -> None:
        self.ts: list[int] = []
        self.frames: list[bytes] = []

    def add(self, t: int, frame: bytes) -> None:
        self.ts.append(t)
        self.frames.append(frame)

    def __len__(self) -> int:
        return len(self.frames)


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

    def send(self, from_client: bool, data: bytes, delay_ns: int = 0) -> None:
        """Send `data` in MSS segments; the receiver ACKs every second segment and the last one.

        The per-segment work is inlined (one struct pack per packet with the constant Ethernet/IP
        bytes of each direction precomputed); frames are byte-identical to `Path.tcp`."""
        t = self.t + delay_ns
        n = len(data)
        if n == 0:
            return
        if from_client:
            tx, rx, sport, dport = self.c2s, self.s2c, self.cport, self.sport
            seq, peer, win, rwin = self.cseq, self.sseq, self.cwin, self.swin
            seg_ack_delay = self.rtt
        else:
            tx, rx, sport, dport = self.s2c, self.c2s, self.sport, self.cport
            seq, peer, win, rwin = self.sseq, self.cseq, self.swin, self.cwin
            seg_ack_delay = self._client_think()
        tx_pre, tx_mid = _consts(tx, sport, dport)
        rx_pre, rx_mid = _consts(rx, dport, sport)
        tx_id, rx_id = tx.ip_id, rx.ip_id
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
        tx.ip_id, rx.ip_id = tx_id, rx_id
        if from_client:
            self.cseq = seq
        else:
            self.sseq = seq
        self.t = max(t, last_ack_t)

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
