"""Suricata -> Snort 3 rule conversion (rules taken from or shaped like ET Open 2024-04-12)."""

from __future__ import annotations

import pytest

from idsbench.sensors.snort.rules import (
    EventFilter,
    NotConvertible,
    active_rule_count,
    comment_out,
    content_length,
    convert_rule,
    convert_rules,
    render_event_filters,
    split_options,
)

ET_HTTP = ('alert http $HOME_NET any -> $EXTERNAL_NET any (msg:"ET ADWARE_PUP ThunderUnion"; '
           'flow:established,to_server; http.method; content:"GET"; http.uri; content:"peerid="; '
           'content:"&userid="; distance:0; http.user_agent; content:"ThunderUnion"; bsize:12; fast_pattern; '
           "reference:md5,ae4c9b58510bd358745caf3b7ad81003; classtype:pup-activity; sid:2033896; rev:1; "
           "metadata:attack_target Client_Endpoint, created_at 2021_09_07;)")
ET_THRESHOLD = ('alert tcp $HOME_NET any -> $EXTERNAL_NET !7680 (msg:"ET P2P BitTorrent peer sync"; '
                'flow:established; content:"|00 00 00 0d 06 00|"; depth:6; threshold: type limit, track by_dst, '
                "seconds 300, count 1; classtype:policy-violation; sid:2000334; rev:13;)")


def test_content_modifiers_are_folded_and_buffers_renamed() -> None:
    out = convert_rule(ET_HTTP)
    assert out.event_filter is None
    assert out.text == (
        'alert http $HOME_NET any -> $EXTERNAL_NET any ( msg:"ET ADWARE_PUP ThunderUnion"; '
        'flow:established,to_server; http_method; content:"GET"; http_uri; content:"peerid="; '
        'content:"&userid=", distance 0; http_header:field user-agent; content:"ThunderUnion", fast_pattern; '
        "bufferlen:12; reference:md5,ae4c9b58510bd358745caf3b7ad81003; classtype:pup-activity; sid:2033896; "
        "rev:1; metadata:attack_target Client_Endpoint, created_at 2021_09_07; )")


def test_threshold_becomes_an_event_filter() -> None:
    out = convert_rule(ET_THRESHOLD)
    assert "threshold" not in out.text and 'content:"|00 00 00 0d 06 00|", depth 6;' in out.text
    assert out.event_filter == EventFilter(1, 2000334, "limit", "by_dst", 1, 300)
    lua = render_event_filters([out.event_filter])
    assert "{ gid = 1, sid = 2000334, type = 'limit', track = 'by_dst', count = 1, seconds = 300 }" in lua
    assert lua.startswith("event_filter = event_filter or { }") and render_event_filters([]) == ""


@pytest.mark.parametrize(("suricata", "snort"), [
    ('content:"abc"; startswith;', 'content:"abc", offset 0, depth 3;'),
    ('content:"|0d 0a|x"; endswith;', 'content:"|0d 0a|x"; isdataat:!1,relative;'),
    ('content:!"&"; distance:0;', 'content:!"&", distance 0;'),
    ('content:"x"; fast_pattern:2,3;', 'content:"x", fast_pattern, fast_pattern_offset 2, fast_pattern_length 3;'),
    ('content:"x"; fast_pattern:only;', 'content:"x", fast_pattern;'),
    ("target:dest_ip;", "target:dst_ip;"),
    ("flowbits:set,a; noalert;", "flowbits:set,a; flowbits:noalert;"),
    ('http.response_body; content:"x"; nocase;', 'file_data; content:"x", nocase;'),
    ('http.host; content:"a.b"; bsize:3;', 'http_header:field host; content:"a.b"; bufferlen:3;'),
    ('pcre:"/^a[0-9]+/Ri";', 'pcre:"/^a[0-9]+/Ri";'),
])
def test_option_conversions(suricata: str, snort: str) -> None:
    text = convert_rule(f'alert tcp any any -> any any (msg:"t"; {suricata} sid:1; rev:1;)').text
    assert text == f'alert tcp any any -> any any ( msg:"t"; {snort} sid:1; rev:1; )'


def test_urilen_goes_last_so_it_moves_no_cursor() -> None:
    text = convert_rule('alert http any any -> any any (urilen:>10; content:"x"; sid:1;)').text
    assert text == 'alert http any any -> any any ( content:"x"; sid:1; http_uri; bufferlen:>10; )'
    raw = convert_rule('alert http any any -> any any (urilen:5,raw; sid:1;)').text
    assert raw.endswith("sid:1; http_raw_uri; bufferlen:5; )")


@pytest.mark.parametrize(("proto", "service"), [("tls", "ssl"), ("smb", "netbios-ssn"), ("tcp-pkt", "tcp"),
                                                ("dns", "dns"), ("http", "http")])
def test_protocols_become_snort_services(proto: str, service: str) -> None:
    assert convert_rule(f'alert {proto} any any -> any any (msg:"t"; sid:1;)').text.startswith(f"alert {service} ")


@pytest.mark.parametrize(("rule_body", "reason"), [
    ('dns.query; content:"x";', "dns.query has no Snort 3 equivalent"),
    ('content:"x"; dotprefix;', "dotprefix has no Snort 3 equivalent"),
    ('pcre:"/a/U";', "pcre flags U"),
    ("nocase;", "nocase does not follow a content"),
    ("threshold: type limit, track by_rule, count 1, seconds 60;", "track by_src|by_dst"),
    ('msg:"x;', "unterminated quoted string"),
])
def test_what_cannot_be_converted_says_why(rule_body: str, reason: str) -> None:
    with pytest.raises(NotConvertible, match=reason.replace("|", r"\|")):
        convert_rule(f"alert tcp any any -> any any ({rule_body} sid:1;)")
    with pytest.raises(NotConvertible, match="no Snort service"):
        convert_rule('alert quic any any -> any any (msg:"t"; sid:1;)')


def test_split_options_and_content_length() -> None:
    assert split_options('msg:"a;b \\" c"; nocase; depth: 4;') == [("msg", '"a;b \\" c"'), ("nocase", None),
                                                                 ("depth", "4")]
    assert content_length('"a|0d 0a|\\"b"') == 5
    assert content_length('!"|00 01 02|"') == 3
    with pytest.raises(NotConvertible):
        content_length("abc")


def test_a_file_keeps_its_line_numbers() -> None:
    lines = ["# a comment", "", ET_HTTP, 'alert dns any any -> any any (msg:"q"; dns.query; content:"x"; sid:5;)',
             ET_THRESHOLD]
    conv = convert_rules(lines)
    out = conv.text.splitlines()
    assert len(out) == len(lines) and out[:2] == lines[:2]
    assert (conv.rules, conv.converted) == (3, 2)
    assert out[3].startswith("# idsbench: not converted (dns.query has no Snort 3 equivalent): alert dns")
    assert conv.reasons == {"dns.query has no Snort 3 equivalent": 1}
    assert [f.sid for f in conv.event_filters] == [2000334]
    assert active_rule_count(conv.text) == 2
    rejected = comment_out(conv.text, [3, 5, 99], "rejected by snort -T")
    assert active_rule_count(rejected) == 0
    assert rejected.splitlines()[2].startswith("# idsbench: rejected by snort -T: alert http")
    assert rejected.splitlines()[3] == out[3]  # already commented: left alone
