"""Benchmark idsbench's streaming eve.json reader against a line-by-line json.loads baseline.

    .venv/bin/python benchmarks/bench_eve.py [--size-mb 600] [--stats-every 20000] [--keep DIR]

Builds a synthetic but Suricata-shaped eve.json (alert/flow/http/dns/tls records, a full nested
stats record every N lines) in a temp dir, then times: idsbench (count per event_type + parse
every stats record) and the baseline (json.loads every line, count event_type, keep stats).
Both must agree on every count. Target: idsbench >= 5x the baseline.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from common import finish
from idsbench.sensors.suricata.eve import scan_eve

_J = {"separators": (",", ":")}


def _ts(i: int) -> str:
    return f"2024-04-12T10:{(i // 60) % 60:02d}:{i % 60:02d}.{(i * 7919) % 1000000:06d}+0000"


def _ip(rng: random.Random) -> str:
    return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


def _base(rng: random.Random, i: int, et: str, proto: str = "TCP") -> dict:
    return {"timestamp": _ts(i), "flow_id": rng.randrange(1 << 50), "in_iface": "sen0",
            "event_type": et, "src_ip": _ip(rng), "src_port": rng.randrange(1024, 65535),
            "dest_ip": _ip(rng), "dest_port": rng.choice([80, 443, 53, 8080]), "proto": proto}


def _alert(rng: random.Random, i: int) -> dict:
    r = _base(rng, i, "alert")
    sid = rng.randrange(2000000, 2050000)
    r.update({"pkt_src": "wire/pcap", "tx_id": 0, "alert": {
        "action": "allowed", "gid": 1, "signature_id": sid, "rev": 3,
        "signature": f'ET POLICY Suspicious "quoted" User-Agent {sid} (Inbound)',
        "category": "Potentially Bad Traffic", "severity": 2,
        "metadata": {"created_at": ["2010_07_30"], "updated_at": ["2019_09_27"],
                     "signature_severity": ["Informational"]}},
        "http": {"hostname": "example.com", "url": f"/path/{i}?q=1", "http_user_agent": "curl/8.1",
                 "http_content_type": "text/html", "http_method": "GET", "protocol": "HTTP/1.1",
                 "status": 200, "length": rng.randrange(100000)},
        "app_proto": "http", "direction": "to_server",
        "flow": {"pkts_toserver": 5, "pkts_toclient": 4, "bytes_toserver": 600, "bytes_toclient": 3000,
                 "start": _ts(i - 3), "src_ip": r["src_ip"], "dest_ip": r["dest_ip"]}})
    return r


def _flow(rng: random.Random, i: int) -> dict:
    r = _base(rng, i, "flow", rng.choice(["TCP", "UDP"]))
    r.update({"app_proto": rng.choice(["http", "tls", "dns", "failed"]), "flow": {
        "pkts_toserver": rng.randrange(1, 500), "pkts_toclient": rng.randrange(0, 900),
        "bytes_toserver": rng.randrange(60, 10**6), "bytes_toclient": rng.randrange(0, 10**7),
        "start": _ts(i - 30), "end": _ts(i), "age": 30, "state": "closed", "reason": "timeout",
        "alerted": False}, "tcp": {"tcp_flags": "1b", "tcp_flags_ts": "1b", "tcp_flags_tc": "1b",
                                   "syn": True, "fin": True, "psh": True, "ack": True, "state": "closed"}})
    return r


def _http(rng: random.Random, i: int) -> dict:
    r = _base(rng, i, "http")
    r.update({"tx_id": rng.randrange(4), "http": {
        "hostname": f"host{rng.randrange(1000)}.example.org", "url": f"/a/b/c/{i}.js",
        "http_user_agent": "Mozilla/5.0 (X11; Linux x86_64; rv:124.0) Gecko/20100101 Firefox/124.0",
        "http_content_type": "application/javascript", "http_refer": "https://example.org/",
        "http_method": "GET", "protocol": "HTTP/1.1", "status": 200, "length": rng.randrange(10**6)}})
    return r


def _dns(rng: random.Random, i: int) -> dict:
    r = _base(rng, i, "dns", "UDP")
    r["dns"] = {"type": "query", "id": rng.randrange(65536), "rrname": f"n{i % 977}.example.net",
                "rrtype": "A", "tx_id": 0, "opcode": 0}
    return r


def stats_record(i: int) -> dict:
    """A full nested stats record shaped like Suricata 7's totals (a few hundred counters)."""
    n = i * 1000
    dec = {k: n // 3 for k in ("pkts", "bytes", "invalid", "ipv4", "ipv6", "ethernet", "tcp", "udp",
                              "icmpv4", "icmpv6", "vlan", "vlan_qinq", "gre", "mpls", "teredo")}
    dec["event"] = {layer: {f"ev_{j}": 0 for j in range(12)} for layer in
                    ("ipv4", "icmpv4", "icmpv6", "ipv6", "tcp", "udp", "ethernet", "vlan", "gre")}
    return {"timestamp": _ts(i), "event_type": "stats", "stats": {
        "uptime": i, "capture": {"kernel_packets": n, "kernel_drops": 0, "errors": 0},
        "decoder": dec,
        "flow": {"total": n // 10, "tcp": n // 20, "udp": n // 20, "wrk": {f"c{j}": j for j in range(10)},
                 "end": {"state": {f"s{j}": j for j in range(6)}}},
        "tcp": {f"c{j}": j for j in range(40)},
        "detect": {"engines": [{"id": 0, "last_reload": _ts(0), "rules_loaded": 24827,
                                "rules_failed": 0, "rules_skipped": 0}], "alert": n // 100},
        "app_layer": {"flow": {p: n // 50 for p in ("http", "tls", "dns_udp", "smb", "ftp")},
                      "tx": {p: n // 40 for p in ("http", "tls", "dns_udp", "smb", "ftp")}},
        "flow_mgr": {f"c{j}": j for j in range(12)}, "memcap": {f"m{j}": j for j in range(8)}}}


def build(path: Path, size_mb: int, stats_every: int, seed: int = 1) -> Counter[str]:
    """Write ~size_mb MB; return the true count per event_type."""
    rng = random.Random(seed)
    makers = [(_alert, 0.25), (_flow, 0.40), (_http, 0.25), (_dns, 0.10)]
    pool = [json.dumps(m(rng, i), **_J).encode() + b"\n"
            for i in range(4000) for m in [rng.choices([m for m, _ in makers], [w for _, w in makers])[0]]]
    pool_types = [json.loads(line)["event_type"] for line in pool]
    target, written, line_no, k = size_mb * 1_000_000, 0, 0, 0
    truth: Counter[str] = Counter()
    with path.open("wb", buffering=8 << 20) as f:
        while written < target:
            batch = []
            for _ in range(stats_every):
                j = (line_no * 7 + k) % len(pool)
                batch.append(pool[j])
                truth[pool_types[j]] += 1
                line_no += 1
            k += 1
            batch.append(json.dumps(stats_record(k), **_J).encode() + b"\n")
            truth["stats"] += 1
            data = b"".join(batch)
            f.write(data)
            written += len(data)
    return truth


def baseline(path: Path) -> tuple[Counter[str], int]:
    counts: Counter[str] = Counter()
    stats = 0
    with path.open("rb") as f:
        for line in f:
            rec = json.loads(line)
            counts[rec["event_type"]] += 1
            if rec["event_type"] == "stats":
                stats += 1
    return counts, stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=600)
    ap.add_argument("--stats-every", type=int, default=20000, help="lines between stats records")
    ap.add_argument("--keep", type=Path, help="write the file here and keep it")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-eve-") as tmp:
        path = (args.keep or Path(tmp)) / "eve.json"
        t = time.perf_counter()
        truth = build(path, args.size_mb, args.stats_every)
        mb = path.stat().st_size / 1e6
        print(f"built {path} ({mb:.0f} MB, {sum(truth.values())} lines) in {time.perf_counter() - t:.1f} s")

        records: list[dict] = []
        t = time.perf_counter()
        scan = scan_eve(path, ("stats",), records.append)
        ours = time.perf_counter() - t
        t = time.perf_counter()
        base_counts, base_stats = baseline(path)
        theirs = time.perf_counter() - t

        ok = scan.events == truth == base_counts and len(records) == base_stats == truth["stats"]
        print(f"idsbench eve reader : {mb / ours:8.1f} MB/s ({ours:.2f} s)")
        print(f"json.loads per line : {mb / theirs:8.1f} MB/s ({theirs:.2f} s)")
        print(f"speed-up            : {theirs / ours:8.1f}x  (target >= 5x)   counts agree: {ok}")
        misses = [] if ok else ["the readers' counts differ"]
        if theirs / ours < 5:
            misses.append(f"speed-up {theirs / ours:.1f}x < 5x")
        return finish(misses)


if __name__ == "__main__":
    sys.exit(main())
