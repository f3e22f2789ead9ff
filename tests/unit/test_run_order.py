"""The order a campaign's samples run in (run/order.py): interleaved by default when there are rounds, the
cases of each round shuffled with a recorded seed (RMIT), kept on --resume; an older campaign resumes in
the order it meant (its spec's, else case by case)."""

from __future__ import annotations

import pytest

from idsbench.errors import SpecError
from idsbench.plan import interleaved_rounds, plan
from idsbench.run.order import decide_order, samples_in_order
from idsbench.spec import spec_from_dict
from idsbench.store.campaigndoc import CampaignDoc
from idsbench.store.reader import read_campaign_doc
from idsbench.store.schema import RunOrderRecord

DOC = {"name": "x", "samples": 6, "traffic": {"traces": ["builtin:mixed"], "replayers": [1, 2, 3]}}


def test_more_than_one_case_runs_interleaved_in_seeded_random_rounds():
    spec = spec_from_dict(DOC)
    cases = plan(spec)
    record = decide_order(spec.order, cases, None, seed=12345)
    assert record.order == "interleaved" and record.seed == 12345 and len(record.rounds) == 6
    ids = {c.case_id for c in cases}
    assert all(set(r) == ids for r in record.rounds)  # every case once per round
    assert len(set(record.rounds)) > 1  # the order inside the rounds varies (6 rounds of 3! orders)
    ran = samples_in_order(cases, record)
    assert [c.case_id for c, _ in ran] == [i for r in record.rounds for i in r]  # what runs is what is recorded
    assert [s.index for _, s in ran] == [k for k in range(6) for _ in range(3)]
    assert [[c.case_id for c, _ in r] for r in interleaved_rounds(cases, 12345)] == [list(r) for r in record.rounds]
    fresh = decide_order(spec.order, cases, None)
    assert fresh.seed is not None and fresh.order == "interleaved"


def test_one_case_or_one_sample_each_runs_case_by_case():
    one_case = spec_from_dict({**DOC, "traffic": {"traces": ["builtin:mixed"], "replayers": [1]}})
    assert decide_order(one_case.order, plan(one_case), None) == RunOrderRecord(order="cases")
    one_sample = spec_from_dict({**DOC, "samples": 1})  # a search plans one sample per case
    assert decide_order(one_sample.order, plan(one_sample), None).order == "cases"
    asked = spec_from_dict({**DOC, "order": "cases"})
    assert decide_order(asked.order, plan(asked), None) == RunOrderRecord(order="cases")


def test_a_resumed_campaign_keeps_its_recorded_order_and_an_older_one_what_it_meant():
    spec = spec_from_dict(DOC)
    cases = plan(spec)
    recorded = decide_order(spec.order, cases, None, seed=99)
    doc = CampaignDoc.model_validate(CampaignDoc(spec=spec.model_dump(mode="json"), order=recorded).to_json())
    assert decide_order(spec.order, cases, doc) == recorded
    # made before the order was recorded, by a spec without `order`: it ran case by case and still does
    old = CampaignDoc(spec=spec.model_dump(mode="json"))
    assert decide_order(spec.order, cases, old) == RunOrderRecord(order="cases")
    # an older campaign whose spec said "interleaved": plain round-robin, as it ran
    old_interleaved = CampaignDoc(spec={**spec.model_dump(mode="json"), "order": "interleaved"})
    assert decide_order(spec.order, cases, old_interleaved) == RunOrderRecord(order="interleaved", seed=None)
    with pytest.raises(SpecError, match="order 'cases'.*asks for 'interleaved'"):
        decide_order(spec_from_dict({**DOC, "order": "interleaved"}).order, cases, old)


@pytest.mark.parametrize("stored_order", [None, "cases", "interleaved"])
def test_an_older_campaign_resumes_with_the_same_spec_file(tmp_path, stored_order):
    from idsbench.run.preflight import check_resume
    from idsbench.store import atomic
    from idsbench.store.layout import CampaignDir

    spec = spec_from_dict({**DOC, **({"order": stored_order} if stored_order else {})})
    stored = spec.model_dump(mode="json")
    if stored_order == "interleaved":  # older versions kept an explicit "interleaved" in the dump
        stored["order"] = "interleaved"
    # written as older versions wrote it (the current model's dump never holds the spec's `order`)
    atomic.write_json(tmp_path / "campaign.json", {"schema": 2, "spec": stored, "environment": {}, "inputs": {},
                                                   "cases": []})
    check_resume(CampaignDir(tmp_path), tmp_path, spec.model_dump(mode="json"), True)  # no SpecError
    doc = read_campaign_doc(tmp_path)
    assert decide_order(spec.order, plan(spec), doc).order == (stored_order or "cases")
