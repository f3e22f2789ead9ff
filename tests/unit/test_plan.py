import pytest

from idsbench.errors import SpecError
from idsbench.plan import plan, run_order, trace_label
from idsbench.spec import spec_from_dict


def _spec(**traffic):
    return spec_from_dict({"name": "p", "samples": 2, "traffic": traffic,
                           "setup": {"cpus": [0.5, None], "memory": "1g"}})


def test_cartesian_product_and_samples():
    cases = plan(_spec(replayers=[1, 2, 4], rate=["recorded", {"pps": 1000}]))
    assert len(cases) == 3 * 2 * 2
    assert all(len(c.samples) == 2 for c in cases)
    assert cases[0].samples[1].sample_id == f"{cases[0].case_id}/s1"
    assert {(c.replayers, c.rate.label, c.cpus) for c in cases} == {
        (r, rate, cpus) for r in (1, 2, 4) for rate in ("recorded", "pps=1000") for cpus in (0.5, None)
    }


def test_case_ids_stable_and_unique():
    first = [c.case_id for c in plan(_spec(replayers=[1, 2]))]
    again = [c.case_id for c in plan(_spec(replayers=[1, 2]))]
    assert first == again
    assert len(set(first)) == len(first)
    assert first[0].startswith("mixed-baremetal-r1-recorded-native-c0.5-m1g-")


def test_duplicate_axis_value_rejected():
    with pytest.raises(SpecError, match="same case twice"):
        plan(_spec(replayers=[2, 2]))


def test_trace_label():
    assert trace_label("builtin:mixed") == "mixed"
    assert trace_label("/data/bigFlows.pcap") == "bigFlows"


def test_config_is_an_axis_and_named_in_the_id():
    doc = {"name": "ab", "sensor": {"config": ["default", "tuning/tuned.yaml"]}}
    default, tuned = plan(spec_from_dict(doc))
    assert (default.config, tuned.config) == ("default", "tuning/tuned.yaml")
    assert "cfg" not in default.case_id and "-cfg_tuned-" in tuned.case_id
    single = spec_from_dict({"name": "one", "sensor": {"config": "tuned.yaml"}})
    assert single.sensor.config == ["tuned.yaml"] and single.sensor.overlays() == ["tuned.yaml"]
    assert spec_from_dict({"name": "old", "sensor": {"config": None}}).sensor.config == ["default"]
    with pytest.raises(SpecError, match="empty config name"):
        spec_from_dict({"name": "bad", "sensor": {"config": [""]}})


def test_run_order_cases_or_interleaved_and_the_spec_dump_holds_no_order():
    doc = {"name": "x", "samples": 3, "traffic": {"traces": ["builtin:mixed"], "replayers": [1, 2]}}
    spec = spec_from_dict({**doc, "order": "cases"})
    cases = plan(spec)
    a, b = (c.case_id for c in cases)
    by_case = [(c.case_id, s.index) for c, s in run_order(cases, "cases")]
    assert by_case == [(a, 0), (a, 1), (a, 2), (b, 0), (b, 1), (b, 2)]
    assert "order" not in spec.model_dump()  # campaign.json records the order (run/order.py)
    spec = spec_from_dict({**doc, "order": "interleaved"})
    cases = plan(spec)
    rounds = [(c.case_id, s.index) for c, s in run_order(cases, "interleaved")]
    assert rounds == [(a, 0), (b, 0), (a, 1), (b, 1), (a, 2), (b, 2)]  # no seed: plain round-robin
    assert all(case.case_id == sample.case_id for case, sample in run_order(cases, "interleaved", 7))
    assert "order" not in spec.model_dump() and spec_from_dict(doc).order is None
    with pytest.raises(SpecError, match="order"):
        spec_from_dict({**doc, "order": "random"})
