"""Parsers of `ethtool` text output (-i, -k, -g, -l, -x, -n rx-flow-hash, -c, -a, and the bare
command's Speed line). Each returns None for a field ethtool did not report ("n/a", unsupported)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from idsbench.probemodel import Channels, Coalesce, Pause, Rings, Rss

# ethtool -n rx-flow-hash field descriptions -> the letters `ethtool -N ... rx-flow-hash` takes.
FLOW_HASH_LETTERS = (
    ("L2DA", "m"),
    ("VLAN tag", "v"),
    ("L3 proto", "t"),
    ("IP SA", "s"),
    ("IP DA", "d"),
    ("L4 bytes 0 & 1", "f"),
    ("L4 bytes 2 & 3", "n"),
)


@dataclass(frozen=True)
class DriverInfo:
    driver: str | None
    version: str | None
    firmware: str | None
    bus_info: str | None


def _value(text: str) -> str | None:
    text = text.strip()
    return None if text in ("", "n/a", "N/A") else text


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    match = re.match(r"-?\d+", text.strip())
    return int(match.group(0)) if match else None


def _onoff(text: str | None) -> bool | None:
    if text is None:
        return None
    word = text.strip().split()[0].lower() if text.strip() else ""
    return {"on": True, "off": False}.get(word)


def parse_driver(text: str) -> DriverInfo:
    fields: dict[str, str | None] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = _value(value)
    return DriverInfo(fields.get("driver"), fields.get("version"), fields.get("firmware-version"),
                      fields.get("bus-info"))


def parse_features(text: str) -> tuple[dict[str, bool], list[str]]:
    """ethtool -k: (feature name -> active, names the driver marks [fixed]); top-level and indented
    sub-features alike."""
    active: dict[str, bool] = {}
    fixed: list[str] = []
    for line in text.splitlines():
        match = re.match(r"^\s*([A-Za-z0-9_-]+):\s+(on|off)\b(.*)$", line)
        if match:
            active[match.group(1)] = match.group(2) == "on"
            if "[fixed]" in match.group(3):
                fixed.append(match.group(1))
    return active, fixed


def _two_sections(text: str) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """-g / -l layout: 'Pre-set maximums:' then 'Current hardware settings:', each `Key: value`."""
    maxima: dict[str, str | None] = {}
    current: dict[str, str | None] = {}
    target: dict[str, str | None] | None = None
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            target = maxima
        elif low.startswith("current hardware settings"):
            target = current
        elif target is not None and ":" in line:
            key, _, value = line.partition(":")
            target[key.strip().lower()] = _value(value)
    return maxima, current


def parse_rings(text: str) -> Rings | None:
    maxima, current = _two_sections(text)
    if not maxima and not current:
        return None
    return Rings(rx=_int_or_none(current.get("rx")), tx=_int_or_none(current.get("tx")),
                 rx_max=_int_or_none(maxima.get("rx")), tx_max=_int_or_none(maxima.get("tx")))


def parse_channels(text: str) -> Channels | None:
    maxima, current = _two_sections(text)
    if not maxima and not current:
        return None
    return Channels(
        rx=_int_or_none(current.get("rx")), tx=_int_or_none(current.get("tx")),
        other=_int_or_none(current.get("other")), combined=_int_or_none(current.get("combined")),
        rx_max=_int_or_none(maxima.get("rx")), tx_max=_int_or_none(maxima.get("tx")),
        other_max=_int_or_none(maxima.get("other")), combined_max=_int_or_none(maxima.get("combined")),
    )


def key_is_symmetric(key: str | None) -> bool | None:
    """A Toeplitz key gives the same hash both ways when it repeats every 2 bytes (e.g. 6D:5A)."""
    if not key:
        return None
    octets = key.lower().split(":")
    if len(octets) < 4:
        return None
    return all(o == octets[i % 2] for i, o in enumerate(octets))


def parse_rss(text: str) -> Rss | None:
    table: list[int] = []
    key: str | None = None
    function: str | None = None
    lines = text.splitlines()
    section = ""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("RX flow hash indirection table"):
            section = "table"
        elif stripped.startswith("RSS hash key"):
            section = "key"
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            key = nxt.lower() if re.fullmatch(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2})+", nxt) else None
        elif stripped.startswith("RSS hash function"):
            section = "function"
        elif section == "table":
            match = re.match(r"^\s*\d+:\s+(.*)$", line)
            if match:
                table += [int(v) for v in match.group(1).split()]
        elif section == "function":
            match = re.match(r"^\s*([A-Za-z0-9_-]+):\s+on\b", line)
            if match:
                function = match.group(1)
    if not table and key is None and function is None:
        return None
    symmetric = key_is_symmetric(key) if (function in (None, "toeplitz")) else None
    return Rss(hash_key=key, indirection=table or None, hash_function=function, symmetric=symmetric)


def parse_flow_hash(text: str) -> str | None:
    """ethtool -n IF rx-flow-hash tcp4 -> "sdfn"; "" when it hashes on nothing; None if unknown."""
    if "use these fields" not in text:
        return None
    letters = ""
    for line in text.splitlines()[1:]:
        for label, letter in FLOW_HASH_LETTERS:
            if line.strip().startswith(label):
                letters += letter
    return letters


def parse_coalesce(text: str) -> Coalesce | None:
    fields: dict[str, str | None] = {}
    adaptive = re.search(r"Adaptive RX:\s*(\S+)\s+TX:\s*(\S+)", text)
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = _value(value)
    if not adaptive and not fields:
        return None
    return Coalesce(
        adaptive_rx=_onoff(adaptive.group(1)) if adaptive else None,
        adaptive_tx=_onoff(adaptive.group(2)) if adaptive else None,
        rx_usecs=_int_or_none(fields.get("rx-usecs")), rx_frames=_int_or_none(fields.get("rx-frames")),
        tx_usecs=_int_or_none(fields.get("tx-usecs")), tx_frames=_int_or_none(fields.get("tx-frames")),
    )


def parse_pause(text: str) -> Pause | None:
    fields: dict[str, str | None] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip().lower()] = _value(value)
    if "rx" not in fields and "tx" not in fields:
        return None
    return Pause(autoneg=_onoff(fields.get("autonegotiate")), rx=_onoff(fields.get("rx")),
                 tx=_onoff(fields.get("tx")))


def parse_speed(text: str) -> int | None:
    """The bare `ethtool IF` Speed line: "10000Mb/s" -> 10000; "Unknown!" -> None."""
    match = re.search(r"^\s*Speed:\s*(\d+)\s*Mb/s", text, re.MULTILINE)
    return int(match.group(1)) if match else None
