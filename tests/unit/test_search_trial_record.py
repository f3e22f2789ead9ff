"""How a search judges one trial from what the session measured: a capture counter older than the
decode counter, and whether the sensor fell behind (pure logic on a measured outcome)."""

from __future__ import annotations

from types import SimpleNamespace

from idsbench.accounting import waterfall_of
from idsbench.run.session import SensorCpu
from idsbench.search.axis import Axis
from idsbench.search.measure import Allocation, Carry, Trial, trial_record
from idsbench.sensors.base import Counters
from idsbench.store.schema import TrialRecord, WireRecord

RATE = Axis("rate", "pps", case=None, low=1_000.0, high=1_000_000.0)
CPUS = Axis("cpus", "cpus", case=None, low=0.02, high=1.0, direction="min")
SENT = 112_950


class Warm:
    """Trials on one warm sensor, judged one after another (the carry passed on as the Measurer does)."""

    def __init__(self, cpus: float | None):
        self.allocation = Allocation(cpus, True) if cpus is not None else Allocation(1.0, False)
        self.carry = Carry()

    def judge(self, axis: Axis, value: float, mode: str, out: SimpleNamespace, index: int) -> TrialRecord:
        record, carry = trial_record(axis, Trial(value, 2.0), out, self.allocation, index, 0, mode,
                                     self.carry)
        self.carry = carry
        return record


def search(cpus: float | None) -> Warm:
    return Warm(cpus)


def outcome(counters: Counters, cpu: SensorCpu | None = None) -> SimpleNamespace:
    wire = WireRecord(sender_tx_pkts=SENT, sender_tx_dropped=0, sensor_rx_pkts=SENT, sensor_rx_dropped=0,
                      softnet_dropped=0, softnet_time_squeeze=0)
    replayer = SimpleNamespace(elapsed_s=2.0, pps=SENT / 2, mbps=40.0)
    record = SimpleNamespace(replayers=[replayer], start_unix=100.0, end_unix=102.0, sent_pkts=SENT)
    return SimpleNamespace(replay=SimpleNamespace(record=record), counters=counters, wire=wire,
                           waterfall=waterfall_of(SENT, wire, counters, ()), cpu=cpu, sensor_alive=True)


def test_a_capture_counter_older_than_the_decode_counter_is_raised_to_it():
    # a CI run: Suricata under 0.1 CPU decoded every packet, its kernel counter showed 11k fewer
    stale = Counters(captured_pkts=SENT - 11_056, dropped_pkts=0, decoded_pkts=SENT)
    assert waterfall_of(SENT, outcome(stale).wire, stale, ()).unaccounted_pkts == 11_056  # before
    rec = search(0.1).judge(RATE, 56_474.0, "warm", outcome(stale), 1)
    assert rec.waterfall is not None and rec.waterfall.unaccounted_pkts == 0 and rec.waterfall.loss_ratio == 0
    assert rec.counters.captured_pkts == SENT


def test_what_the_capture_counter_caught_up_with_is_taken_off_the_next_warm_trial():
    # a CI run: a trial's kernel count read 1,746 short; the next trial's (from that old baseline)
    # read 1,746 more than the wire delivered, every packet decoded
    s = search(0.3)
    short = Counters(captured_pkts=SENT - 1_746, dropped_pkts=0, decoded_pkts=SENT)
    first = s.judge(RATE, 14_604.0, "warm", outcome(short), 1)
    surplus = Counters(captured_pkts=SENT + 1_746, dropped_pkts=0, decoded_pkts=SENT)
    second = s.judge(RATE, 11_499.0, "warm", outcome(surplus), 2)
    for rec in (first, second):
        assert rec.counters.captured_pkts == SENT
        assert rec.waterfall is not None and rec.waterfall.unaccounted_pkts == 0 and rec.waterfall.unprocessed_pkts == 0
    # owed once only: a later surplus is the sensor's (captured, never processed)
    third = s.judge(RATE, 11_499.0, "warm", outcome(surplus), 3)
    assert third.waterfall is not None and third.waterfall.unprocessed_pkts == 1_746


def test_a_cold_trial_owes_nothing_to_the_warm_one_before_it():
    s = search(0.3)
    s.judge(RATE, 14_604.0, "warm", outcome(Counters(captured_pkts=SENT - 500, decoded_pkts=SENT)), 1)
    cold = s.judge(RATE, 14_604.0, "cold", outcome(Counters(captured_pkts=SENT + 500, decoded_pkts=SENT)), 2)
    assert cold.waterfall is not None and cold.waterfall.unprocessed_pkts == 500


def test_drops_the_sensor_has_not_read_yet_stay_unaccounted():
    stale = Counters(captured_pkts=90_000, dropped_pkts=1_000, decoded_pkts=95_000)  # 16,950 not seen
    rec = search(0.1).judge(RATE, 56_474.0, "warm", outcome(stale), 1)
    assert rec.waterfall is not None and rec.waterfall.unaccounted_pkts == SENT - 96_000
    assert rec.waterfall.loss_capture_pkts == 1_000


def test_a_light_load_on_a_whole_cpu_is_not_behind_for_the_tail_the_capture_latency_leaves():
    # a CI run: 40k pps on 1 CPU used 0.136 cores; 13 ms of its work came after the replay: cleared
    # within the capture's delivery latency (110 ms) at its allocation, not behind
    cpu = SensorCpu(idle_rate=0.0, at_start=0.0, at_replay_end=0.2588, at_drained=0.2721, replay_s=2.0, drain_s=1.0)
    ok = Counters(captured_pkts=SENT, dropped_pkts=0, decoded_pkts=SENT)
    rec = search(None).judge(RATE, 56_000.0, "warm", outcome(ok, cpu), 0)
    assert not rec.fell_behind and rec.behind_pkts == 0
    assert rec.sensor_us_per_pkt is not None and abs(rec.sensor_us_per_pkt - 0.2721 / SENT * 1e6) < 1e-3


def test_a_starved_sensor_with_a_large_tail_is_behind_by_the_packets_of_that_tail():
    # 0.1 s of work left on a 0.1-core quota: beyond one quota period (10 ms) and the capture latency
    # (110 ms) at 0.1 core (11 ms)
    cpu = SensorCpu(idle_rate=0.0, at_start=0.0, at_replay_end=0.2, at_drained=0.3, replay_s=2.0, drain_s=1.0)
    ok = Counters(captured_pkts=SENT, dropped_pkts=0, decoded_pkts=SENT)
    rec = search(0.1).judge(RATE, 600_000.0, "warm", outcome(ok, cpu), 0)
    assert rec.fell_behind
    # 0.079 s of excess work at 0.3 s / SENT packets each
    assert abs(rec.behind_pkts - 0.079 / (0.3 / SENT)) <= 2


def test_a_duet_trial_forgives_the_tail_of_allocation_the_host_withheld_during_the_replay():
    # the A/A duet search's case: 0.3-core quota, the load ~2/3 of its capacity; the host kept the sensor
    # off its CPU near the replay's end, so 0.07 s of work was left (beyond the 0.063-s allowance) though
    # its whole trial needed 0.46 of the 0.6 CPU-s its allocation gives over the 2-s replay
    cpu = SensorCpu(idle_rate=0.0, at_start=0.0, at_replay_end=0.39, at_drained=0.46, replay_s=2.0, drain_s=1.0)
    ok = Counters(captured_pkts=SENT, dropped_pkts=0, decoded_pkts=SENT)
    s = search(0.3)
    tail = s.judge(RATE, 9_208.0, "warm", outcome(ok, cpu), 0)
    assert tail.fell_behind and tail.tail_allowance_s == 0.063  # a single search's rule: behind
    record, _ = trial_record(RATE, Trial(9_208.0, 2.0), outcome(ok, cpu), s.allocation, 1, 0, "warm", Carry(),
                             rule="allocation")  # type: ignore[arg-type]
    assert not record.fell_behind and record.behind_pkts == 0
    assert record.tail_work_s == 0.07 and record.tail_allowance_s == round(0.063 + 0.6 - 0.39, 6)


def test_a_duet_trial_beyond_its_allocation_is_behind_by_the_work_the_allocation_could_not_do():
    # the whole trial needed 0.7 CPU-s where the allocation gives 0.6 over the replay (+ 0.063 allowance):
    # the sensor used all of its allocation during the replay and left 0.1 s, of which 0.037 s is backlog
    cpu = SensorCpu(idle_rate=0.0, at_start=0.0, at_replay_end=0.6, at_drained=0.7, replay_s=2.0, drain_s=1.0)
    ok = Counters(captured_pkts=SENT, dropped_pkts=0, decoded_pkts=SENT)
    record, _ = trial_record(RATE, Trial(20_000.0, 2.0), outcome(ok, cpu), Allocation(0.3, True), 0, 0, "warm",
                             Carry(), rule="allocation")  # type: ignore[arg-type]
    assert record.fell_behind and abs(record.behind_pkts - 0.037 / (0.7 / SENT)) <= 2
