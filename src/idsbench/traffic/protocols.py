"""Protocol tables and capture magic numbers: plain Python, no numpy, so `trace info` (native
path) starts fast. `dissect` and `pcapfmt` re-export what they used to define."""

from __future__ import annotations

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D
FORMAT_FIX = "give a classic pcap or pcapng capture (e.g. convert with `editcap -F pcap IN OUT`)"
CORRUPT_FIX = FORMAT_FIX + "; if it was cut short, re-capture or trim it with editcap."

PROTO_NAMES = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp", 47: "gre", 50: "esp"}
WELL_KNOWN_PORTS = {
    20: "ftp-data", 21: "ftp", 22: "ssh", 23: "telnet", 25: "smtp", 53: "dns", 67: "dhcp", 68: "dhcp",
    69: "tftp", 80: "http", 88: "kerberos", 110: "pop3", 123: "ntp", 135: "msrpc", 137: "netbios",
    138: "netbios", 139: "netbios", 143: "imap", 161: "snmp", 162: "snmp", 389: "ldap", 443: "https",
    445: "smb", 465: "smtps", 502: "modbus", 514: "syslog", 587: "submission", 636: "ldaps",
    993: "imaps", 995: "pop3s", 1433: "mssql", 1883: "mqtt", 3306: "mysql", 3389: "rdp",
    5060: "sip", 5353: "mdns", 5432: "postgres", 6881: "bittorrent", 8080: "http-alt", 8443: "https-alt",
}


def detect_format(head: bytes) -> str | None:
    if len(head) >= 4:
        le = int.from_bytes(head[:4], "little")
        if le in (PCAP_MAGIC_US, PCAP_MAGIC_NS) or int.from_bytes(head[:4], "big") in (
                PCAP_MAGIC_US, PCAP_MAGIC_NS):
            return "pcap"
        if le == PCAPNG_SHB:
            return "pcapng"
    return None


def ordered_tally(pk: list[int], by: list[int], names: list[str]) -> dict[str, dict[str, int]]:
    """{name: {"packets", "bytes"}} for the names with packets, most packets first (ties in name order)."""
    order = sorted(range(len(names)), key=lambda i: -pk[i])
    return {names[i]: {"packets": int(pk[i]), "bytes": int(by[i])} for i in order if pk[i]}
