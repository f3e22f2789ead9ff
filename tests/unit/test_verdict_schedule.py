"""`sender-off` from the sender's own schedule (per second, sent against due) and, without one,
from its overall rate and duration."""

from __future__ import annotations

from idsbench.run.verdict import ReplayerFacts, SampleFacts, judge
from idsbench.store.schema import PerSecond


def _replayer(seconds: list[tuple[int, int | None]], *, pps: float = 100.0, elapsed: float = 4.0) -> ReplayerFacts:
    per_second = tuple(PerSecond(t=t, packets=sent, due_packets=due) for t, (sent, due) in enumerate(seconds))
    sent = sum(s for s, _ in seconds)
    return ReplayerFacts(0, "ibreplay", 0, sent, pps, 100.0, elapsed, 4.0, per_second=per_second)


def _labels_and_warnings(r: ReplayerFacts) -> tuple[tuple[str, ...], tuple[str, ...]]:
    v = judge(SampleFacts(engine="suricata", expected_pkts=None, replayers=(r,)))
    return v.labels, v.warnings


def test_a_stall_inside_the_run_is_flagged_although_the_total_is_on_time():
    labels, warnings = _labels_and_warnings(_replayer([(100, 100), (100, 100), (60, 100), (140, 100)]))
    assert "sender-off" in labels
    (w,) = warnings
    assert "too slow: 40 packets behind its schedule by the end of second 2 (0.40 s of its traffic)" in w


def test_catching_up_after_a_stall_is_not_called_too_fast():
    _, warnings = _labels_and_warnings(_replayer([(29345, 40000), (50655, 40000), (20000, 20000)]))
    (w,) = warnings
    assert "too slow: 10,655 packets behind" in w and "too fast" not in w


def test_one_packet_across_a_second_boundary_is_jitter_not_a_miss():
    labels, warnings = _labels_and_warnings(_replayer([(19, 20), (21, 20), (17, 20), (23, 20)], pps=20.0))
    assert "sender-off" not in labels and not warnings


def test_the_same_stall_with_many_packets_is_flagged():
    labels, _ = _labels_and_warnings(_replayer([(6074, 6074), (5700, 6074), (6448, 6074)], pps=6074.0))
    assert "sender-off" in labels


def test_without_a_schedule_the_overall_rate_decides():
    tcpreplay_like = ReplayerFacts(0, "tcpreplay", 0, 400, 90.0, 100.0, 4.44, 4.0,
                                   per_second=(PerSecond(t=0, packets=100),))
    v = judge(SampleFacts(engine="suricata", expected_pkts=None, replayers=(tcpreplay_like,)))
    assert "sender-off" in v.labels and "too slow, 90 pps in 4.44 s for 100 pps in 4.00 s" in v.warnings[0]
    on_time = ReplayerFacts(0, "tcpreplay", 0, 400, 100.0, 100.0, 4.0, 4.0)
    assert "sender-off" not in judge(SampleFacts(engine="suricata", expected_pkts=None,
                                                 replayers=(on_time,))).labels


def test_replayer_facts_cross_a_json_channel_whole():
    """A remote sender host answers with its facts as JSON lines; the schedule survives the trip."""
    import json

    facts = _replayer([(100, 100), (60, 100)])
    back = ReplayerFacts.from_json(json.loads(json.dumps(facts.to_json())))
    assert back == facts and back.per_second[1].due_packets == 100
