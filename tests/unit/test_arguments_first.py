"""Arguments checked before work, in the project's words (issue 41 item 5): a bad `--fail-on` or `--level`
exits 2 before anything is printed; `compare c1 c1` says the campaign is compared with itself; no help text
prints a literal `%%`; spec errors name the key as written, say what to write, and suggest the key meant."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from idsbench.cli.main import build_parser, main
from idsbench.errors import SpecError
from idsbench.spec import spec_from_dict
from tests.fakecampaign import FakeCase, write_campaign


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    a = write_campaign(tmp_path / "a", [FakeCase(samples=6, sensor_cpu=40.0)], name="a")
    b = write_campaign(tmp_path / "b", [FakeCase(samples=6, sensor_cpu=46.0)], name="b")
    return a, b


@pytest.mark.parametrize("fail_on, said", [("sensor_cpu_pcx:+5%", "did you mean sensor_cpu_pct"),
                                           ("ndr_pps:-5%", "no matched case has ndr_pps"),
                                           ("sensor_cpu_pct", "METRIC:[+|-]PERCENT%")])
def test_a_bad_fail_on_exits_2_before_the_table(two: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                                fail_on: str, said: str) -> None:
    assert main(["compare", str(two[0]), str(two[1]), "--fail-on", fail_on]) == 2
    out, err = capsys.readouterr()
    assert out == "" and said in err


def test_a_bad_level_exits_2_before_the_table(two: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(two[0]), str(two[1]), "--level", "0.95"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--level 0.95 is not a confidence level in percent" in err


def test_a_campaign_compared_with_itself_is_named(two: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a = two[0]
    assert main(["compare", str(a), str(a.parent / "." / a.name)]) == 0
    assert "compared with itself" in capsys.readouterr().err
    assert main(["compare", str(two[0]), str(two[1])]) == 0
    assert "itself" not in capsys.readouterr().err


@pytest.mark.parametrize("argv, said", [
    (["results", "{a}", "--cv-threshold", "-1"], "--cv-threshold -1 is not a positive number"),
    (["report", "{a}", "--baseline", "baremetall"], "--baseline baremetall: no setup kind has that name (did you "
                                                     "mean baremetal?)"),
    (["trend", "{a}", "--metric", "sensor_cpu_pcx"], "did you mean sensor_cpu_pct?"),
])
def test_other_commands_check_their_flags_first(two: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                                argv: list[str], said: str) -> None:
    assert main([a.format(a=two[0]) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and said in err and not (two[0] / "report.html").exists()


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _parsers(sub)
    return out


def test_no_help_text_prints_a_literal_double_percent() -> None:
    parsers = _parsers(build_parser())
    assert len(parsers) > 20
    for p in parsers:
        assert "%%" not in p.format_help(), p.prog


def _error(doc: dict[str, object]) -> str:
    with pytest.raises(SpecError) as exc:
        spec_from_dict({"name": "x", **doc})
    return str(exc.value)


def test_spec_errors_in_the_projects_words() -> None:
    assert "traffic.rate: 'fast' is not a rate" in _error({"traffic": {"rate": "fast"}})
    assert "traffic.rate[1]: 'fast' is not a rate" in _error({"traffic": {"rate": ["recorded", "fast"]}})
    duration = _error({"traffic": {"duration_s": -3}})
    assert "traffic.duration_s: is -3: give a number greater than 0" in duration and "Input should" not in duration
    assert "traffic.replayer: unknown key (did you mean `replayers`?)" in _error({"traffic": {"replayer": [1]}})
    assert "setup.acel: unknown key (did you mean `accel`?)" in _error({"setup": {"acel": "kvm"}})
    assert "sampels: unknown key (did you mean `samples`?)" in _error({"sampels": 3})
    assert "(did you mean" not in _error({"traffic": {"zzz": 1}})
    assert "traffic.flows: is \"same\": it must be 'distinct' or 'identical'" in _error({"traffic": {"flows": "same"}})
    assert "sensor.engine: is 3: write text" in _error({"sensor": {"engine": 3}})
    for doc in ({"traffic": {"rate": {"pps": None}}}, {"sensor": {"set": {"a": [1]}}}, {"traffic": {"traces": []}}):
        text = _error(doc)
        assert "None" not in text and "Input should" not in text, text
