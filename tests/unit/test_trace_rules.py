"""A trace that names its own rules (`traces = [{ path = "x.pcap", rules = ["x.rules"] }]`): planning,
validation, what preflight resolves, and the [hosts] runner's refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.errors import SpecError
from idsbench.plan import plan
from idsbench.spec import TraceEntry, load_spec, spec_from_dict


def _spec(traces: list[object], rules: object = None, **sensor: object) -> dict[str, object]:
    data: dict[str, object] = {"name": "t", "samples": 1, "traffic": {"traces": traces, "replayers": [1, 2]}}
    if rules is not None:
        sensor = {**sensor, "rules": rules}
    if sensor:
        data["sensor"] = sensor
    return data


def test_a_trace_with_its_own_rules_replaces_the_rules_axis_for_that_trace() -> None:
    spec = spec_from_dict(_spec(["a.pcap", {"path": "b.pcap", "rules": ["b.rules", "extra.rules"]}],
                                rules=["builtin:events"]))
    assert spec.traffic.traces[1] == TraceEntry(path="b.pcap", rules=["b.rules", "extra.rules"])
    assert spec.traffic.trace_refs() == ["a.pcap", "b.pcap"]
    cases = plan(spec)
    by_trace = {(c.trace, c.replayers): c for c in cases}
    assert len(cases) == 4
    plain, own = by_trace[("a.pcap", 1)], by_trace[("b.pcap", 1)]
    assert plain.rules == "default" and "rs_" not in plain.case_id
    assert own.rules == "b+extra" and "-rs_b_extra-" in own.case_id
    assert spec.rulesets_used() == {"default": ["builtin:events"], "b+extra": ["b.rules", "extra.rules"]}
    # the ids of the plain trace's cases are those of a campaign without the entry
    alone = {c.case_id for c in plan(spec_from_dict(_spec(["a.pcap"], rules=["builtin:events"])))}
    assert {plain.case_id, by_trace[("a.pcap", 2)].case_id} == alone


def test_with_a_ruleset_axis_only_the_plain_traces_take_the_axis() -> None:
    spec = spec_from_dict(_spec(["a.pcap", {"path": "b.pcap", "rules": "et.rules"}],
                                rules={"et": ["et.rules"], "small": ["small.rules"]}))
    cases = plan(spec)
    assert sorted((c.trace, c.rules) for c in cases if c.replayers == 1) == [
        ("a.pcap", "et"), ("a.pcap", "small"), ("b.pcap", "et")]   # b's own set has the axis' name and files
    assert spec.rulesets_used() == {"et": ["et.rules"], "small": ["small.rules"]}


def test_a_name_taken_by_other_files_gets_a_suffix_and_ids_stay_stable() -> None:
    data = _spec([{"path": "a.pcap", "rules": ["x/local.rules"]}, {"path": "b.pcap", "rules": ["y/local.rules"]},
                  {"path": "c.pcap", "rules": ["x/local.rules"]}])
    spec = spec_from_dict(data)
    # no case runs sensor.rules: preflight resolves and tests the traces' own sets only
    assert spec.rulesets_used() == {"local": ["x/local.rules"], "local#2": ["y/local.rules"]}
    names = {c.trace: c.rules for c in plan(spec)}
    assert names == {"a.pcap": "local", "b.pcap": "local#2", "c.pcap": "local"}
    assert [c.case_id for c in plan(spec)] == [c.case_id for c in plan(spec_from_dict(data))]


def test_plain_strings_dump_as_before_and_entries_round_trip(tmp_path: Path) -> None:
    plain = spec_from_dict(_spec(["a.pcap"]))
    assert plain.model_dump(mode="json")["traffic"]["traces"] == ["a.pcap"]
    toml = tmp_path / "s.toml"
    toml.write_text('name = "t"\n[traffic]\ntraces = ["a.pcap", { path = "b.pcap", rules = ["b.rules"] }]\n')
    spec = load_spec(toml)
    dumped = spec.model_dump(mode="json")
    assert dumped["traffic"]["traces"] == ["a.pcap", {"path": "b.pcap", "rules": ["b.rules"]}]
    assert spec_from_dict(dumped).traffic.traces == spec.traffic.traces


@pytest.mark.parametrize("entry,needle", [
    ({"path": "b.pcap"}, "traffic.traces"),
    ({"path": "b.pcap", "rules": []}, "traffic.traces"),
    ({"path": "", "rules": ["x.rules"]}, "traffic.traces"),
    ({"path": "b.pcap", "rules": ["x.rules"], "rule": 1}, "traffic.traces"),
])
def test_a_bad_entry_is_a_spec_error_naming_the_key(entry: dict[str, object], needle: str) -> None:
    with pytest.raises(SpecError) as err:
        spec_from_dict(_spec([entry]))
    assert needle in str(err.value) and "Fix:" in str(err.value)


def test_the_hosts_runner_refuses_it_before_anything_starts(tmp_path: Path) -> None:
    from idsbench.hosts.campaign import run_on_hosts

    data = _spec(["a.pcap", {"path": "b.pcap", "rules": ["b.rules"]}])
    data["hosts"] = {"host": [{"name": "s1", "role": "sender", "address": "198.18.0.2", "pair": "p",
                               "transmit_interface": "eth1"},
                              {"name": "r1", "role": "sensor", "address": "198.18.0.3", "pair": "p",
                               "capture_interface": "eth1"}]}
    spec = spec_from_dict(data)
    with pytest.raises(SpecError, match="b.pcap name their own rules") as err:
        run_on_hosts(spec, tmp_path / "out")
    assert "Fix:" in str(err.value)
    assert not (tmp_path / "out").exists()
