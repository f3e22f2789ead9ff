"""Duet mode's spec side: what a duet may vary (and the errors naming the fix), how its cases pair
into sides a and b, where the two sensors run and how they swap slots."""

from __future__ import annotations

import pytest

from idsbench.errors import SpecError
from idsbench.plan import duet_pairs, plan
from idsbench.run.duet.place import TWO_CPU_DEFAULT, place, slot_of, swapped
from idsbench.spec import spec_from_dict
from idsbench.spec.duet import CELL_AXES, SIDE_AXES


def _spec(**parts: object):
    doc: dict[str, object] = {"name": "d", "mode": "duet", "samples": 4,
                              "traffic": {"traces": ["t.pcap"], "rate": {"pps": 1000}}}
    for key, value in parts.items():
        section, _, name = key.partition("__")
        if name:
            doc.setdefault(section, {})
            doc[section] = {**doc[section], name: value}  # type: ignore[dict-item]
        else:
            doc[key] = value
    return spec_from_dict(doc)


def test_single_mode_is_the_default_and_leaves_the_dump_unchanged():
    s = spec_from_dict({"name": "x"})
    assert s.mode == "single" and "mode" not in s.model_dump(mode="json")
    assert _spec().model_dump(mode="json")["mode"] == "duet"


def test_aa_duet_is_the_one_case_twice_with_distinct_ids():
    cases = plan(_spec())
    assert [c.duet_side for c in cases] == ["a", "b"]
    a, b = cases
    assert a.case_id != b.case_id and "duet_a" in a.case_id and "duet_b" in b.case_id
    assert {**a.params(), "duet_side": None} == {**b.params(), "duet_side": None}
    (pair,) = duet_pairs(cases)
    assert pair.axis is None and pair.a is a and pair.b is b and pair.values() is None
    assert pair.pair_id.startswith("duet-aa-") and len(a.samples) == 4


def test_engine_duet_sides_in_the_order_written():
    cases = plan(_spec(sensor__engine=["suricata@8.0.6", "suricata"]))
    a, b = cases
    assert (a.engine, a.duet_side, b.engine, b.duet_side) == ("suricata@8.0.6", "a", "suricata", "b")
    (pair,) = duet_pairs(cases)
    assert pair.axis == "sensor.engine" and pair.values() == ("suricata@8.0.6", "suricata")
    assert pair.pair_id.startswith("duet-engine-")


def test_ruleset_and_config_axes_pair_too():
    rules = plan(_spec(sensor__rules={"base": ["builtin:events"], "more": ["builtin:events", "x.rules"]}))
    (pair,) = duet_pairs(rules)
    assert pair.axis == "sensor.rules" and pair.values() == ("base", "more")
    configs = plan(_spec(sensor__config=["default", "tuned.yaml"]))
    assert duet_pairs(configs)[0].values() == ("default", "tuned.yaml")


def test_single_mode_ids_do_not_change():
    single = spec_from_dict({"name": "d", "traffic": {"traces": ["t.pcap"], "rate": {"pps": 1000}}})
    (case,) = plan(single)
    assert case.duet_side is None and "duet" not in case.case_id


@pytest.mark.parametrize("parts,words,fix", [
    ({"sensor__engine": ["suricata", "snort"], "sensor__config": ["default", "t.yaml"]},
     "sensor.engine (2 values) and sensor.config (2 values) both have several values: which are the sides?",
     "keep several values on one"),
    ({"sensor__engine": ["suricata", "snort"], "setup__kinds": ["baremetal", "container"]},
     "sensor.engine (2 values) and setup.kinds (2 values) both have several values", "its first value is the reference"),
    ({"setup__kinds": ["baremetal", "container", "baremetal"]},
     "the side axis setup.kinds lists baremetal more than once", "list each value of setup.kinds once"),
    ({"sensor__engine": ["suricata", "suricata"]}, "sensor.engine lists suricata more than once", "once"),
    ({"setup__kinds": ["vm-vfio"], "setup__vfio_device": "0000:3b:00.1"},
     "does not run in setup kind 'vm-vfio'", "'vm'"),
    ({"profile__perf": True}, "[profile] perf", "profile.perf = false"),
])
def test_bad_duets_are_refused_at_load_naming_the_fix(parts, words, fix):
    with pytest.raises(SpecError) as err:
        _spec(**parts)
    assert words in err.value.message and fix in (err.value.fix or ""), (err.value.message, err.value.fix)


def test_precision_settings_belong_to_a_duet_and_need_a_precision():
    with pytest.raises(SpecError) as err:
        spec_from_dict({"name": "x", "duet": {"precision": 0.01}})
    assert "apply to mode = \"duet\"" in err.value.message and "mode = \"duet\"" in (err.value.fix or "")
    with pytest.raises(SpecError, match="budget_s bounds the samples added"):
        _spec(duet={"budget_s": 600})
    with pytest.raises(SpecError, match="duet.precision"):
        _spec(duet={"precision": 0.7})
    s = _spec(duet={"precision": 0.01, "budget_s": 600})
    assert (s.duet.precision, s.duet.budget_s) == (0.01, 600)
    assert s.model_dump(mode="json")["duet"] == {"precision": 0.01, "budget_s": 600}
    assert "duet" not in _spec().model_dump(mode="json")  # dumps of older specs are unchanged (resume)


def test_setup_kinds_are_a_side_axis_and_k_values_give_k_minus_1_pairs():
    cases = plan(_spec(setup__kinds=["baremetal", "container", "container-vtap"]))
    assert [(c.setup, c.duet_side, c.duet_versus) for c in cases] == [
        ("baremetal", "a", "container"), ("container", "b", None),
        ("baremetal", "a", "container-vtap"), ("container-vtap", "b", None)]
    assert len({c.case_id for c in cases}) == 4 and "vs_container_vtap" in cases[2].case_id
    pairs = duet_pairs(cases)
    assert [(p.axis, p.ref, p.b.setup, p.cell) for p in pairs] == [
        ("setup.kinds", "baremetal", "container", {}), ("setup.kinds", "baremetal", "container-vtap", {})]
    assert pairs[0].a is cases[0] and pairs[1].a is cases[2] and pairs[0].pair_id.startswith("duet-kinds-")
    assert len({p.pair_id for p in pairs}) == 2


def test_two_values_keep_their_ids_and_the_reference_has_no_versus():
    cases = plan(_spec(setup__kinds=["baremetal", "container"]))
    assert [c.duet_versus for c in cases] == [None, None] and "vs_" not in cases[0].case_id


def test_a_duet_spec_is_a_matrix_of_duets_each_cell_its_pairs():
    cases = plan(_spec(setup__kinds=["baremetal", "container", "container-vtap"], traffic__replayers=[1, 2]))
    pairs = duet_pairs(cases)
    assert len(pairs) == 4 and len(cases) == 8
    assert [(p.cell, p.b.setup) for p in pairs] == [
        ({"traffic.replayers": 1}, "container"), ({"traffic.replayers": 1}, "container-vtap"),
        ({"traffic.replayers": 2}, "container"), ({"traffic.replayers": 2}, "container-vtap")]
    for p in pairs:  # one replay per pair: both sides share every value of the cell
        assert p.a.replayers == p.b.replayers and p.a.rate == p.b.rate
    aa = duet_pairs(plan(_spec(traffic__rate=[{"pps": 1000}, {"pps": 8000}], setup__cpus=[0.5, 1])))
    assert [p.cell for p in aa] == [
        {"traffic.rate": "pps=1000", "setup.cpus": 0.5}, {"traffic.rate": "pps=8000", "setup.cpus": 0.5},
        {"traffic.rate": "pps=1000", "setup.cpus": 1.0}, {"traffic.rate": "pps=8000", "setup.cpus": 1.0}]
    assert all(p.axis is None and p.a.case_id != p.b.case_id for p in aa)


def test_a_trace_with_its_own_rules_cannot_pair_on_the_rules_axis():
    with pytest.raises(SpecError) as err:
        plan(_spec(traffic__traces=["t.pcap", {"path": "u.pcap", "rules": ["u.rules"]}],
                   sensor__rules={"base": ["builtin:events"], "more": ["builtin:events", "x.rules"]}))
    assert "take 1 of the 2 values of the side axis sensor.rules" in err.value.message


def test_hosts_are_refused():
    with pytest.raises(SpecError, match="this machine only"):
        _spec(hosts={"host": [{"name": "s", "role": "sensor", "address": "198.18.0.2"},
                              {"name": "t", "role": "sender", "address": "198.18.0.3"}]})


def test_the_side_axes_table_names_what_may_differ():
    assert [a.key for a in SIDE_AXES] == ["sensor.engine", "sensor.rules", "sensor.config", "sensor.capture",
                                          "setup.kinds"]
    assert {f.key for f in CELL_AXES} >= {"traffic.replayers", "traffic.rate", "traffic.traces", "setup.cpus"}


def test_swap_schedule_alternates_and_balances():
    assert [slot_of("a", k) for k in range(6)] == [0, 1, 0, 1, 0, 1]
    assert [slot_of("b", k) for k in range(6)] == [1, 0, 1, 0, 1, 0]
    assert [swapped(k) for k in range(4)] == [False, True, False, True]
    assert sum(swapped(k) for k in range(6)) == 3


def test_placement_two_cpus_both_ways():
    shared = place([0, 1], None, kind="shared")
    assert shared.sender_cpus == (0,) and [s.cpus for s in shared.slots] == [(1,), (1,)]
    assert [s.quota for s in shared.slots] == [None, None] and shared.note is None
    assert [s.quota for s in place([0, 1], 0.3, kind="shared").slots] == [0.3, 0.3]
    split = place([0, 1], None, kind="split")
    assert split.sender_cpus == (0, 1) and [s.cpus for s in split.slots] == [(0,), (1,)]
    assert [s.quota for s in split.slots] == [None, None]
    assert place([0, 1], None).kind == TWO_CPU_DEFAULT


def test_placement_more_cpus_splits_and_keeps_the_sender_apart():
    p = place([0, 1, 2, 3, 4], 1.0)
    assert p.kind == "split" and p.sender_cpus == (0,)
    assert [s.cpus for s in p.slots] == [(1, 2), (3, 4)] and [s.quota for s in p.slots] == [1.0, 1.0]
    assert "slot 0 on CPU 1,2" in p.describe()


def test_placement_one_cpu_and_an_oversized_quota_say_so():
    p = place([0], None)
    assert p.kind == "shared" and p.slots[0].cpus == (0,) and p.slots[0].quota is None
    crowded = place([0, 1], 0.8, kind="shared")
    assert crowded.note and "more than the set holds" in crowded.note


def test_placement_follows_the_spec_cpuset():
    p = place([0, 1, 2, 3], None, sensor_cpuset=[2, 3])
    assert p.sender_cpus == (0, 1) and [s.cpus for s in p.slots] == [(2,), (3,)]


def test_an_empty_ruleset_side_is_refused_unless_allowed():
    rules = {"base": ["a.rules"], "more": []}
    with pytest.raises(SpecError) as err:
        _spec(sensor={"rules": rules})
    assert "'more' has no rule files" in err.value.message and "allow_empty = true" in (err.value.fix or "")
    s = _spec(sensor={"rules": rules}, duet={"allow_empty": True})
    assert s.duet.allow_empty and s.model_dump(mode="json")["duet"] == {"precision": None, "budget_s": None,
                                                                          "allow_empty": True}
    # a named empty set that is no side (single mode) is the user's own affair
    assert spec_from_dict({"name": "x", "sensor": {"rules": rules}}).sensor.rulesets["more"] == []


def test_an_aa_duet_says_so_and_names_a_flat_list_of_rule_files_as_one_ruleset():
    from idsbench.spec.duet import aa_announcement

    flat = _spec(sensor={"rules": ["a.rules", "b.rules"]})
    line = aa_announcement(flat)
    assert line is not None and line.startswith("A/A duet: both sides run the same case")
    assert "a.rules, b.rules" in line and "is ONE ruleset on each side" in line and "rules = { base" in line
    one = aa_announcement(_spec(sensor={"rules": ["a.rules"]}))
    assert one is not None and "ONE ruleset" not in one
    assert aa_announcement(_spec(sensor={"rules": {"base": ["a.rules"], "more": ["a.rules", "b.rules"]}})) is None
    assert aa_announcement(spec_from_dict({"name": "x"})) is None  # single mode: nothing to announce
