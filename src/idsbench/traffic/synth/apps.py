"""Application payloads: HTTP/1.1, TLS 1.2/1.3 records, DNS, SMTP and SSH, well-formed enough
for Suricata's parsers. Opaque content (bodies, ciphertext) comes from a seeded random pool."""

from __future__ import annotations

import base64
import random
import struct
from functools import lru_cache
from itertools import accumulate
from typing import TypeAlias

MARKER = b"idsbench-marker"
Payload: TypeAlias = bytes | memoryview  # bytes, or a view of the pool's (no copy)

WORDS = ["alpha", "bravo", "cdn", "static", "api", "mail", "portal", "intranet", "files", "img",
         "news", "shop", "login", "update", "assets", "video", "docs", "wiki", "crm", "hr"]
TLDS = ["com", "net", "org", "io", "de", "co.uk"]
AGENTS = [b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0",
          b"Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
          b"curl/7.88.1", b"Microsoft-CryptoAPI/10.0", b"python-requests/2.31.0"]
CONTENT_TYPES = [(2_000, b"application/json"), (30_000, b"text/html; charset=utf-8"),
                 (120_000, b"application/javascript"), (600_000, b"image/jpeg"),
                 (1 << 62, b"application/octet-stream")]


class Pool:
    """Deterministic opaque bytes: slices of a seeded random buffer."""

    def __init__(self, rng: random.Random, size: int = 1 << 20):
        self.data = rng.randbytes(size) * 2
        self.view = memoryview(self.data)
        self.size = size
        self.rng = rng

    def take(self, n: int) -> Payload:
        """n opaque bytes: a view of the pool (no copy) up to the pool's size, else a new bytes."""
        if n <= self.size:
            start = self.rng.randrange(self.size)
            return self.view[start:start + n]
        reps, rest = divmod(n, self.size)
        return b"".join([self.view[:self.size]] * reps + [self.take(rest)])

    def text(self, n: int) -> bytes:
        """Base64 lines of 76 characters (a MIME body), about n bytes."""
        raw = base64.b64encode(self.take(max(3, n * 3 // 4)))
        return b"\r\n".join(raw[i:i + 76] for i in range(0, len(raw), 76)) + b"\r\n"


def hostname(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}.{rng.choice(WORDS)}-example.{rng.choice(TLDS)}"


def marker_token(n: int) -> bytes:
    return MARKER + b"-%06d" % n


# -- HTTP ------------------------------------------------------------------------------------
def http_request(rng: random.Random, host: str, marker: bytes | None) -> bytes:
    path = f"/{rng.choice(WORDS)}/{rng.getrandbits(32):08x}.{rng.choice(['html', 'js', 'png', 'json', 'css'])}"
    lines = [b"GET " + path.encode() + b" HTTP/1.1", b"Host: " + host.encode(),
             b"User-Agent: " + rng.choice(AGENTS), b"Accept: */*", b"Accept-Encoding: gzip, deflate",
             b"Connection: keep-alive"]
    if marker:
        lines.append(b"X-Request-Tag: " + marker)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def http_response(pool: Pool, size: int) -> bytes:
    ctype = next(c for limit, c in CONTENT_TYPES if size <= limit)
    head = (b"HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nDate: Tue, 14 Nov 2023 22:13:20 GMT\r\n"
            b"Content-Type: " + ctype + b"\r\nContent-Length: " + str(size).encode() +
            b"\r\nConnection: keep-alive\r\nCache-Control: max-age=3600\r\n\r\n")
    return head + pool.take(size)


# -- TLS -------------------------------------------------------------------------------------
def _ext(etype: int, body: bytes) -> bytes:
    return struct.pack("!HH", etype, len(body)) + body


def _record(ctype: int, body: Payload, version: int = 0x0303) -> bytes:
    return struct.pack("!BHH", ctype, version, len(body)) + body


def _handshake(htype: int, body: bytes) -> bytes:
    return struct.pack("!B", htype) + len(body).to_bytes(3, "big") + body


def tls_client_hello(pool: Pool, sni: str, session_id: Payload, tls13: bool) -> bytes:
    suites = [0x1301, 0x1302, 0x1303, 0xC02B, 0xC02F, 0xC02C, 0xC030, 0xCCA9, 0xCCA8, 0x009C, 0x002F]
    name = sni.encode()
    exts = _ext(0, struct.pack("!HBH", len(name) + 3, 0, len(name)) + name)
    exts += _ext(10, struct.pack("!HHHH", 6, 0x001D, 0x0017, 0x0018))  # supported groups
    exts += _ext(11, b"\x01\x00")  # EC point formats
    exts += _ext(13, struct.pack("!H", 8) + struct.pack("!HHHH", 0x0403, 0x0804, 0x0401, 0x0503))
    exts += _ext(16, struct.pack("!H", 12) + b"\x02h2\x08http/1.1")  # ALPN
    exts += _ext(23, b"")  # extended master secret
    if tls13:
        exts += _ext(43, b"\x04\x03\x04\x03\x03")  # supported versions: 1.3, 1.2
        exts += _ext(51, struct.pack("!HHH", 36, 0x001D, 32) + pool.take(32))  # key share x25519
    body = (struct.pack("!H", 0x0303) + pool.take(32) + bytes([len(session_id)]) + session_id
            + struct.pack("!H", 2 * len(suites)) + b"".join(struct.pack("!H", s) for s in suites)
            + b"\x01\x00" + struct.pack("!H", len(exts)) + exts)
    return _record(22, _handshake(1, body), version=0x0301)


def tls_server_hello(pool: Pool, session_id: Payload, tls13: bool) -> bytes:
    if tls13:
        exts = _ext(43, b"\x03\x04") + _ext(51, struct.pack("!HH", 0x001D, 32) + pool.take(32))
        suite = 0x1301
    else:
        exts = _ext(23, b"") + _ext(65281, b"\x00")  # extended master secret, renegotiation info
        suite = 0xC02F
    body = (struct.pack("!H", 0x0303) + pool.take(32) + bytes([len(session_id)]) + session_id
            + struct.pack("!HB", suite, 0) + struct.pack("!H", len(exts)) + exts)
    return _record(22, _handshake(2, body))


def tls_ccs() -> bytes:
    return _record(20, b"\x01")


def tls_encrypted(pool: Pool, size: int, ctype: int = 23) -> bytes:
    """Ciphertext records (application data by default) carrying about `size` bytes."""
    out = []
    while size > 0:
        n = min(size, 16384)
        out.append(_record(ctype, pool.take(n + 17)))  # + AEAD tag and inner content type
        size -= n
    return b"".join(out)


# -- DNS -------------------------------------------------------------------------------------
QTYPES = [(1, 60), (28, 25), (65, 6), (15, 3), (16, 3), (12, 3)]  # (qtype, weight)
QTYPE_CODES = [q for q, _ in QTYPES]
QTYPE_CUM = list(accumulate(w for _, w in QTYPES))


_DNS_HEADER = struct.Struct("!HHHHHH")
_EDNS0 = b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"  # OPT record, 1232-byte payload


@lru_cache(maxsize=1 << 14)
def dns_name(name: str) -> bytes:
    """Wire form of a name (cached: host names repeat)."""
    out = bytearray()
    for label in name.encode().split(b"."):
        out.append(len(label))
        out += label
    out.append(0)
    return bytes(out)


def dns_label(label: bytes) -> bytes:
    return bytes([len(label)]) + label


def dns_query(txid: int, qname: bytes, qtype: int) -> bytes:
    """A recursive query for the wire-form name `qname`, with an EDNS0 OPT record."""
    return _DNS_HEADER.pack(txid, 0x0100, 1, 0, 0, 1) + qname + struct.pack("!HH", qtype, 1) + _EDNS0


_RESPONSE = struct.Struct("!HHHHH")
_ANSWER = struct.Struct("!HHHIH")  # pointer to the question's name, type, class IN, TTL, rdlength
ADDRESS_COUNTS = (1, 1, 1, 2, 4)


def dns_response(rng: random.Random, pool: Pool, query: bytes, qtype: int, nxdomain: bool) -> bytes:
    txid = query[:2]
    question = query[12:-11]
    if nxdomain:
        return txid + _RESPONSE.pack(0x8183, 1, 0, 0, 0) + question
    count = rng.choice(ADDRESS_COUNTS) if qtype in (1, 28) else 1
    answers = []
    for _ in range(count):
        if qtype == 1:
            rdata = pool.take(4)
        elif qtype == 28:
            rdata = b"\x20\x01\x0d\xb8" + pool.take(12)
        elif qtype == 15:
            rdata = struct.pack("!H", 10) + dns_name(f"mx{rng.randint(1, 3)}.{hostname(rng)}")
        elif qtype == 16:
            txt = b"v=spf1 include:_spf." + rng.choice(WORDS).encode() + b".example ~all"
            rdata = bytes([len(txt)]) + txt
        elif qtype == 12:
            rdata = dns_name(hostname(rng))
        else:  # HTTPS record: priority 1, target ".", alpn h2
            rdata = b"\x00\x01\x00\x00\x01\x00\x03\x02h2"
        answers.append(_ANSWER.pack(0xC00C, qtype, 1, rng.randint(30, 86400), len(rdata)) + rdata)
    return txid + _RESPONSE.pack(0x8180, 1, count, 0, 0) + question + b"".join(answers)


# -- SMTP / SSH ------------------------------------------------------------------------------
def smtp_message(rng: random.Random, pool: Pool, size: int, marker: bytes | None) -> bytes:
    sender = f"{rng.choice(WORDS)}@{hostname(rng)}".encode()
    head = [b"From: <" + sender + b">", b"To: <staff@corp.example>", b"Subject: report " +
            str(rng.getrandbits(20)).encode(), b"Date: Tue, 14 Nov 2023 22:13:20 +0000",
            b"MIME-Version: 1.0", b"Content-Type: application/octet-stream",
            b"Content-Transfer-Encoding: base64"]
    if marker:
        head.append(b"X-Tag: " + marker)
    return b"\r\n".join(head) + b"\r\n\r\n" + pool.text(size)


def ssh_kexinit(pool: Pool) -> bytes:
    lists = [b"curve25519-sha256,ecdh-sha2-nistp256", b"ssh-ed25519,rsa-sha2-512",
             b"chacha20-poly1305@openssh.com,aes128-ctr", b"chacha20-poly1305@openssh.com,aes128-ctr",
             b"umac-64-etm@openssh.com,hmac-sha2-256", b"umac-64-etm@openssh.com,hmac-sha2-256",
             b"none,zlib@openssh.com", b"none,zlib@openssh.com", b"", b""]
    payload = b"\x14" + pool.take(16) + b"".join(struct.pack("!I", len(x)) + x for x in lists) + b"\x00" + b"\0" * 4
    return ssh_packet(payload)


def ssh_packet(payload: bytes) -> bytes:
    pad = 8 - (len(payload) + 5) % 8
    pad += 8 if pad < 4 else 0
    return struct.pack("!IB", len(payload) + pad + 1, pad) + payload + b"\0" * pad


def ssh_string(data: Payload) -> bytes:
    return struct.pack("!I", len(data)) + data


def ssh_ecdh_init(pool: Pool) -> bytes:
    return ssh_packet(b"\x1e" + ssh_string(pool.take(32)))


def ssh_ecdh_reply(pool: Pool) -> bytes:
    host_key = ssh_string(b"ssh-ed25519") + ssh_string(pool.take(32))
    signature = ssh_string(b"ssh-ed25519") + ssh_string(pool.take(64))
    return ssh_packet(b"\x1f" + ssh_string(host_key) + ssh_string(pool.take(32)) + ssh_string(signature))
