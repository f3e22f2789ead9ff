"""Named traffic profiles: which flows, in which proportions, at which default size and rate."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    mix: dict[str, float]  # flow type -> share of flows
    rate_pps: float  # default mean packet rate
    duration_s: float  # default duration (packets = rate x duration)
    marker_rate: float  # default share of flows that carry a marker
    pkts_per_flow: float  # mean packets per flow at size scale 1 (measured; used by `flows=`)


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("mixed", "enterprise-like mix: HTTP/1.1, TLS 1.2/1.3, DNS, SMTP, SSH, bulk TCP, ICMP",
            {"http": 0.30, "tls": 0.27, "dns": 0.30, "icmp": 0.04, "smtp": 0.03, "ssh": 0.03, "bulk": 0.03},
            rate_pps=6_000, duration_s=5.0, marker_rate=0.02, pkts_per_flow=130),
    Profile("web", "browsing: HTTP/1.1 and TLS with their DNS lookups",
            {"http": 0.40, "tls": 0.40, "dns": 0.20}, rate_pps=8_000, duration_s=5.0, marker_rate=0.02,
            pkts_per_flow=60),
    Profile("dns", "DNS over UDP: queries and answers (A, AAAA, HTTPS, MX, TXT, PTR, NXDOMAIN)",
            {"dns": 1.0}, rate_pps=5_000, duration_s=5.0, marker_rate=0.01, pkts_per_flow=2),
    Profile("small-packets", "worst case for packets/s: chatty tiny TCP messages, DNS, ICMP echo",
            {"tiny": 0.5, "dns": 0.4, "icmp": 0.1}, rate_pps=20_000, duration_s=5.0, marker_rate=0.01,
            pkts_per_flow=40),
    Profile("bulk", "elephant flows: a few long TCP transfers of large segments",
            {"bulk": 1.0}, rate_pps=20_000, duration_s=5.0, marker_rate=0.5, pkts_per_flow=3_100),
    # a few HTTP downloads of megabytes carry most packets (parsed by the sensor, so its reassembly reaches
    # the stream depth: what stream bypass needs), beside many small flows; markers in both kinds
    Profile("elephants", "a few long HTTP downloads carrying most packets, plus many small HTTP, DNS and "
            "chatty TCP flows", {"download": 0.03, "http": 0.3, "dns": 0.4, "tiny": 0.27}, rate_pps=20_000,
            duration_s=5.0, marker_rate=0.1, pkts_per_flow=130),
)}
