"""Suricata-flavoured rules -> Snort 3 rules, for what has an equivalent (docs/snort.md, "Rules").

Snort 3 rejects most Suricata rules as they are (ET Open 2024-04-12: 24,369 of 24,827). The main
differences, and what this converter does with them:
- content modifiers are separate options in Suricata (`content:"x"; nocase; depth:4;`) and
  sub-options of content in Snort 3 (`content:"x", nocase, depth 4;`): folded in;
- sticky buffers have other names (`http.uri` -> `http_uri`, `http.user_agent` -> `http_header:field
  user-agent`, `http.response_body`/`file.data` -> `file_data`, ...): renamed;
- `startswith` -> `offset 0, depth <length>`; `endswith` -> `isdataat:!1,relative` after the
  content; `bsize` -> `bufferlen`; `urilen` -> `http_uri; bufferlen` at the end of the rule;
  `target:dest_ip` -> `target:dst_ip`; `noalert` -> `flowbits:noalert`;
- application-layer protocols in the header are Snort service names (`tls` -> `ssl`, `smb` ->
  `netbios-ssn`; `tcp-pkt`/`tcp-stream` -> `tcp`): Snort accepts any word there, and a service name
  it never assigns would silently never match;
- `threshold:` has no rule option in Snort 3: it becomes an `event_filter` entry (type, track,
  count, seconds) for the rule's gid/sid, rendered into snort.lua (`render_event_filters`).
A rule using something without an equivalent (dns.query, tls.sni, ja3, dotprefix, http.header_names,
xbits, flowint, app-layer-event, Suricata-only pcre flags, ...) is not converted; the reason is kept.
Snort itself is the judge of the rest: `snort -T` names every rule it still rejects (snort_log).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

SERVICE_OF = {"tls": "ssl", "smb": "netbios-ssn", "tcp-pkt": "tcp", "tcp-stream": "tcp"}
KEEP_PROTOCOLS = {"tcp", "udp", "icmp", "ip", "http", "http2", "dns", "smtp", "ftp", "ftp-data", "ssh", "ssl", "netbios-ssn",
                  "dcerpc", "imap", "pop3", "sip", "modbus", "dnp3", "telnet"}
_HEADER_FIELDS = {"http.user_agent": "user-agent", "http.host": "host", "http.referer": "referer",
                  "http.content_type": "content-type", "http.content_len": "content-length",
                  "http.accept": "accept", "http.accept_enc": "accept-encoding",
                  "http.accept_lang": "accept-language", "http.connection": "connection",
                  "http.location": "location", "http.server": "server"}
STICKY = {"http.uri": "http_uri", "http.uri.raw": "http_raw_uri", "http.method": "http_method",
          "http.header": "http_header", "http.header.raw": "http_raw_header", "http.cookie": "http_cookie",
          "http.request_body": "http_client_body", "http.response_body": "file_data", "file.data": "file_data",
          "file_data": "file_data", "http.stat_code": "http_stat_code", "http.stat_msg": "http_stat_msg",
          "http.request_line": "http_raw_request", "http.response_line": "http_raw_status",
          "http.protocol": "http_version", "http.host.raw": "http_raw_header:field host",
          "pkt_data": "pkt_data", "base64_data": "base64_data",
          **{k: f"http_header:field {v}" for k, v in _HEADER_FIELDS.items()}}
CONTENT_MODIFIERS = {"nocase", "depth", "offset", "distance", "within", "fast_pattern", "startswith",
                     "endswith"}
# Options Snort 3 takes as Suricata writes them.
PASS_THROUGH = {"msg", "sid", "rev", "gid", "classtype", "reference", "metadata", "priority", "flow",
                "flowbits", "dsize", "itype", "icode", "icmp_id", "icmp_seq", "flags", "ttl", "tos", "id",
                "ip_proto", "seq", "ack", "window", "fragbits", "fragoffset", "isdataat", "byte_test",
                "byte_jump", "byte_extract", "byte_math", "base64_decode", "detection_filter",
                "ipopts", "rpc"}
SNORT_PCRE_FLAGS = set("ismxAEGOR")
THRESHOLD_TYPES = {"limit", "threshold", "both"}


class NotConvertible(ValueError):
    """The rule uses something Snort 3 has no equivalent for; str() is the reason."""


@dataclass(frozen=True)
class EventFilter:
    """A Suricata `threshold:` as a Snort 3 event_filter entry."""

    gid: int
    sid: int
    type: str
    track: str
    count: int
    seconds: int


@dataclass(frozen=True)
class Converted:
    text: str
    event_filter: EventFilter | None = None


def split_options(body: str) -> list[tuple[str, str | None]]:
    """`a; b:c; d:"x;y";` -> [(a, None), (b, "c"), (d, '"x;y"')] (`;` inside quotes or escaped stays)."""
    out: list[tuple[str, str | None]] = []
    current: list[str] = []
    quoted = escaped = False
    for ch in body:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            current.append(ch)
            escaped = True
        elif ch == '"':
            current.append(ch)
            quoted = not quoted
        elif ch == ";" and not quoted:
            _append_option(out, "".join(current))
            current = []
        else:
            current.append(ch)
    if quoted:
        raise NotConvertible("unterminated quoted string")
    if "".join(current).strip():
        raise NotConvertible("option list does not end with ';'")
    return out


def _append_option(out: list[tuple[str, str | None]], text: str) -> None:
    text = text.strip()
    if not text:
        return
    name, sep, value = text.partition(":")
    out.append((name.strip(), value.strip() if sep else None))


def content_length(quoted: str) -> int:
    """Bytes a content string matches: `"a|0d 0a|\\"b"` -> 5."""
    text = quoted.strip()
    if text.startswith("!"):
        text = text[1:].strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise NotConvertible(f"content {quoted[:40]!r} is not a quoted string")
    inner, n, i = text[1:-1], 0, 0
    while i < len(inner):
        if inner[i] == "|":
            end = inner.index("|", i + 1)
            n += len(inner[i + 1:end].replace(" ", "")) // 2
            i = end + 1
        elif inner[i] == "\\":
            n, i = n + 1, i + 2
        else:
            n, i = n + 1, i + 1
    return n


@dataclass
class _Content:
    value: str
    modifiers: list[str] = field(default_factory=list)
    ends: bool = False
    after: list[str] = field(default_factory=list)  # options written between it and its modifiers

    def render(self) -> list[str]:
        text = "content:" + ", ".join([self.value, *self.modifiers])
        return [text, *(["isdataat:!1,relative"] if self.ends else []), *self.after]


def _content_modifier(content: _Content, name: str, value: str | None) -> None:
    if name == "nocase":
        content.modifiers.append("nocase")
    elif name == "fast_pattern":
        content.modifiers.append("fast_pattern")
        if value and value != "only":
            offset, _, length = value.partition(",")
            content.modifiers += [f"fast_pattern_offset {offset.strip()}", f"fast_pattern_length {length.strip()}"]
    elif name == "startswith":
        content.modifiers += ["offset 0", f"depth {content_length(content.value)}"]
    elif name == "endswith":
        content.ends = True
    elif value is None:
        raise NotConvertible(f"{name} without a value")
    else:
        content.modifiers.append(f"{name} {value}")


def _threshold(value: str, gid: int, sid: int) -> EventFilter:
    parts = dict(p.strip().split(None, 1) for p in value.split(",") if p.strip())
    kind, track = parts.get("type", ""), parts.get("track", "")
    if kind not in THRESHOLD_TYPES or track not in ("by_src", "by_dst"):
        raise NotConvertible(f"threshold {value!r}: Snort's event_filter takes type limit|threshold|both, "
                             "track by_src|by_dst")
    try:
        return EventFilter(gid, sid, kind, track, int(parts["count"]), int(parts["seconds"]))
    except (KeyError, ValueError):
        raise NotConvertible(f"threshold {value!r} lacks count/seconds") from None


def _pcre(value: str) -> str:
    found = re.fullmatch(r'(!?)"/(.*)/([A-Za-z]*)"', value, re.DOTALL)
    if not found:
        raise NotConvertible(f"pcre {value[:40]!r} is not /re/flags")
    bad = set(found.group(3)) - SNORT_PCRE_FLAGS
    if bad:
        raise NotConvertible(f"pcre flags {''.join(sorted(bad))} (Suricata buffer flags)")
    return value


_HEADER = re.compile(r"^(?P<action>\w+)\s+(?P<proto>[\w-]+)\s+(?P<rest>[^(]*?)\s*\((?P<body>.*)\)\s*$", re.DOTALL)


def convert_rule(line: str) -> Converted:
    """One Suricata rule -> Snort 3; NotConvertible says why not."""
    found = _HEADER.match(line.strip())
    if not found:
        raise NotConvertible("not a rule")
    proto = found.group("proto")
    proto = SERVICE_OF.get(proto, proto)
    if proto not in KEEP_PROTOCOLS:
        raise NotConvertible(f"protocol {found.group('proto')} has no Snort service")
    options = split_options(found.group("body"))
    ints = {n: v for n, v in options if n in ("sid", "gid") and v is not None}
    sid, gid = int(ints.get("sid", "0")), int(ints.get("gid", "1"))
    out: list[str] = []
    tail: list[str] = []
    content: _Content | None = None
    event_filter: EventFilter | None = None

    def flush() -> None:
        nonlocal content
        if content is not None:
            out.extend(content.render())
            content = None

    for name, value in options:
        if name == "bsize" and content is not None:  # often between a content and its modifiers
            content.after.append(f"bufferlen:{value}")
            continue
        if name in CONTENT_MODIFIERS:
            if content is None:
                raise NotConvertible(f"{name} does not follow a content")
            _content_modifier(content, name, value)
            continue
        flush()
        if name == "content":
            if value is None:
                raise NotConvertible("content without a value")
            content = _Content(value)
        elif name in STICKY and value is None:
            out.append(STICKY[name])
        elif name == "bsize":
            out.append(f"bufferlen:{value}")
        elif name == "urilen":
            length, _, kind = (value or "").partition(",")
            tail += ["http_raw_uri" if kind.strip() == "raw" else "http_uri", f"bufferlen:{length.strip()}"]
        elif name == "target":
            out.append("target:" + {"dest_ip": "dst_ip"}.get((value or "").strip(), (value or "").strip()))
        elif name == "noalert":
            out.append("flowbits:noalert")
        elif name == "threshold":
            event_filter = _threshold(value or "", gid, sid)
        elif name == "pcre":
            out.append("pcre:" + _pcre(value or ""))
        elif name in PASS_THROUGH:
            out.append(name if value is None else f"{name}:{value}")
        else:
            raise NotConvertible(f"{name} has no Snort 3 equivalent")
    flush()
    # urilen's buffer goes last so it does not move the cursor of the options before it
    body = "; ".join(out + tail)
    text = f"{found.group('action')} {proto} {found.group('rest').strip()} ( {body}; )".replace("  ", " ")
    return Converted(text, event_filter)


@dataclass(frozen=True)
class Conversion:
    """A rule file converted: `text` has one line per input line (a rule Snort cannot take is
    commented out with its reason), so Snort's line numbers are the input's."""

    text: str
    rules: int
    converted: int
    event_filters: tuple[EventFilter, ...]
    reasons: dict[str, int]  # why rules were not converted, counted ("dns.query has no ...": 3823)


def convert_rules(lines: Iterable[str]) -> Conversion:
    """Convert every active rule (commented-out and blank lines stay as they are)."""
    out: list[str] = []
    filters: list[EventFilter] = []
    reasons: Counter[str] = Counter()
    rules = converted = 0
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
            continue
        rules += 1
        try:
            result = convert_rule(line)
        except NotConvertible as exc:
            reasons[str(exc)] += 1
            out.append(f"# idsbench: not converted ({exc}): {line}")
            continue
        converted += 1
        out.append(result.text)
        if result.event_filter is not None:
            filters.append(result.event_filter)
    return Conversion("\n".join(out) + "\n", rules, converted, tuple(filters), dict(reasons))


def comment_out(text: str, line_numbers: Iterable[int], reason: str) -> str:
    """Comment out the given (1-based) lines, e.g. the rules `snort -T` rejected."""
    numbers = set(line_numbers)
    lines = text.splitlines()
    for n in numbers:
        if 1 <= n <= len(lines) and not lines[n - 1].lstrip().startswith("#"):
            lines[n - 1] = f"# idsbench: {reason}: {lines[n - 1]}"
    return "\n".join(lines) + "\n"


def render_event_filters(filters: Iterable[EventFilter]) -> str:
    """snort.lua lines declaring the event filters (append to any the config already has)."""
    entries = [f"    {{ gid = {f.gid}, sid = {f.sid}, type = '{f.type}', track = '{f.track}', "
               f"count = {f.count}, seconds = {f.seconds} }},\n" for f in filters]
    if not entries:
        return ""
    return "event_filter = event_filter or { }\nfor _, f in ipairs({\n" + "".join(entries) + \
        "}) do table.insert(event_filter, f) end\n"


def active_rule_count(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
