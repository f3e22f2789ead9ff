"""The duet search for real: an A/A duet (two identical Suricatas, each under a 0.3-CPU quota on the
same CPU, 400 costly PCRE rules so the CPU bounds the NDR) searched on bare metal. Both sides' NDRs come
from duet trials that feed both MLRsearch controllers (the same trials, the same packets; NDRs that differ
come from controllers that were given different trials: see below), the NDR ratio lies in its interval, and the results rows carry the contract (`ndr_pps` per side,
`duet_ndr_ratio`, `duet_ndr_ratio_ci` on the pair row)."""

from __future__ import annotations

import time

import pytest

from idsbench.analysis.cases import case_table
from idsbench.analysis.duet import duet_results, pair_row, with_duet
from idsbench.search.duet import search_duet_campaign
from idsbench.search.measure import trial_count
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign
from idsbench.store.schema import TrialRecord

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")

PRECISION = 0.1


def _lossless(trial: TrialRecord) -> bool:
    """What the NDR's goal (loss 0) takes of a trial: were all its packets forwarded (in time)?"""
    count = trial_count(trial)
    return count.forwarded >= max(count.offered, count.intended or 0)


def _judged(trial: TrialRecord, tolerances: tuple[float, ...]) -> tuple[bool, ...]:
    """Per goal (loss tolerance), did the trial exceed it, as MLRsearch's loss ratio has it?"""
    count = trial_count(trial)
    overall = max(count.offered, count.intended or 0)
    ratio = (overall - count.forwarded) / overall if overall else 0.0
    return tuple(ratio > t for t in tolerances)


def test_an_aa_duet_search_finds_both_ndrs_from_shared_trials(tmp_path, state_dir, cache_dir, costly_rules):
    started = time.monotonic()
    spec = spec_from_dict({
        "name": "duet-search", "mode": "duet", "timing": {"settle_s": 0.3},
        "traffic": {"traces": ["builtin:mixed?packets=20000"], "rate": {"pps": 40000}},
        "setup": {"cpus": 0.3},
        "sensor": {"set": {"af-packet.0.ring-size": 32768}, "rules": [str(costly_rules)]},
        "search": {"precision": PRECISION, "trial_s": 1, "initial_trial_s": 0.5, "duration_sum": 1, "final_s": 2}})
    out = tmp_path / "ds"
    tolerances = tuple(spec.search.tolerances)
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
    # Two identical sensors on one CPU, both fed every trial. MLRsearch is deterministic in what it is given:
    # while b's controller is given the counts a's was, it asks a's loads and gets a's trials. Its initial
    # loads follow counts, not only pass/fail (the trial before's forwarding rate): both controllers take them
    # from the side that forwarded least (before they did, CI 2026-12-04: a lost 9,301 packets of the first
    # trial, b a few more, b asked 20,225 pps where a asked 21,314; a's two trials at 17-19k fell in a slow
    # spell, 37 µs/pkt against 23: NDRs 15,559 and 16,397). So the sides part only after a trial they judged
    # differently (or one whose count of b did not add up, which b runs again). How close A/A NDRs come is
    # the benchmark's figure (bench_duet_search); what the code decides is asserted here.
    assert [t.index for t in a.trials] == [t.index for t in b.trials]  # each trial fed both sides
    assert all(ta.value == tb.value and ta.sent_pkts == tb.sent_pkts for ta, tb in zip(a.trials, b.trials))
    assert all(t.answered is not None for r in results.values() for t in r.trials)
    given = {s: [t.index for t in r.trials if t.answered] for s, r in results.items()}
    assert given["a"] and given["b"]
    if given["a"] == given["b"]:
        by_index = {t.index: t for t in b.trials}
        alike = all(_lossless(t) == _lossless(by_index[t.index]) for t in a.trials if t.answered)
        assert not alike or ga.value == gb.value, (ga, gb)  # the NDR's goal: loss 0, pass or fail decides
        assert not any("controllers parted" in n for n in a.notes), a.notes
    else:
        assert any("controllers parted" in n for n in a.notes), a.notes
        k = next(i for i, (x, y) in enumerate(zip(given["a"], given["b"])) if x != y)
        assert k > 0, "the controllers asked different trials from the first on"
        by_index = {s: {t.index: t for t in r.trials} for s, r in results.items()}
        last = given["a"][k - 1]  # the last trial both controllers were given
        judged = {s: _judged(by_index[s][last], tolerances) for s in results}
        rerun = not trial_count(by_index["b"][given["a"][k]]).accounted
        assert judged["a"] != judged["b"] or rerun, (last, judged, a.notes)
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
