from pathlib import Path

import pytest

from idsbench.errors import InputError, SpecError
from idsbench.spec import Rate, load_spec, parse_size, spec_from_dict


def test_quick_example_loads(tmp_path):
    from pathlib import Path

    spec = load_spec(Path(__file__).parents[2] / "examples" / "quick.toml")
    assert spec.name == "quick"
    assert spec.traffic.replayers == [1, 2, 4]
    assert spec.traffic.rate == [Rate(kind="recorded")]
    assert spec.setup.cpus == [1.0] and spec.setup.memory == ["2g"]


@pytest.mark.parametrize("raw,kind,value", [
    ("recorded", "recorded", None), ("topspeed", "topspeed", None),
    ({"multiplier": 2.0}, "multiplier", 2.0), ({"mbps": 100}, "mbps", 100), ({"pps": 20000}, "pps", 20000),
])
def test_rate_forms(raw, kind, value):
    spec = spec_from_dict({"name": "x", "traffic": {"rate": raw}})
    assert spec.traffic.rate[0].kind == kind
    assert spec.traffic.rate[0].value == value


def test_unknown_key_is_named():
    with pytest.raises(SpecError) as err:
        spec_from_dict({"name": "x", "traffic": {"replayer": [1]}})
    assert "traffic.replayer" in str(err.value)
    assert "unknown key" in str(err.value)


@pytest.mark.parametrize("data,needle", [
    ({"name": "x", "traffic": {"rate": "fast"}}, "traffic.rate"),
    ({"name": "x", "traffic": {"rate": {"pps": -5}}}, "positive"),
    ({"name": "x", "traffic": {"replayers": [0]}}, "traffic.replayers"),
    ({"name": "x", "setup": {"cpus": 0}}, "cpus must be > 0"),
    ({"name": "x", "setup": {"memory": "1k"}}, "below 16 MiB"),
    ({"name": "bad name!"}, "name"),
    ({"name": "x", "samples": 0}, "samples"),
])
def test_bad_values_name_the_key(data, needle):
    with pytest.raises(SpecError) as err:
        spec_from_dict(data)
    assert needle in str(err.value)
    assert "Fix:" in str(err.value)


def test_names_the_registries_define_are_checked_by_plan():
    """The spec is a leaf (the campaign reader types stored specs with it): setup kinds and engine tables
    are checked when the campaign is planned, before anything starts."""
    from idsbench.plan import plan

    for data, needle in [({"name": "x", "setup": {"kinds": ["vmware"]}}, "setup.kinds"),
                         ({"name": "x", "sensor": {"set": {"snrt": {"a": 1}}}}, "sensor.set.snrt")]:
        spec = spec_from_dict(data)
        with pytest.raises(SpecError) as err:
            plan(spec)
        assert needle in str(err.value) and "Fix:" in str(err.value)


def test_bad_toml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(bad)
    with pytest.raises(InputError, match="does not exist"):
        load_spec(tmp_path / "nope.toml")


def test_overrides_render_booleans():
    spec = spec_from_dict({"name": "x", "sensor": {"set": {"stream.memcap": "64mb", "a.b": True, "n": 3}}})
    assert spec.sensor.overrides() == {"stream.memcap": "64mb", "a.b": "yes", "n": "3"}


@pytest.mark.parametrize("text,expected", [
    ("512m", 512 * 2**20), ("2g", 2 * 2**30), ("1.5GiB", int(1.5 * 2**30)), ("4096", 4096), (1024, 1024),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


def test_paths_relative_to_spec(tmp_path):
    (tmp_path / "s.toml").write_text('name = "x"\n[traffic]\ntraces = ["caps/a.pcap"]\n')
    spec = load_spec(tmp_path / "s.toml")
    assert spec.resolve_path("caps/a.pcap") == tmp_path / "caps" / "a.pcap"


def test_flows_and_duration():
    spec = spec_from_dict({"name": "x", "traffic": {"duration_s": 30, "flows": "identical"}})
    assert spec.traffic.duration_s == 30 and spec.traffic.flows == "identical"
    assert spec_from_dict({"name": "x"}).traffic.flows == "distinct"
    with pytest.raises(SpecError, match="either loops or duration_s"):
        spec_from_dict({"name": "x", "traffic": {"duration_s": 30, "loops": 2}})
    with pytest.raises(SpecError, match="traffic.flows"):
        spec_from_dict({"name": "x", "traffic": {"flows": "random"}})


@pytest.mark.parametrize("example", sorted((Path(__file__).parents[2] / "examples").glob("*.toml")),
                         ids=lambda p: p.name)
def test_every_example_spec_loads(example):
    spec = load_spec(example)
    assert spec.name and spec.samples >= 1
