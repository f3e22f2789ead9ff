"""Suricata builds as an engine axis: engine names, their errors before any sample, the build stamp,
a failing build refused with its log's tail, and the rule profile's parsing and medians."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from idsbench.buildstamp import parse_stamp
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.plan import plan
from idsbench.sensors import registry
from idsbench.sensors.ruleprofile import catalog, category_of, collect, parse_suricata_rule_perf
from idsbench.sensors.suricata import build
from idsbench.sensors.suricata.build import EngineRef, ensure_build, parse_engine
from idsbench.spec import Spec
from idsbench.store.rule_profile import read_profile


def test_engine_names_parse(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("IDSBENCH_SURICATA_SRC", str(tmp_path))
    plain = parse_engine("suricata@8.0.6")
    assert (plain.version, plain.source, plain.profiling) == ("8.0.6", tmp_path / "suricata-8.0.6.tar.xz", False)
    assert plain.build_options == ("profiling",)  # one build serves plain and profiling runs
    prof = parse_engine("suricata@8.0.6+profiling")
    assert prof.profiling and prof.build_options == ("profiling",)
    nohs = parse_engine("suricata@8.0.6+nohyperscan+profiling")
    assert nohs.build_options == ("profiling", "nohyperscan")
    path = parse_engine("suricata@/src/suricata-8.0.7.tar.gz")
    assert (path.version, path.source) == ("8.0.7", Path("/src/suricata-8.0.7.tar.gz"))
    installed = parse_engine("suricata+profiling")
    assert not installed.built and installed.profiling


@pytest.mark.parametrize(("name", "fix"), [
    ("suricata@8.0.6+fast", "+nohyperscan"),
    ("snort@3.12", "suricata@8.0.6"),
    ("suricata@latest", "suricata@8.0.6"),
    ("suricata+nohyperscan", "source build"),
])
def test_unknown_build_names_are_spec_errors_naming_the_fix(name: str, fix: str) -> None:
    with pytest.raises(SpecError) as err:
        registry.check_name(name)
    assert fix in str(err.value)


def test_unknown_build_name_fails_at_plan_time() -> None:
    spec = Spec.model_validate({"name": "x", "sensor": {"engine": ["suricata", "suricata@8.0.6+turbo"]},
                                "traffic": {"traces": ["builtin:mixed"]}})
    with pytest.raises(SpecError, match="turbo"):
        plan(spec)


def test_engine_axis_keeps_existing_case_ids_and_names_the_build() -> None:
    base = {"name": "x", "traffic": {"traces": ["builtin:mixed"]}}
    one = plan(Spec.model_validate(base))
    two = plan(Spec.model_validate({**base, "sensor": {"engine": ["suricata", "suricata@8.0.6+profiling"]}}))
    assert one[0].case_id == two[0].case_id
    assert "suricata_8.0.6_profiling" in two[1].case_id and two[1].engine == "suricata@8.0.6+profiling"


def test_missing_source_tree_is_an_error_naming_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("IDSBENCH_SURICATA_SRC", str(tmp_path / "nowhere"))
    with pytest.raises(EnvironmentMissing) as err:
        registry.engine("suricata@8.0.6")
    assert "suricata-8.0.6.tar.xz" in str(err.value) and "IDSBENCH_SURICATA_SRC" in str(err.value)


def test_profiling_on_the_installed_build_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = registry.engine("suricata+profiling")
    monkeypatch.setattr(type(engine), "_build_info_text",
                        "This is Suricata version 7.0.10 RELEASE\nFeatures: AF_PACKET\n"
                        "  AF_PACKET support:                       yes\n"
                        "  Profiling rules enabled:                 no\n", raising=False)
    monkeypatch.setattr(type(engine), "available", lambda self: True)
    with pytest.raises(EnvironmentMissing) as err:
        engine.require()
    assert "suricata@8.0.6+profiling" in str(err.value)


def test_profiling_on_a_build_without_it_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from idsbench.sensors.suricata.built import BuiltSuricata

    prefix = tmp_path / "8.0.6-profiling-abc"
    prefix.mkdir()
    (prefix / ".built").write_text(_stamp(profiling="no"))
    monkeypatch.setattr(build, "prefix_of", lambda ref: prefix)
    monkeypatch.setattr("idsbench.sensors.suricata.built.prefix_of", lambda ref: prefix)
    engine = BuiltSuricata(EngineRef("suricata@8.0.6+profiling", "suricata", "8.0.6", tmp_path, frozenset({"profiling"})))
    with pytest.raises(EnvironmentMissing, match="profiling"):
        engine.require()


def test_require_builds_a_missing_build_without_profiling_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`suricata@<tree>` (no +profiling) is built in preflight: require() makes the build before it looks for
    the binary (it used to look first and fail on a build not made yet)."""
    from idsbench.sensors.suricata import built

    prefix = tmp_path / "8.0.6-profiling-abc"
    made: list[Path | None] = []

    def fake_ensure(ref: EngineRef, where: Path | None = None) -> object:
        made.append(where)
        raise EnvironmentMissing("building failed")  # what a failing build raises: the require stops there

    monkeypatch.setattr(built, "prefix_of", lambda ref: prefix)
    monkeypatch.setattr(built, "ensure_build", fake_ensure)
    engine = built.BuiltSuricata(EngineRef("suricata@/src/t", "suricata", "8.0.6", tmp_path, frozenset()))
    with pytest.raises(EnvironmentMissing, match="building failed"):
        engine.require()
    assert made == [prefix]


def _stamp(profiling: str = "yes") -> str:
    return ("version=8.0.6\noptions=profiling\nconfigure=--enable-profiling-rules\nsource=/s/suricata-8.0.6.tar.xz\n"
            "source_sha256=895234\ncompilers=gcc;rustc 1.96\ndigest=1163df6de4b1\nhyperscan=yes\n"
            f"profiling_rules={profiling}\njobs=2\nbuild_s=250\ninstalled_bytes=1\nbuilt_unix=1\n")


def test_build_stamp_parses_and_names_a_missing_key(tmp_path: Path) -> None:
    b = parse_stamp(tmp_path, _stamp())
    assert (b.version, b.build_id, b.profiling_rules, b.hyperscan) == ("8.0.6", "1163df6de4b1", True, True)
    assert b.record()["source_sha256"] == "895234" and b.binary == tmp_path / "bin" / "suricata"
    assert b.profiler_clock == "cpuid-rdtsc-cpuid"  # a stamp from before the clock patch: upstream's read
    patched = parse_stamp(tmp_path, _stamp() + "patches=suricata-8.0.6-lfence-ticks.patch\nprofiler_clock=lfence-rdtsc\n")
    assert patched.profiler_clock == "lfence-rdtsc" and patched.record()["profiler_clock"] == "lfence-rdtsc"
    with pytest.raises(ValueError, match="digest"):
        parse_stamp(tmp_path, _stamp().replace("digest=", "x="))


@pytest.mark.skipif(shutil.which("cbindgen") is None or shutil.which("cargo") is None,
                    reason="the build script checks for its tools first")
def test_failing_build_is_refused_with_the_log_tail(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A source tree whose configure fails: the script stops, keeps the log, and the error quotes it."""
    tree = tmp_path / "suricata-9.9.9"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "suricata.c").write_text("int main(void) { return 0; }\n")
    (tree / "configure.ac").write_text("AC_INIT([suricata],[9.9.9])\n")
    (tree / "configure").write_text("#!/bin/sh\necho 'checking for the impossible... no'\n"
                                    "echo 'configure: error: the impossible is missing' >&2\nexit 1\n")
    (tree / "configure").chmod(0o755)
    monkeypatch.setenv("IDSBENCH_CACHE", str(tmp_path / "cache"))
    ref = parse_engine(f"suricata@{tree}")
    with pytest.raises(EnvironmentMissing) as err:
        ensure_build(ref)
    text = str(err.value)
    assert "the impossible is missing" in text and "failed" in text and "make system" in text
    assert list((tmp_path / "cache" / "suricata").glob("9.9.9-profiling-*.failed.log"))
    assert "the compiler said" in text  # configure's error line, quoted before the log's tail
    assert not list((tmp_path / "cache" / "suricata").glob("9.9.9-profiling-*/"))  # no half-built prefix left


PERF = {"timestamp": "2026-11-26T19:00:00", "sort": "ticks", "rules": [
    {"signature_id": 2001, "gid": 1, "rev": 3, "checks": 10, "matches": 1, "ticks_total": 900, "ticks_max": 300,
     "ticks_avg": 90, "ticks_avg_match": 0, "ticks_avg_nomatch": 0, "percent": 90},
    {"signature_id": 2002, "gid": 1, "rev": 1, "checks": 5, "matches": 0, "ticks_total": 100, "ticks_max": 40,
     "ticks_avg": 20, "ticks_avg_match": 0, "ticks_avg_nomatch": 0, "percent": 10}]}


def test_rule_perf_log_becomes_the_samples_series_file(tmp_path: Path) -> None:
    other = {**PERF, "sort": "number of checks", "rules": PERF["rules"][::-1]}
    (tmp_path / "rule_perf.log").write_text(json.dumps(other) + "\n" + json.dumps(PERF) + "\n")
    out = collect(tmp_path)
    assert out is not None
    rows = read_profile(out)
    assert [(r.sid, r.checks, r.ticks_total, r.ticks_max) for r in rows] == [(2001, 10, 900, 300), (2002, 5, 100, 40)]
    assert collect(tmp_path / "none") is None
    with pytest.raises(ValueError, match="no rule profile"):
        parse_suricata_rule_perf('{"other": 1}\n')


def test_catalog_names_rules_their_category_and_costly_keywords(tmp_path: Path) -> None:
    f = tmp_path / "et.rules"
    f.write_text('alert http any any -> any any (msg:"ET POLICY curl"; flow:established; '
                 'pcre:"/curl/i"; flowbits:set,x; sid:2001; rev:3;)\n'
                 '# alert ip any any -> any any (msg:"ET SCAN off"; sid:2003; rev:1;)\n'
                 'alert tcp any any -> any any (msg:"local rule"; content:"x"; sid:9; rev:1;)\n')
    info = catalog([f])
    assert set(info) == {2001, 9}
    assert (info[2001].category, info[2001].hints, info[2001].file) == ("emerging-policy", ("pcre", "flowbits"),
                                                                         "et.rules")
    assert info[9].category == "et" and category_of("GPL ICMP_INFO x", "a.rules") == "gpl-icmp_info"


def test_ruleset_axis_names_sets_and_keeps_flat_ids() -> None:
    base = {"name": "x", "traffic": {"traces": ["builtin:mixed"]}}
    flat = plan(Spec.model_validate({**base, "sensor": {"rules": ["a.rules", "b.rules"]}}))
    assert [c.rules for c in flat] == ["default"]
    assert "rs_" not in flat[0].case_id
    axis = Spec.model_validate({**base, "sensor": {"rules": [["a.rules"], ["a.rules", "b.rules"]]}})
    assert axis.sensor.ruleset_axis() == [("a", ["a.rules"]), ("a+b", ["a.rules", "b.rules"])]
    assert axis.sensor.rules == ["a.rules", "b.rules"]
    cases = plan(axis)
    assert [c.rules for c in cases] == ["a", "a+b"] and "rs_a_b" in cases[1].case_id
    named = Spec.model_validate({**base, "sensor": {"rules": {"et": ["et.rules"], "et-minus": ["m.rules"]}}})
    assert [n for n, _ in named.sensor.ruleset_axis()] == ["et", "et-minus"]
    again = Spec.model_validate(named.model_dump(mode="json"))  # a stored spec reads back the same
    assert again.sensor.ruleset_axis() == named.sensor.ruleset_axis()


def test_builds_compared_case_by_case_through_the_seam() -> None:
    from idsbench.analysis.builds import compare_along
    from idsbench.store.schema import CaseParams, CaseResult

    def row(engine: str, cpu: float, rate: str = "1000pps") -> CaseResult:
        return CaseResult(case=f"{engine}-{rate}", params=CaseParams(trace="t", replayers=1, rate=rate, engine=engine),
                          samples=6, medians={"sensor_cpu_pct": cpu, "alerts": 4.0},
                          cis={"sensor_cpu_pct": (cpu - 1, cpu + 1), "alerts": (4.0, 4.0)},
                          values={"sensor_cpu_pct": (cpu - 1, cpu - 0.5, cpu, cpu, cpu + 0.5, cpu + 1),
                                  "alerts": (4.0,) * 6})

    rows = [row("suricata", 30.0), row("suricata@8.0.6", 20.0), row("suricata", 50.0, "2000pps")]
    (cmp,) = compare_along(rows, "engine")
    assert cmp.engines == ("suricata", "suricata@8.0.6")
    assert cmp.deltas["sensor_cpu_pct"].direction == "lower" and cmp.deltas["sensor_cpu_pct"].diff == -10.0
    assert cmp.deltas["alerts"].direction == "same"


def test_a_negative_match_figure_is_no_count_in_the_series_file_or_the_rows(tmp_path: Path) -> None:
    """Suricata 8 adds -1 per "cannot match" check of a transaction rule: such a figure is not a count."""
    tx_rule = {**PERF["rules"][1], "signature_id": 2003, "matches": -6}
    (tmp_path / "rule_perf.log").write_text(json.dumps({**PERF, "rules": [*PERF["rules"], tx_rule]}) + "\n")
    out = collect(tmp_path)
    assert out is not None
    assert {r.sid: r.matches for r in read_profile(out)} == {2001: 1, 2002: 0, 2003: None}
    assert "2003,1,5,,100" in out.read_text()  # stored empty, not as -6


def test_rulesets_compared_along_their_axis_with_the_effect_and_its_ci() -> None:
    from idsbench.analysis.builds import compare_along
    from idsbench.report.html import _axis_views
    from idsbench.report.table import cell
    from idsbench.store.schema import CaseParams, CaseResult

    def row(rules: str, us: float, engine: str = "suricata") -> CaseResult:
        values = tuple(us * f for f in (0.97, 0.99, 1.0, 1.01, 1.03, 1.02))
        return CaseResult(case=f"{engine}-{rules}", params=CaseParams(trace="t", replayers=1, rate="1000pps",
                                                                      engine=engine, rules=rules),
                          samples=6, medians={"sensor_us_per_pkt": us}, cis={"sensor_us_per_pkt": (us * 0.97, us * 1.03)},
                          values={"sensor_us_per_pkt": values})

    rows = [row("et", 100.0), row("et-minus-x", 60.0), row("et", 200.0, "suricata@8.0.6")]
    (cmp,) = compare_along(rows, "rules", ["sensor_us_per_pkt"])  # the 8.0.6 case has no partner ruleset
    assert cmp.values == ("et", "et-minus-x")
    delta = cmp.deltas["sensor_us_per_pkt"]
    assert delta.verdict == "lower" and delta.effect_pct == pytest.approx(-40.0)
    assert delta.effect_ci is not None and delta.effect_ci[0] < -40.0 < delta.effect_ci[1] < -30.0
    (engines,) = compare_along(rows, "engine", ["sensor_us_per_pkt"])
    assert engines.values == ("suricata", "suricata@8.0.6")
    sections = {s["axis"]: s for s in _axis_views(rows)}
    assert sections["rules"]["title"] == "Rulesets compared" and sections["engine"]["title"] == "Builds compared"
    table = sections["rules"]["table"]
    (shown,) = [{c.key: cell(v) for c, v in zip(table.columns, r.cells)} for r in table.rows]
    us = shown["sensor_us_per_pkt"]  # the metric's format (2 decimals), compare's verdict under it
    assert us.text == "100.00 → 60.00" and us.note.startswith("▼ lower -40.0% [") and us.note.endswith("] 95% CI (better)")
    assert (shown["base"].text, shown["contender"].text) == ("et", "et-minus-x")


def test_a_ruleset_without_one_category_keeps_every_other_line(tmp_path: Path) -> None:
    from idsbench.sensors.ruleprofile import write_without_category

    src = tmp_path / "et.rules"
    src.write_text('alert tcp any any -> any any (msg:"GPL NETBIOS x"; content:"a"; sid:2100001; rev:1;)\n'
                   '# alert tcp any any -> any any (msg:"GPL NETBIOS off"; sid:2100002; rev:1;)\n'
                   'alert tcp any any -> any any (msg:"ET POLICY y"; content:"b"; sid:2000003; rev:2;)\n'
                   'alert tcp any any -> any any (msg:"GPL NETBIOS z"; sid: 2100004 ; rev:1;)\n')
    out = tmp_path / "minus.rules"
    assert write_without_category(src, "gpl-netbios", out) == 2
    assert out.read_text().splitlines() == src.read_text().splitlines()[1:3]


def test_a_finished_build_is_refused_while_the_builds_are_pending(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """IDSBENCH_BUILDS_PENDING=1 (`make test` while its builds run): the Suricata and the Snort build are
    refused by name, even finished ones, so no test uses one half-made or starts a second build of it; a
    test that needs one must carry the `builds` marker. Without the variable the same stamp reads."""
    from idsbench.sensors.snort.config import find_install

    prefix = tmp_path / "8.0.6-profiling-abc"
    prefix.mkdir()
    (prefix / ".built").write_text(_stamp())
    assert build.find_build(prefix) is not None
    monkeypatch.setenv("IDSBENCH_BUILDS_PENDING", "1")
    with pytest.raises(EnvironmentMissing, match="IDSBENCH_BUILDS_PENDING") as err:
        build.find_build(prefix)
    assert str(prefix) in str(err.value) and "`builds` marker" in (err.value.fix or "")
    with pytest.raises(EnvironmentMissing, match="IDSBENCH_BUILDS_PENDING"):
        ensure_build(EngineRef("suricata@8.0.6", "suricata", "8.0.6", tmp_path, frozenset()), prefix)
    with pytest.raises(EnvironmentMissing, match="the Snort build at .* IDSBENCH_BUILDS_PENDING"):
        find_install(tmp_path)
