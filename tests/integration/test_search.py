"""`idsbench search` with the real Suricata and tcpreplay on the MLRsearch controller: repeated
searches with their spread over a searched capture axis (one campaign), NDR and PDR on a real capture, the
minimum-CPU search, and the loss waterfall under an emulated lossy tap (netem)."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.analysis.builds import compare_along
from idsbench.analysis.cases import case_table
from idsbench.analysis.sample import sample_figures
from idsbench.report import write_report
from idsbench.run.campaign import run_campaign
from idsbench.search.campaign import search_campaign
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign
from idsbench.store.schema import SearchResult

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")


# A deeper ring than PAUSE_RIDING_RING: a search's top rates reach 70k pps.
RING = {"set": {"af-packet.0.ring-size": 32768}}
# Where a test is about the search's mechanism (convergence to the precision asked, its bounds, the
# verification, the accounting), not a figure: 1-s trials, one decides a load's bound (the exceed ratio
# 0.5 of 2 trial seconds), a 2-s verification — as the duet search test runs this same CPU-bound case.
SHORT_TRIALS = {"trial_s": 1, "initial_trial_s": 0.5, "duration_sum": 2, "final_s": 2}
# The real-capture test checks that a search converges to the precision it asked, not a figure.
PRECISION = 0.1


def _search(tmp_path: Path, state_dir: Path, cache_dir: Path, name: str, **doc: object) -> SearchResult:
    spec = spec_from_dict({"name": name, "search": {"trial_s": 2, "final_s": 5}, **doc})
    out = tmp_path / name
    (result,) = search_campaign(spec, out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX).results
    return result


def _ndr(result: SearchResult) -> float:
    (r,) = [r for r in result.results if r.tolerance == 0]
    assert r.value is not None, result.notes
    return r.value


METHODS = ["af-packet", "af-packet-v2"]
REPEATS = 3
# Where a test is about the repeats' mechanism (each converged to the precision it asked, the median, its CI),
# not a figure: a coarse precision needs fewer halvings (the ±5% repeatability is benchmarks/bench_search.py's).
REPEATS_PRECISION = 0.2
TOP_PPS = 40000  # the repeated searches' top: well above the sensor's ~10k pps, below the sender's ceiling


@pytest.fixture(scope="module")
def repeated(tmp_path_factory, need_root, cache_dir, costly_rules_module) -> tuple[Path, list[SearchResult]]:
    """One search campaign for the repeats and the capture axis: `search.repeats = 3` over two capture methods
    of one compute-bound case (a third of a CPU, ~25 µs a packet with 400 PCRE rules, ~10k pps) — six whole
    searches, a fresh sensor each, on the MLRsearch controller, under a fixed top of TOP_PPS (no sender's
    ceiling to measure: its sharing by the repeats is test_search_sender.py's). Its own state dir, checked
    empty afterwards."""
    base = tmp_path_factory.mktemp("repeated")
    state = base / "state"
    state.mkdir()
    spec = spec_from_dict({"name": "rep",
                           "traffic": {"traces": ["builtin:mixed?packets=20000"], "replayers": [1],
                                       "rate": {"pps": TOP_PPS}, "sender": "native"},
                           "setup": {"cpus": 0.3},
                           "sensor": {**RING, "rules": [str(costly_rules_module)], "capture": METHODS},
                           "search": {"repeats": REPEATS, "precision": REPEATS_PRECISION, **SHORT_TRIALS}})
    out = base / "rep"
    results = search_campaign(spec, out, state_dir=state, cache_dir=cache_dir, name_prefix=TEST_PREFIX).results
    assert not list(state.glob("*.json")), "the campaign left resources in its state file"
    for result in results:
        for t in result.trials:
            print(f"{result.case_id} repeat {t.repeat} t{t.index}: {t.value:,.0f} pps {t.intended_duration_s} s, "
                  f"loss {t.waterfall.loss_ratio if t.waterfall else None}, behind {t.behind_pkts}, "
                  f"{t.sensor_us_per_pkt} µs/pkt{'' if t.accounted else ', did not add up'}")
        print(result.notes)
    return out, list(results)


def test_three_repeated_searches_report_their_spread(repeated):
    """`search.repeats = 3`, per capture method: what this loaded, shared 2-core VM can keep — and each check
    can fail: every repeat converged (its relevant bounds within the precision asked, the lower bound below the
    top offered), its conditional throughput lies within its relevant bounds, the reported NDR is the
    median of the repeats and the row carries their CI at its level; the spread is printed (the ±5%
    repeatability is the benchmark's, with its figure: benchmarks/bench_search.py --repeatability)."""
    out, results = repeated
    rows = {r.case: r.to_row() for r in case_table(load_campaign(out))}
    assert len(results) == len(METHODS) and set(rows) == {r.case_id for r in results}
    for result in results:
        assert len(result.repeats) == REPEATS and result.goals is not None and result.goals.exceed_ratio == 0.5
        ndrs: list[float] = []
        uppers: list[float] = []
        for rep in result.repeats:
            (ndr,) = rep.results
            assert ndr.relevant_lower is not None and ndr.relevant_upper is not None, (rep, result.notes)
            assert ndr.relevant_upper / ndr.relevant_lower - 1 <= REPEATS_PRECISION * 1.5, rep  # MLRsearch's grid
            assert ndr.relevant_lower < TOP_PPS and not ndr.lower_bound  # the sensor was the limit, not the top
            assert ndr.conditional_pps is not None and ndr.conditional_pps <= ndr.relevant_lower + 0.001
            assert rep.ndr_pps == ndr.value_pps and rep.elapsed_s <= 180, rep
            ndrs.append(ndr.relevant_lower)
            uppers.append(ndr.relevant_upper)
        for t in result.trials:  # a trial that did not add up was never judged as it was
            assert t.accounted or t.sensor_failed or t.waterfall is None or t.waterfall.unaccounted_pkts != 0
        row = rows[result.case_id]
        mid = sorted(ndrs)[1]
        assert row["ndr_pps"] == pytest.approx(mid) and row["search_repeats"] == REPEATS
        assert row["ndr_repeats"] == [pytest.approx(x, rel=1e-6) for x in ndrs]
        # the repeats share the top, hence MLRsearch's load grid, and often land on one grid point: the CI of
        # their median takes each within its bounds, [lowest NDR, highest failing load] with 3 repeats
        ci = row["ndr_ci"]
        assert ci is not None and row["ndr_ci_level"] > 0
        assert ci[0] == pytest.approx(min(ndrs), abs=1e-3) and ci[1] == pytest.approx(max(uppers), abs=1e-3)
        assert ci[0] <= mid < ci[1]
        assert row["goals"]["0"]["conditional_pps"] is not None
        assert row["sensor_us_per_pkt"] is not None and row["sensor_instr_per_pkt"] is None  # this VM has no PMU
        spread = max(abs(x / mid - 1) for x in ndrs)
        print(f"{row['capture']}: NDRs {', '.join(f'{x:,.0f}' for x in ndrs)} pps: {spread:.1%} from their median "
              f"{mid:,.0f}; {result.elapsed_s:.0f} s in all")
    html = write_report(out).read_text()
    assert "Search repeats" in html


def test_a_search_over_the_capture_axis_compares_each_methods_ndr(repeated):
    """Issue 30: `sensor.capture` as a searched axis (the repeated searches above). Each method gets its NDR
    (the median of its repeats, their CI), and the report's "Capture methods compared" sets the NDRs side by
    side with the effect (median ratio − 1) and its CI over the repeats — whatever its size and verdict here
    (the mechanism is checked, not a figure of this shared host)."""
    out, results = repeated
    assert len(results) == 2
    rows = case_table(load_campaign(out))
    by_method = {r.params.capture: r.to_row() for r in rows}
    assert set(by_method) == set(METHODS)
    for method, row in by_method.items():
        print(method, row["ndr_pps"], row["ndr_repeats"], row["ndr_ci"])
        assert row["ndr_pps"] and row["search_repeats"] == REPEATS and len(row["ndr_repeats"]) == REPEATS, \
            (method, row)
        assert row["capture"] == method and row["capture_options"]
    (cmp,) = compare_along(rows, "capture")
    assert cmp.values == ("af-packet", "af-packet-v2")
    ndr = cmp.deltas["ndr_pps"]
    print(f"NDR af-packet-v2 vs af-packet: {ndr.effect_pct}% {ndr.effect_ci} {ndr.verdict}")
    assert ndr.base == pytest.approx(by_method["af-packet"]["ndr_pps"])
    assert ndr.contender == pytest.approx(by_method["af-packet-v2"]["ndr_pps"])
    assert ndr.effect_pct is not None and ndr.effect_ci is not None and ndr.verdict in (
        "higher", "lower", "same", "inconclusive")
    assert ndr.effect_ci[0] <= ndr.effect_pct <= ndr.effect_ci[1]
    html = write_report(out).read_text()
    section = html[html.index('id="compared-capture"'):]
    assert "Capture methods compared" in section and "NDR" in section[:section.index("</table>")]


def test_ndr_on_a_real_capture_at_a_pps_top(tmp_path, state_dir, cache_dir, pcaps):
    result = _search(tmp_path, state_dir, cache_dir, "pcap",
                     traffic={"traces": [str(pcaps / "zeek_modbusBig.pcap")], "replayers": [2],
                              "rate": {"pps": 150000}},
                     search={**SHORT_TRIALS, "precision": PRECISION, "tolerances": [0, 0.01]})
    ndr, pdr = result.results
    assert result.goals is not None and len(result.trials) <= 60  # search.max_trials
    assert ndr.value is not None and pdr.value is not None, result.notes
    if ndr.relevant_upper is None:  # the sensor took the top (this host ran it both ways): a lower bound
        assert ndr.lower_bound and ndr.value == pytest.approx(300_000)
    else:  # converged to the precision (MLRsearch's rounded grid)
        assert not ndr.lower_bound and ndr.relevant_upper / ndr.value - 1 <= PRECISION * 1.5
    assert ndr.value <= pdr.value <= 300_000  # 2 replayers × 150k pps is the top
    # the final-length verification ran at the NDR; with exceed_ratio 0.5 a load passes when at most half
    # its trial seconds were bad, so one 2 s sample there may lose (it is reported, not retried)
    assert ndr.verified is not None and len(result.verification) == 2
    for t in result.trials:  # every trial's accounting closes
        assert t.waterfall is not None and t.waterfall.unaccounted_pkts == 0, t


def test_min_cpus_search_result_is_lossless_and_half_of_it_is_not(tmp_path, state_dir, cache_dir):
    traffic = {"traces": ["builtin:mixed?packets=20000"], "replayers": [1], "rate": {"pps": 40000}}
    # 10% steps: the verification sample starts a fresh sensor under the limit, and its start-up under a
    # tenth of a core has cost up to 20% more CPU than the warm trials found. The large ring: under a
    # quota of ~0.1 CPU the sensor is throttled for ~90 ms of every 100 ms period, 3,600 packets at
    # 40k pps, more than the default ring holds (it lost 3-14% at 0.11-0.145 CPU with it). 2-s warm trials
    # (1-s ones found 0.078 CPU where 2-s ones found 0.096 twice: its cold 5-s verification then lost 5.8%),
    # two of them decide a bound (duration_sum 4, not 15: the 5-s verification and the two 5-s samples
    # around the result are what the checks below rest on).
    result = _search(tmp_path, state_dir, cache_dir, "cpus", traffic=traffic, setup={"cpus": 1.0}, sensor=RING,
                     search={"axis": "cpus", "trial_s": 2, "duration_sum": 4, "final_s": 5, "min_cpus": 0.02,
                             "precision": 0.1})
    (r,) = result.results
    assert r.value is not None and r.verified is not None and 0.02 <= r.value < 1.0, (r, result.notes)
    assert r.bracket is not None and r.bracket[0] < r.bracket[1] == r.value, r  # (highest failure, the result)
    # the allocation found: its verification sample (the case's s0) is exact, and lossless unless the search
    # says otherwise. A fresh sensor's first seconds under ~0.1 CPU cost more than the warm trials measured
    # (here up to 20%, and on a noisy host a 0.138-CPU verification lost 4.9%): the search reports that as
    # "verification failed" and names the loss, never as verified.
    (full,) = load_campaign(tmp_path / "cpus").samples
    counters = full.summary.sensor.counters
    assert full.summary.case.cpus == r.value and full.status == "ok"
    assert counters.decoded_pkts + counters.dropped_pkts == full.summary.replay.sent_pkts
    assert r.verified == (counters.dropped_pkts == 0), (r, counters)
    if not r.verified:
        assert any(f"verification at {r.value:,.6g} cpus lost" in n for n in result.notes), result.notes
    # From a cold start (a fresh sensor under the limit, as a user starts one), half the allocation found
    # loses. What a quarter more holds follows what the search promises: the result is the warm trials'
    # minimum to the precision asked, and the verification says whether a cold sensor holds it. Verified, a
    # quarter more (beyond the host's drift of 5-17% between runs) is lossless. Not verified, the cold
    # start cost more than the warm trials measured, by an amount the search does not claim to bound (CI:
    # 0.0818 found, its verification lost, and 1.25x = 0.1022 still dropped 14959 of 200000): a quarter
    # more is then claimed only to lose less than the verification did.
    (verification,) = result.verification
    # one campaign, two cases (one preflight): x1.25 and x0.5 of the result, a fresh sensor each
    more_cpus, half_cpus = round(r.value * 1.25, 4), round(r.value / 2, 4)
    run_campaign(spec_from_dict({"name": "around", "samples": 1, "traffic": {**traffic, "duration_s": 5},
                                 "sensor": RING, "setup": {"cpus": [more_cpus, half_cpus]}}),
                 tmp_path / "around", state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    around = {s.summary.case.cpus: s for s in load_campaign(tmp_path / "around").samples}
    assert set(around) == {more_cpus, half_cpus}, around
    more, half = around[more_cpus], around[half_cpus]
    more_c, half_c = more.summary.sensor.counters, half.summary.sensor.counters
    print(f"min cpus {r.value:.4f} (verified {r.verified}, dropped {counters.dropped_pkts} of "
          f"{full.summary.replay.sent_pkts}); x1.25 dropped {more_c.dropped_pkts} of {more.summary.replay.sent_pkts}, "
          f"x0.5 dropped {half_c.dropped_pkts} of {half.summary.replay.sent_pkts}")
    assert more.status == "ok" and half.status == "ok", (more.summary.reason, half.summary.reason)
    assert verification.value == r.value and verification.counters.dropped_pkts == counters.dropped_pkts
    if r.verified:
        assert more_c.dropped_pkts == 0, more_c
    else:
        assert more_c.dropped_pkts < counters.dropped_pkts, (more_c, counters)
    assert half_c.dropped_pkts > 0, half_c


def test_a_lossy_tap_is_wire_loss_not_sensor_loss(tmp_path, state_dir, cache_dir, pcaps):
    out = tmp_path / "impaired"
    run_campaign(spec_from_dict({"name": "impaired", "samples": 2,
                                 "traffic": {"traces": [str(pcaps / "zeek_modbusBig.pcap")], "replayers": [1],
                                             "rate": {"pps": 4000}},
                                 "wire": {"impair": {"loss": 0.02}}}),
                 out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    campaign = load_campaign(out)
    assert len(campaign.samples) == 2
    for s in campaign.samples:
        f = sample_figures(s, campaign.doc.settle_s)
        sent = f.sent_pkts
        assert s.status == "ok" and "impaired" in s.summary.labels, (s.status, s.summary.reason)
        assert 0.015 <= (f.loss_wire_pkts or 0) / sent <= 0.025, f
        assert f.loss_capture_pkts == 0 and f.loss_softnet_pkts == 0 and f.loss_sender_pkts == 0
        assert f.unaccounted_pkts == 0 and f.decoded_pkts == sent - f.loss_wire_pkts


def test_et_open_recall_is_high_when_lossless_and_lower_under_heavy_drops(tmp_path, state_dir, cache_dir):
    """The generated web traffic makes ET Open alert (its curl User-Agent policy rule) on every request;
    the offline ground truth counts them; live, a lossless sensor raises ≥ 90% of them, one that
    drops most packets fewer, and the report shows the recall."""
    from tests.paths import ET_OPEN

    if not ET_OPEN.is_file():
        pytest.fail(f"the ET Open ruleset is not at {ET_OPEN} (../shared/data/rules beside the checkout)")
    out = tmp_path / "et"
    # At topspeed the 20k packets arrive in ~0.05 s: Suricata's default ring (tpacket-v3 blocks that
    # hold ~10k small packets per thread) can swallow most of that burst, and with ET Open (Hyperscan) on
    # a whole CPU a 256-frame ring still lost only 12 of 40k packets in one run. Half a CPU and a 256-frame
    # ring make the flood drop most packets, while at 3k pps the ring still holds a tenth of a second or
    # more and the sensor needs a few % of a core. mpm-algo ac-ks (Aho-Corasick) instead of Hyperscan:
    # the same matches (the offline ground truth runs the same configuration), a costlier packet (with it
    # a third of a CPU kept 3,089 of 40k flooded packets where Hyperscan kept 16,213), and ET Open loads in
    # 10.9 s instead of 17.5 s here (`suricata -T`; ~600 MB resident instead of ~300 MB).
    run_campaign(spec_from_dict({
        "name": "et-recall", "samples": 1,
        "traffic": {"traces": ["builtin:web?packets=20000"], "replayers": [1], "rate": [{"pps": 3000}, "topspeed"]},
        "sensor": {"rules": [str(ET_OPEN)], "ready_timeout_s": 300,
                   "set": {"af-packet.0.ring-size": 256, "mpm-algo": "ac-ks"}},
        "setup": {"cpus": [0.5]}}), out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    campaign = load_campaign(out)
    assert len(campaign.truths) == 2 and all(sum(t.alerts_by_sid.values()) >= 20 for t in campaign.truths.values())
    figures = {s.summary.case.rate: sample_figures(s, campaign.doc.settle_s, campaign.truths[s.case_id])
               for s in campaign.samples}
    calm, flood = figures["pps=3000"], figures["topspeed"]
    print(f"ET Open: calm dropped {calm.dropped_pkts}, recall {calm.alert_recall}; flood dropped "
          f"{flood.dropped_pkts} of {flood.sent_pkts}, recall {flood.alert_recall}")
    assert calm.dropped_pkts == 0 and calm.alert_recall is not None and calm.alert_recall >= 0.9, calm
    assert flood.dropped_pkts > 0 and flood.alert_recall is not None and flood.alert_recall < calm.alert_recall, flood

    html = write_report(out).read_text()
    assert "Alert recall vs load" in html and "alert_recall_load" in html
