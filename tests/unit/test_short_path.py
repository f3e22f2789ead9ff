"""The short path (issue 41 item 7): `idsbench run --trace PCAP [--rules FILE …] [--engine E] [--rate R]
[--duet-rules A B] [--print-spec]` makes the spec a file would hold; bad combinations are refused before any
work. The real run: tests/integration/test_short_path.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tomllib

from idsbench.cli.main import main
from idsbench.errors import SpecError
from idsbench.quickspec import QuickFlags, parse_rate, spec_doc, to_toml
from idsbench.spec import Rate, spec_from_dict


def test_the_flags_make_a_spec(tmp_path: Path) -> None:
    doc = spec_doc(QuickFlags(traces=("caps/my.pcap",), rules=("my.rules", "/abs/more.rules"), engines=("snort",),
                              rate="2x", samples=3), tmp_path)
    assert doc == {"name": "my", "samples": 3,
                   "traffic": {"traces": [str(tmp_path / "caps/my.pcap")], "rate": {"multiplier": 2.0}},
                   "sensor": {"engine": ["snort"], "rules": [str(tmp_path / "my.rules"), "/abs/more.rules"]}}
    spec = spec_from_dict(doc)
    assert spec.sensor.engine == ["snort"] and spec.traffic.rate == [Rate(kind="multiplier", value=2.0)]
    assert tomllib.loads(to_toml(doc, comment="made by: a test")) == doc


def test_defaults_are_the_bundled_rules_and_the_recorded_rate(tmp_path: Path) -> None:
    doc = spec_doc(QuickFlags(traces=("/x/a b.pcap",)), tmp_path)
    assert doc == {"name": "a-b", "traffic": {"traces": ["/x/a b.pcap"]}, "sensor": {"rules": ["builtin:events"]}}
    spec = spec_from_dict(doc)
    assert spec.samples == 6 and spec.traffic.rate == [Rate(kind="recorded")] and spec.mode == "single"


def test_duet_rules_make_a_duet_of_two_named_rulesets(tmp_path: Path) -> None:
    doc = spec_doc(QuickFlags(traces=("t.pcap",), duet_rules=("/r/base.rules", "/r/base+more.rules")), tmp_path)
    spec = spec_from_dict(doc)
    assert spec.mode == "duet" and spec.sensor.rulesets == {"base": ["/r/base.rules"],
                                                             "base+more": ["/r/base+more.rules"]}
    same = spec_doc(QuickFlags(traces=("t.pcap",), duet_rules=("/a/x.rules", "/b/x.rules")), tmp_path)
    assert list(same["sensor"]["rules"]) == ["a-x", "b-x"]  # type: ignore[call-overload]
    assert "duet" in to_toml(doc)


@pytest.mark.parametrize("text, rate", [("recorded", "recorded"), ("TOPSPEED", "topspeed"), ("2x", {"multiplier": 2.0}),
                                        ("20000pps", {"pps": 20000.0}), ("100 mbps", {"mbps": 100.0}),
                                        ("pps=500", {"pps": 500.0})])
def test_rates(text: str, rate: object) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("argv, said", [
    (["examples/quick.toml", "--trace", "x.pcap"], "--trace makes a spec; examples/quick.toml is one already"),
    (["examples/quick.toml", "--print-spec"], "--print-spec prints the spec --trace and its flags make"),
    (["--trace", "x.pcap", "--rules", "a.rules", "--duet-rules", "b.rules", "c.rules"], "give one of them"),
    (["--rules", "a.rules"], "--rules without --trace"),
    ([], "give a spec file, or a capture with --trace"),
    (["--trace", "x.pcap", "--rate", "fast"], "--rate 'fast' is not a rate"),
    (["--trace", "x.pcap", "--rate", "0pps"], "--rate '0pps' is not a rate"),
    (["--trace", "x.pcap", "--samples", "0"], "--samples 0"),
    (["--trace", "x.pcap", "--engine", "suricata", "--engine", "snort", "--duet-rules", "a.rules", "b.rules"],
     "mode = \"duet\""),
])
def test_bad_combinations_are_refused_before_any_work(argv: list[str], said: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *argv, "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert said in err and "Fix:" in err and out == ""
    assert not (tmp_path / "out").exists()


def test_print_spec_prints_the_toml_and_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["run", "--trace", "my.pcap", "--rules", "my.rules", "--rate", "2000pps", "--print-spec"]
    monkeypatch.setattr(sys, "argv", ["idsbench", *argv])
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0
    text = capsys.readouterr().out
    doc = tomllib.loads(text)
    assert doc["traffic"] == {"traces": [str(tmp_path / "my.pcap")], "rate": {"pps": 2000.0}}
    assert doc["sensor"]["rules"] == [str(tmp_path / "my.rules")]
    assert text.startswith("# made by: idsbench run --trace my.pcap --rules my.rules --rate 2000pps\n")
    with pytest.raises(SpecError):
        spec_doc(QuickFlags(traces=()), tmp_path)
