"""Flow generators: each builds one complete conversation into a FlowBuf and reports its marker.

A flow function is `fn(ctx, t0_ns, marker) -> sid` where `marker` is the marker token to embed (or
None) and `sid` the rule that will alert on it (0 when no marker was embedded).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from idsbench.traffic.synth import apps
from idsbench.traffic.synth.frames import GATEWAY_MAC, Path, mac_for, udp_frame
from idsbench.traffic.synth.rng import Rng
from idsbench.traffic.synth.tcp import US, FlowBuf, TcpConn

MS = 1_000_000
SID_TCP, SID_UDP, SID_ICMP = 1990001, 1990002, 1990003
SERVER_TTLS = (52, 54, 57, 116, 243)
LOG_4 = math.log(4.0)
USED_WINDOW = 50_000


@dataclass
class Ctx:
    """Everything flows share: randomness, address plan, size scale."""

    rng: Rng
    pool: apps.Pool
    clients: list[bytes]
    servers: dict[str, list[bytes]]
    scale: float = 1.0
    budget: int = 1 << 62  # packets the trace still needs
    buf: FlowBuf = field(default_factory=FlowBuf)
    used: set[tuple[bytes, int, bytes, int]] = field(default_factory=set)
    used_before: set[tuple[bytes, int, bytes, int]] = field(default_factory=set)  # the previous window

    def forget_before(self, t0: int) -> None:
        """Bound the memory of used 5-tuples: keep the last two windows of USED_WINDOW flows (a port
        is reused only after many flows, as ephemeral ports are). `t0` is the generator's watermark."""
        if len(self.used) >= USED_WINDOW:
            self.used_before, self.used = self.used, set()

    def lognorm(self, median: float, sigma: float, lo: float, hi: float) -> float:
        return min(max(self.rng.lognormvariate(math.log(median), sigma), lo), hi)

    def rtt(self) -> int:
        return int(self.lognorm(25.0, 0.7, 0.5, 300.0) * MS)

    def hosts(self, service: str, port: int) -> tuple[bytes, bytes, int]:
        """A client, a server of `service` and a client port no earlier flow used with both."""
        rng = self.rng
        client = rng.choice(self.clients)
        server = rng.choice(self.servers[service])
        used, before = self.used, self.used_before
        while True:
            cport = rng.randint(32768, 60999)
            key = (client, cport, server, port)
            if key not in used and key not in before:
                used.add(key)
                return client, server, cport

    def endpoints(self, service: str, port: int, client_ttl: int = 64) -> tuple[Path, Path, int, int]:
        client, server, cport = self.hosts(service, port)
        rng = self.rng
        cmac = mac_for(client)
        c2s = Path(client, server, cmac, GATEWAY_MAC, client_ttl, rng.getrandbits(16))
        s2c = Path(server, client, GATEWAY_MAC, cmac, rng.choice(SERVER_TTLS), rng.getrandbits(16))
        return c2s, s2c, cport, port

    def tcp(self, service: str, port: int, t0: int, bw_mbps: float) -> TcpConn:
        c2s, s2c, cport, sport = self.endpoints(service, port)
        return TcpConn(self.buf, self.rng, c2s, s2c, cport, sport, t0, self.rtt(), bw_mbps * 1e6)

    def object_size(self, median: float, sigma: float, cap: float, fill_below: float = 0.0) -> int:
        """A lognormal size, never more than the packet budget left can carry (~1.5 packets per
        full segment); when less than `fill_below` bytes would be left, take all of it."""
        fit = max(64.0, (self.budget - 40) * 1460 / 1.6)
        if fit < fill_below * self.scale:  # a one-way transfer costs 1.5 packets per segment
            return max(64, int((self.budget - 24) / 1.5) * 1460)
        return int(self.lognorm(median * self.scale, sigma, 64, min(cap * max(self.scale, 1.0), fit)))

    def finish(self, conn: TcpConn) -> None:
        r = self.rng.random()
        if r < 0.06:
            conn.close(client_first=True, rst=True)
        elif r < 0.3:
            conn.close(client_first=False)
        else:
            conn.close(client_first=True)


def http(ctx: Ctx, t0: int, marker: bytes | None) -> int:
    conn = ctx.tcp("web", 80, t0, ctx.lognorm(60, 0.8, 5, 900))
    conn.handshake()
    host = apps.hostname(ctx.rng)
    for i in range(ctx.rng.choice((1, 1, 1, 2, 2, 3, 5))):
        size = ctx.object_size(9_000, 1.8, 6_000_000)
        conn.request_response(apps.http_request(ctx.rng, host, marker if i == 0 else None),
                              apps.http_response(ctx.pool, size), ctx.rng.randint(1, 40) * MS)
        conn.t += ctx.rng.randint(1, 200) * MS
    ctx.finish(conn)
    return SID_TCP if marker else 0


def tls(ctx: Ctx, t0: int, marker: bytes | None) -> int:
    conn = ctx.tcp("web", 443, t0, ctx.lognorm(60, 0.8, 5, 900))
    conn.handshake()
    rng, pool = ctx.rng, ctx.pool
    tls13 = rng.random() < 0.7
    sni = apps.hostname(rng) if marker is None else f"{marker.decode()}.{apps.hostname(rng)}"
    sid = pool.take(32)
    conn.t += conn._client_think()
    conn.send(True, apps.tls_client_hello(pool, sni, sid, tls13))
    if tls13:  # ServerHello, CCS, then encrypted EncryptedExtensions..Finished
        flight = apps.tls_server_hello(pool, sid, True) + apps.tls_ccs() + apps.tls_encrypted(
            pool, rng.randint(2500, 5200))
        conn.send(False, flight, rng.randint(1, 8) * MS)
        conn.send(True, apps.tls_ccs() + apps.tls_encrypted(pool, 36), conn._client_think())
    else:  # TLS 1.2 session resumption: no certificate on the wire
        flight = apps.tls_server_hello(pool, sid, False) + apps.tls_ccs() + apps.tls_encrypted(pool, 40, 22)
        conn.send(False, flight, rng.randint(1, 8) * MS)
        conn.send(True, apps.tls_ccs() + apps.tls_encrypted(pool, 40, 22), conn._client_think())
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        conn.t += conn._client_think()
        conn.send(True, apps.tls_encrypted(pool, rng.randint(80, 900)))
        conn.send(False, apps.tls_encrypted(pool, ctx.object_size(12_000, 1.7, 4_000_000)),
                  rng.randint(2, 60) * MS)
        conn.t += rng.randint(1, 300) * MS
    conn.send(True, apps.tls_encrypted(pool, 2, 21), conn._client_think())  # close_notify alert
    ctx.finish(conn)
    return SID_TCP if marker else 0


def dns(ctx: Ctx, t0: int, marker: bytes | None, answered: bool = True) -> int:
    """One lookup (two packets, or the query alone), built on its own.

    `generate` does not call this: it recognises `dns` in FLOW_TYPES and builds all lookups of a
    trace in one batch (`dnsbatch.DnsBatch`, GENERATOR_VERSION 2). Kept as the single-flow form."""
    rng = ctx.rng
    client, server, cport = ctx.hosts("dns", 53)
    client_id, server_ttl, server_id = rng.getrandbits(16), rng.choice(SERVER_TTLS), rng.getrandbits(16)
    qname = apps.dns_name(apps.hostname(rng))
    if marker:
        qname = apps.dns_label(marker) + qname
    elif rng.random() < 0.3:
        qname = apps.dns_label(b"%s%d" % (rng.choice(apps.WORDS).encode(), rng.randint(1, 99))) + qname
    qtype = rng.weighted(apps.QTYPE_CODES, apps.QTYPE_CUM)
    query = apps.dns_query(rng.getrandbits(16), qname, qtype)
    cmac = mac_for(client)
    ctx.buf.add(t0, udp_frame(GATEWAY_MAC, cmac, 64, (client_id + 1) & 0xFFFF, client, server, cport, 53,
                              query))
    if answered:
        resp = apps.dns_response(rng, ctx.pool, query, qtype, nxdomain=rng.random() < 0.06)
        delay_ms = min(max(rng.lognormvariate(LOG_4, 1.0), 0.2), 150.0)  # ctx.lognorm(4.0, 1.0, 0.2, 150.0)
        ctx.buf.add(t0 + int(delay_ms * MS),
                    udp_frame(cmac, GATEWAY_MAC, server_ttl, (server_id + 1) & 0xFFFF, server, client, 53, cport,
                              resp))
    return SID_UDP if marker else 0


def icmp(ctx: Ctx, t0: int, marker: bytes | None) -> int:
    rng = ctx.rng
    c2s, s2c, _, _ = ctx.endpoints("icmp", 0)
    ident = rng.getrandbits(16)
    rtt = ctx.rtt()
    t = t0
    count = rng.choice((1, 2, 4, 4, 5, 10))
    for seq in range(1, count + 1):
        payload = t.to_bytes(8, "little") + bytes(range(0x10, 0x38))
        if marker and seq == 1:
            payload = payload[:8] + marker + payload[8 + len(marker):]
        ctx.buf.add(t, c2s.icmp(8, 0, ident, seq, payload))
        ctx.buf.add(t + rtt, s2c.icmp(0, 0, ident, seq, payload))
        t += 1000 * MS + rng.randint(0, 999) * US
    return SID_ICMP if marker else 0


def smtp(ctx: Ctx, t0: int, marker: bytes | None) -> int:
    conn = ctx.tcp("mail", 25, t0, ctx.lognorm(40, 0.6, 5, 400))
    conn.handshake()
    rng = ctx.rng

    def think() -> int:
        return rng.randint(1, 15) * MS

    conn.send(False, b"220 mx.corp.example ESMTP Postfix (Debian/GNU)\r\n", think())
    client = apps.hostname(rng).encode()
    dialog = [
        (b"EHLO " + client + b"\r\n",
         b"250-mx.corp.example\r\n250-PIPELINING\r\n250-SIZE 52428800\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n"),
        (b"MAIL FROM:<" + rng.choice(apps.WORDS).encode() + b"@" + client + b">\r\n", b"250 2.1.0 Ok\r\n"),
        (b"RCPT TO:<staff@corp.example>\r\n", b"250 2.1.5 Ok\r\n"),
        (b"DATA\r\n", b"354 End data with <CR><LF>.<CR><LF>\r\n"),
    ]
    for req, resp in dialog:
        conn.request_response(req, resp, think())
    body = apps.smtp_message(rng, ctx.pool, ctx.object_size(6_000, 1.5, 3_000_000), marker)
    conn.request_response(body + b".\r\n", b"250 2.0.0 Ok: queued as %X\r\n" % rng.getrandbits(40), think())
    conn.request_response(b"QUIT\r\n", b"221 2.0.0 Bye\r\n", think())
    conn.close(client_first=False)
    return SID_TCP if marker else 0


def ssh(ctx: Ctx, t0: int, marker: bytes | None) -> int:
    conn = ctx.tcp("ssh", 22, t0, 50)
    conn.handshake()
    rng, pool = ctx.rng, ctx.pool
    banner = b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u2"
    if marker:
        banner += b" " + marker
    conn.send(False, b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u2\r\n", rng.randint(1, 5) * MS)
    conn.send(True, banner + b"\r\n", conn._client_think())
    conn.send(True, apps.ssh_kexinit(pool), conn._client_think())
    conn.send(False, apps.ssh_kexinit(pool), MS)
    conn.send(True, apps.ssh_ecdh_init(pool), conn._client_think())
    conn.send(False, apps.ssh_ecdh_reply(pool) + apps.ssh_packet(b"\x15"), 2 * MS)
    conn.send(True, apps.ssh_packet(b"\x15"), conn._client_think())  # NEWKEYS
    conn.send(True, pool.take(rng.choice((68, 84, 100))), 5 * MS)  # encrypted auth
    conn.send(False, pool.take(rng.choice((68, 84, 500))), 10 * MS)
    for _ in range(max(1, int(rng.randint(10, 60) * min(ctx.scale, 4)))):  # keystrokes and echoes
        conn.t += int(ctx.lognorm(180, 0.9, 20, 3000) * MS)
        conn.send(True, pool.take(36))
        conn.send(False, pool.take(rng.choice((36, 36, 52, 100, 600))), rng.randint(1, 4) * MS)
    ctx.finish(conn)
    return SID_TCP if marker else 0


def bulk(ctx: Ctx, t0: int, marker: bytes | None) -> int:
    conn = ctx.tcp("bulk", 873, t0, ctx.lognorm(200, 0.5, 50, 900))
    conn.handshake()
    rng = ctx.rng
    conn.request_response(b"@RSYNCD: 31.0 sha512 sha256 sha1 md5 md4\n", b"@RSYNCD: 31.0 sha512 sha256\n",
                          2 * MS)
    module = b"backup/" + (marker or b"%08x" % rng.getrandbits(32)) + b"\n"
    conn.request_response(module, b"@RSYNCD: OK\n", 3 * MS)
    size = ctx.object_size(3_000_000, 0.8, 400_000_000, fill_below=6_000_000)
    conn.send(False, ctx.pool.take(size), 5 * MS)
    conn.send(True, b"\0" * 8, conn._client_think())
    conn.close(client_first=True)
    return SID_TCP if marker else 0


def download(ctx: Ctx, t0: int, marker: bytes | None) -> int:
    """An elephant: one HTTP GET of a large object (megabytes) on a fast path; the marker in the request
    header, so it is seen before any stream depth is reached (HTTP is parsed, so a sensor's reassembly
    follows the transfer to its depth: what stream bypass needs)."""
    conn = ctx.tcp("web", 80, t0, ctx.lognorm(400, 0.4, 100, 900))
    conn.handshake()
    size = ctx.object_size(4_000_000, 0.5, 400_000_000, fill_below=2_000_000)
    conn.request_response(apps.http_request(ctx.rng, apps.hostname(ctx.rng), marker),
                          apps.http_response(ctx.pool, size), ctx.rng.randint(1, 10) * MS)
    ctx.finish(conn)
    return SID_TCP if marker else 0


def tiny(ctx: Ctx, t0: int, marker: bytes | None) -> int:
    """A chatty TCP request/response protocol with very small messages (e.g. a cache or RPC)."""
    conn = ctx.tcp("web", 6379, t0, 100)
    conn.handshake()
    rng = ctx.rng
    for i in range(max(1, int(rng.randint(4, 30) * min(ctx.scale, 20)))):
        key = b"k:%d" % rng.getrandbits(16)
        req = b"GET " + (marker if marker and i == 0 else key) + b"\r\n"
        conn.request_response(req, b"$%d\r\n" % rng.randint(1, 9) + ctx.pool.take(rng.randint(1, 9)) + b"\r\n",
                              rng.randint(50, 400) * US)
        conn.t += rng.randint(100, 5000) * US
    ctx.finish(conn)
    return SID_TCP if marker else 0


FlowFn = Callable[[Ctx, int, bytes | None], int]
FLOW_TYPES: dict[str, FlowFn] = {
    "http": http, "tls": tls, "dns": dns, "icmp": icmp, "smtp": smtp, "ssh": ssh, "bulk": bulk, "tiny": tiny,
    "download": download,
}
