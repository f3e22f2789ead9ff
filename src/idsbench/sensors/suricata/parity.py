"""The ground truth (`suricata -r`) run with the live sample's detection-relevant settings, or the rules only
one of the two can fire named and left out of the recall (issue 41 item 1).

A live sample reads its wire with a capture method whose settings `suricata -r` does not share:
- checksums: the live capture section's `checksum-checks` (idsbench writes `no` for af-packet and pcap; AF_XDP
  never validates) against `pcap-file.checksum-checks` (default `auto`) offline. The truth runs with the live
  mode (`--set pcap-file.checksum-checks=…`): no, yes and auto mean the same for both. `kernel` (af-packet's
  own default, e.g. under an overlay that drops idsbench's setting) validates only what the kernel did not
  mark, which a file read cannot mirror: the truth validates (`yes`) and the checksum rules it fired are left
  out of the recall, named.
- defrag: af-packet in `cluster_flow` with `defrag: yes` (idsbench's setting, and Suricata's default) joins
  the kernel's fanout with its defrag flag, so IPv4 fragments reach the live Suricata reassembled; offline
  Suricata sees the fragments. Rules that fire on IPv4 fragments only (the `ipv4.frag_*` decoder events,
  `fragoffset`, `fragbits` with M) can then fire offline only: those the truth fired are left out, named.
Stream, flow, detection and threshold settings are the same file for both (the run's rendered config, its
overlay and `--set` overrides; `threshold-file` is dropped in both).

The live settings are read from Suricata itself: `suricata --dump-config` on the config a live sample renders
(overlay and overrides applied), so an overlay that replaces idsbench's capture section is seen as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

# the capture method's section in suricata.yaml, and the defaults Suricata applies where it says nothing
SECTION = {"af-packet": "af-packet", "af-packet-v2": "af-packet", "af-xdp": "af-xdp", "pcap": "pcap"}
DEFAULT_CHECKSUMS = {"af-packet": "kernel", "pcap": "auto", "af-xdp": "no"}
# rules that test a checksum (Suricata's decoder-events: sids 2200073-2200077 and more)
CHECKSUM_KEYWORD = re.compile(r"(?:^|[;(\s])(?:ipv4|tcpv4|tcpv6|udpv4|udpv6|icmpv4|icmpv6)-csum\s*:")
# rules that fire on IPv4 fragments only (the kernel's fanout defrag hands reassembled datagrams to Suricata)
FRAGMENT_KEYWORD = re.compile(r"decode-event\s*:\s*ipv4\.frag_|(?:^|[;(\s])fragoffset\s*:|"
                              r"(?:^|[;(\s])fragbits\s*:\s*[!+*]?[A-Z]*M")
_SID = re.compile(r"(?:^|[;(\s])sid\s*:\s*(\d+)\s*;")
_YES = ("yes", "true", "on", "1", "enable", "enabled")


@dataclass(frozen=True)
class LiveCapture:
    """The detection-relevant settings of a live sample's capture, as Suricata reads its config."""

    method: str
    checksum_checks: str      # no | yes | auto | kernel
    kernel_defrag: bool       # IPv4 fragments reach Suricata reassembled by the kernel (af-packet fanout)


@dataclass(frozen=True)
class OfflineParity:
    """How `suricata -r` runs to match a live sample, and what it cannot match."""

    sets: dict[str, str]                                        # --set key=value for the offline run
    checksum_rules_excluded: str | None = None                  # why checksum rules are left out (None: kept)
    fragment_rules_excluded: str | None = None                  # why IPv4-fragment rules are left out

    def excluded(self, fired: Iterable[int], rule_files: Iterable[Path]) -> dict[int, str]:
        """The sids among `fired` (the truth's) that only one configuration can fire, each with why."""
        reasons = [(CHECKSUM_KEYWORD, self.checksum_rules_excluded), (FRAGMENT_KEYWORD, self.fragment_rules_excluded)]
        active = [(pattern, why) for pattern, why in reasons if why]
        wanted = set(fired)
        if not active or not wanted:
            return {}
        out: dict[int, str] = {}
        for path in rule_files:
            for line in Path(path).read_text(errors="replace").splitlines():
                sid = _SID.search(line)
                if sid is None or int(sid.group(1)) not in wanted or line.lstrip().startswith("#"):
                    continue
                for pattern, why in active:
                    if why is not None and pattern.search(line):
                        out[int(sid.group(1))] = why
        return dict(sorted(out.items()))


def parse_dump(text: str) -> dict[str, str]:
    """`suricata --dump-config` output (`key = value` lines) as a mapping."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" = ")
        if sep and key and " " not in key:
            out[key.strip()] = value.strip()
    return out


def _entry(dump: Mapping[str, str], section: str, interface: str) -> tuple[str | None, str | None]:
    """(the interface's list entry prefix, the `default` entry's prefix) in the capture section."""
    mine = default = None
    i = 0
    while f"{section}.{i}" in dump or f"{section}.{i}.interface" in dump:
        name = dump.get(f"{section}.{i}.interface")
        if name == interface and mine is None:
            mine = f"{section}.{i}"
        elif name == "default" and default is None:
            default = f"{section}.{i}"
        i += 1
    return mine, default


def _value(dump: Mapping[str, str], entries: tuple[str | None, str | None], key: str) -> str | None:
    for prefix in entries:
        if prefix is not None and f"{prefix}.{key}" in dump and dump[f"{prefix}.{key}"] != "(null)":
            return dump[f"{prefix}.{key}"]
    return None


def live_capture(dump: Mapping[str, str], method: str, interface: str) -> LiveCapture:
    """The live capture's settings for `interface` from Suricata's dumped config (its entry, else the
    `default` entry, else Suricata's own defaults)."""
    section = SECTION.get(method, "af-packet")
    entries = _entry(dump, section, interface)
    if section == "af-xdp":  # AF_XDP marks every packet "ignore checksum" (source-af-xdp.c)
        return LiveCapture(method, "no", False)
    checks = (_value(dump, entries, "checksum-checks") or DEFAULT_CHECKSUMS[section]).lower()
    checks = "yes" if checks in _YES else "no" if checks in ("no", "false", "off", "0") else checks
    defrag = False
    if section == "af-packet":
        cluster = _value(dump, entries, "cluster-type") or "cluster_flow"
        setting = _value(dump, entries, "defrag")
        defrag = cluster == "cluster_flow" and (setting is None or setting.lower() in _YES)
    return LiveCapture(method, checks, defrag)


def offline_parity(live: LiveCapture) -> OfflineParity:
    """The `suricata -r` settings that match `live`, and what they cannot match."""
    checks = live.checksum_checks
    checksum_why = None
    if checks not in ("no", "yes", "auto"):
        checksum_why = (f"checksum rule: the live capture validates checksums as `checksum-checks: {checks}` "
                        "(only where the kernel did not mark them), which `suricata -r` cannot mirror")
        checks = "yes"
    fragment_why = None
    if live.kernel_defrag:
        fragment_why = ("IPv4-fragment rule: the live af-packet capture (cluster_flow, defrag: yes) gets IPv4 "
                        "fragments reassembled by the kernel, `suricata -r` sees the fragments")
    return OfflineParity({"pcap-file.checksum-checks": checks}, checksum_why, fragment_why)
