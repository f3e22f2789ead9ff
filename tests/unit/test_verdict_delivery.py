"""A sample whose sensor received none of what was sent, lost where the host cannot count, is never `ok`
(the first nested lab judged a vm-vfio sample that received 0 of 199 packets `ok`, label `unaccounted`)."""

from __future__ import annotations

from idsbench.accounting import WaterfallInput, waterfall
from idsbench.counters import Counters
from idsbench.run.verdict import SampleFacts, judge

VF = ("wire", "NIC switch", "VF", "guest")
VM = ("macvtap", "guest virtio path")


def _judge(*, sent: int = 199, sender_tx: int | None = 199, sensor_rx: int | None = 199, captured: int = 199,
           dropped: int = 0, decoded: int = 199, invisible: tuple[str, ...] = (), impaired: bool = False,
           drained: bool = True):
    c = Counters(captured_pkts=captured, dropped_pkts=dropped, decoded_pkts=decoded)
    w = waterfall(WaterfallInput(sent=sent, sender_tx=sender_tx, sensor_rx=sensor_rx, impaired=impaired,
                                 captured=captured, dropped=dropped, decoded=decoded, invisible=invisible))
    return judge(SampleFacts(engine="suricata", expected_pkts=sent, counters=c, waterfall=w, wire_impaired=impaired,
                             drained=drained))


def test_nothing_received_behind_invisible_drop_points_is_invalid_not_ok():
    v = _judge(sensor_rx=0, captured=0, decoded=0, invisible=VF)
    assert v.status == "invalid"
    assert (v.reason or "").startswith("the sensor received none of the 199 packets sent: 199 lost where the host "
                                       "cannot count (wire, NIC switch, VF, guest); the path to it delivers nothing")
    vm = _judge(captured=0, decoded=0, invisible=VM)  # the host's port received them, the guest nothing
    assert vm.status == "invalid" and "199 lost where the host cannot count (macvtap, guest virtio path)" in (vm.reason or "")


def test_everything_lost_at_a_counted_point_is_a_measurement():
    overrun = _judge(dropped=199, decoded=0)  # a starved sensor's ring overran: the capture counted every loss
    assert overrun.status == "ok" and overrun.reason is None
    tap = _judge(sender_tx=199, sensor_rx=0, captured=0, decoded=0, impaired=True)  # a lossy tap dropped it all
    assert tap.status == "ok"


def test_vm_verdicts_where_packets_arrive_are_unchanged():
    assert _judge(invisible=VM).status == "ok"
    partial = _judge(captured=150, decoded=150, invisible=VM)  # 49 lost in the macvtap or the guest: counted as such
    assert partial.status == "ok" and "unaccounted" in partial.labels
    assert _judge(captured=199, dropped=100, decoded=99, invisible=VF).status == "ok"  # capture loss: a measurement
    assert _judge(sent=0, sender_tx=0, sensor_rx=0, captured=0, decoded=0, invisible=VF).status == "ok"  # sent nothing


def test_a_drain_on_lagging_counters_is_named_undrained():
    # the nested lab's virtio VM: the guest's published counters showed nothing new for two records after the
    # replay, the drain ended, and 10 of 199 captured packets were never processed before the stop
    v = _judge(captured=199, decoded=189, invisible=VM)
    assert v.status == "ok" and "undrained" in v.labels
    assert any(w.startswith("10 packets were captured but still unprocessed") and "lagged" in w for w in v.warnings)
    assert "undrained" not in _judge(invisible=VM).labels  # a drain the final counters confirm
    late = _judge(captured=199, decoded=189, invisible=VM, drained=False)  # the timeout's own wording, once
    assert late.labels.count("undrained") == 1 and any("raise timing.drain_timeout_s" in w for w in late.warnings)
