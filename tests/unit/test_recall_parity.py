"""The ground truth compares like with like (issue 41 item 1): `suricata -r` takes the live capture's checksum
mode; what it cannot mirror (af-packet's `kernel` checksum mode, the kernel's IPv4 defrag on a cluster_flow
fanout) leaves the rules only one side can fire out of the recall, named. Pure logic here; the real Suricata
runs in tests/integration/test_recall_parity.py."""

from __future__ import annotations

from pathlib import Path

from idsbench.analysis.detection import recall
from idsbench.sensors.suricata.parity import LiveCapture, live_capture, offline_parity, parse_dump

RULES = """\
alert ip any any -> any any (msg:"SURICATA IPv4 invalid checksum"; ipv4-csum:invalid; sid:2200073; rev:2;)
alert tcp any any -> any any (msg:"SURICATA TCPv4 invalid checksum"; tcpv4-csum:invalid; sid:2200074; rev:2;)
alert pkthdr any any -> any any (msg:"SURICATA FRAG IPv4 Fragmentation overlap"; decode-event:ipv4.frag_overlap; sid:2200070; rev:2;)
alert pkthdr any any -> any any (msg:"SURICATA FRAG IPv6 Fragmentation overlap"; decode-event:ipv6.frag_overlap; sid:2200072; rev:2;)
alert ip any any -> any any (msg:"more fragments"; fragbits:M; sid:9000001; rev:1;)
alert ip any any -> any any (msg:"dont fragment"; fragbits:D; sid:9000002; rev:1;)
alert tcp any any -> any any (msg:"SURICATA STREAM 3way handshake wrong seq"; stream-event:3whs_wrong_seq_wrong_ack; sid:2210010; rev:2;)
# alert tcp any any -> any any (msg:"commented"; tcpv4-csum:invalid; sid:9000003; rev:1;)
"""

DUMP = """\
af-packet = (null)
af-packet.0 = interface
af-packet.0.interface = lo
af-packet.0.threads = 1
af-packet.0.cluster-type = cluster_flow
af-packet.0.defrag = yes
af-packet.0.checksum-checks = no
af-packet.1 = interface
af-packet.1.interface = default
pcap-file.checksum-checks = auto
"""


def test_idsbenchs_live_config_is_mirrored_exactly() -> None:
    live = live_capture(parse_dump(DUMP), "af-packet", "lo")
    assert live == LiveCapture("af-packet", "no", True)
    match = offline_parity(live)
    assert match.sets == {"pcap-file.checksum-checks": "no"} and match.checksum_rules_excluded is None


def test_an_overlay_without_checksum_checks_runs_the_kernel_mode_which_is_named(tmp_path: Path) -> None:
    """An overlay that replaces the af-packet section without checksum-checks: Suricata's default, `kernel`."""
    dump = DUMP.replace("af-packet.0.checksum-checks = no\n", "").replace("af-packet.0.interface = lo",
                                                                           "af-packet.0.interface = eth9")
    live = live_capture(parse_dump(dump), "af-packet", "lo")  # no entry for lo: the default entry's, then Suricata's
    assert live.checksum_checks == "kernel"
    match = offline_parity(live)
    assert match.sets == {"pcap-file.checksum-checks": "yes"} and match.checksum_rules_excluded
    rules = tmp_path / "r.rules"
    rules.write_text(RULES)
    fired = [2200073, 2200074, 2200070, 2200072, 9000001, 9000002, 2210010, 9000003]
    excluded = match.excluded(fired, [rules])
    assert sorted(excluded) == [2200070, 2200073, 2200074, 9000001]  # not IPv6 fragments, DF, stream, a comment
    assert excluded[2200074].startswith("checksum rule") and excluded[2200070].startswith("IPv4-fragment rule")
    assert match.excluded([2210010], [rules]) == {}  # only what the truth fired is named


def test_other_modes_and_methods() -> None:
    yes = parse_dump(DUMP.replace("checksum-checks = no", "checksum-checks = yes"))
    assert offline_parity(live_capture(yes, "af-packet", "lo")).sets == {"pcap-file.checksum-checks": "yes"}
    auto = parse_dump(DUMP.replace("checksum-checks = no", "checksum-checks = auto"))
    assert offline_parity(live_capture(auto, "af-packet", "lo")).checksum_rules_excluded is None
    qm = parse_dump(DUMP.replace("cluster_flow", "cluster_qm"))
    assert not live_capture(qm, "af-packet", "lo").kernel_defrag  # only cluster_flow joins the defrag fanout
    no_defrag = parse_dump(DUMP.replace("defrag = yes", "defrag = no"))
    assert offline_parity(live_capture(no_defrag, "af-packet", "lo")).fragment_rules_excluded is None
    assert live_capture({}, "af-xdp", "lo") == LiveCapture("af-xdp", "no", False)  # AF_XDP never validates
    assert live_capture(parse_dump("pcap.0.interface = lo\n"), "pcap", "lo").checksum_checks == "auto"


def test_recall_leaves_the_excluded_sids_out() -> None:
    truth = {2200074: 7, 2210010: 2}
    live = {2210010: 2}
    assert recall(live, truth).recall == round(2 / 9, 6)
    assert recall(live, truth, exclude={2200074}).recall == 1.0
