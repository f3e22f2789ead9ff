"""The duet search for real: an A/A duet (two identical Suricatas, each under a 0.3-CPU quota on the
same CPU, 400 costly PCRE rules so the CPU bounds the NDR) searched on bare metal. Both sides' NDRs come
from duet trials that feed both MLRsearch controllers (the same trials, the same packets; NDRs that differ
come from a shared trial the sides judged differently: see below), the NDR ratio lies in its interval, and the results rows carry the contract (`ndr_pps` per side,
`duet_ndr_ratio`, `duet_ndr_ratio_ci` on the pair row)."""

from __future__ import annotations

import time

import pytest

from idsbench.analysis.cases import case_table
from idsbench.analysis.duet import duet_results, pair_row, with_duet
from idsbench.search.duet import search_duet_campaign
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")

PRECISION = 0.1


def test_an_aa_duet_search_finds_both_ndrs_from_shared_trials(tmp_path, state_dir, cache_dir, costly_rules):
    started = time.monotonic()
    spec = spec_from_dict({
        "name": "duet-search", "mode": "duet", "timing": {"settle_s": 0.3},
        "traffic": {"traces": ["builtin:mixed?packets=20000"], "rate": {"pps": 40000}},
        "setup": {"cpus": 0.3},
        "sensor": {"set": {"af-packet.0.ring-size": 32768}, "rules": [str(costly_rules)]},
        "search": {"precision": PRECISION, "trial_s": 1, "initial_trial_s": 0.5, "duration_sum": 1, "final_s": 2}})
    out = tmp_path / "ds"
    (results,) = search_duet_campaign(spec, out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    a, b = results["a"], results["b"]
    for side, r in results.items():
        for t in r.trials:
            print(f"side {side} t{t.index}: {t.value:,.0f} pps {t.intended_duration_s} s, loss "
                  f"{t.waterfall.loss_ratio if t.waterfall else None}, behind {t.behind_pkts}, {t.sensor_us_per_pkt} µs/pkt")
    print(a.notes)
    (ga,), (gb,) = a.results, b.results
    assert ga.value is not None and gb.value is not None, a.notes
    assert ga.relevant_upper is not None and gb.relevant_upper is not None, "no NDR below the top: not CPU-bound"
    # Two identical sensors on one CPU judge the same trials. Before the duet search judged a trial's work
    # against the side's allocation over the replay (search/measure.py TailRule "allocation"), the work left at
    # the replay's end decided, and the scheduler picks one side at that moment: NDRs 17% apart in one run
    # (a failed 14,764 twice where b passed), 60% in another (at 9,208 pps, ~2/3 of the capacity, a's CPU left
    # 30 packets of work beyond the tail allowance, b's none). Now the sides part only where their work over
    # the trial straddles the allocation by a hair (bench_duet_search, 2026-12-04: 3 such trials in 5
    # searches, 4 to 48 packets, NDRs one grid step apart). How close A/A NDRs come is the benchmark's figure;
    # what the code decides: both sides judge the same trials, and NDRs differ only where the sides judged a
    # shared trial differently.
    assert [t.index for t in a.trials] == [t.index for t in b.trials]  # each trial fed both sides
    assert all(ta.value == tb.value and ta.sent_pkts == tb.sent_pkts for ta, tb in zip(a.trials, b.trials))

    if ga.value != gb.value:
        judged = [(ta.kept_up_lossless and ta.accounted, tb.kept_up_lossless and tb.accounted)
                  for ta, tb in zip(a.trials, b.trials)]
        assert any(x != y for x, y in judged), (ga, gb, judged)
    print(f"A/A NDRs: a {ga.value:,.0f} b {gb.value:,.0f} pps ({gb.value / ga.value - 1:+.1%})")
    campaign = load_campaign(out)
    (r,) = duet_results(campaign)
    assert r.n == 1, "the verification duet sample did not give a ratio"
    row = pair_row(r)
    lo, hi = row["duet_ndr_ratio_ci"]  # type: ignore[misc]
    ratio = row["duet_ndr_ratio"]
    assert isinstance(ratio, float) and ratio == pytest.approx(gb.value / ga.value, rel=1e-3), row
    assert lo <= ratio <= hi and lo < hi, row  # type: ignore[operator]
    sides = {x.duet_side: x.to_row() for x in with_duet(campaign, case_table(campaign))[0]}
    assert sides["a"]["ndr_pps"] == ga.value_pps and sides["b"]["ndr_pps"] == gb.value_pps
    elapsed = time.monotonic() - started
    print(f"duet search: NDR a {ga.value:,.0f} b {gb.value:,.0f} pps, ratio {row['duet_ndr_ratio']} "
          f"{row['duet_ndr_ratio_ci']}, {len(a.trials)} duet trials, {elapsed:.0f} s")
