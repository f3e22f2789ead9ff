"""Rule profiling beyond Suricata: Snort 3's rule profile table read by its column widths, the unit column
of rule_profile.csv (old files read as ticks), `snort+profiling` and its errors before any sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.errors import SpecError
from idsbench.plan import plan
from idsbench.sensors import registry
from idsbench.sensors.ruleprofile import (
    collect,
    collect_sample,
    loaded_rules,
    parse_snort_rule_profile,
    profiling_requested,
    snort_rule_files,
)
from idsbench.sensors.snort import Snort
from idsbench.sensors.snort.config import RULE_PROFILER_LUA, SnortOptions, render_config
from idsbench.spec import Spec
from idsbench.store.layout import RULE_PROFILE_FILE
from idsbench.store.rule_profile import RuleCost, read_profile, write_profile

HEADER = ("#       gid   sid rev    checks matches alerts time (us) avg/check avg/match avg/non-match timeouts "
          "suspends rule_time (%)\n"
          "=       ===   === ===    ====== ======= ====== ========= ========= ========= ============= ======== "
          "======== =============\n")
# Snort 3.12.2 `-r` with ET rules, count = 5 (the issue's capture)
WORST_5 = ("--------------------------------------------------\n"
           "rule profile (worst 5, sorted by total_time)\n" + HEADER +
           "1         4   112   1         1       0      0         7         7         0             7        0"
           "        0       0.01522\n"
           "2         4    57   1         1       1      0         7         7         7             0        0"
           "        0       0.01522\n")
# Snort 3.12.2 `-r nf_evidence02.pcap`, count = 0, with 7-digit sids: they run into the gid column
ALL = ("rule profile (all, sorted by total_time)\n" + HEADER +
       "1         12012345   2        59      22     22       287         4        11             1        0"
       "        0       0.40837\n"
       "2         4    24   1         1       1      0         9         9         5             0        0"
       "        0       0.01281\n"
       "3         11000001   1         2       2      2         3         1         1             0        0"
       "        0       0.00427\n"
       "4         1123456  12         2       0      0         2         1         0             1        0"
       "        0       0.00285\n"
       'o")~   Snort exiting\n'
       "AppId Performance Statistics (top 4 appids)\n"
       "=========================================================================================\n"
       " AppId   App Name                   Usecs       Pkts     AvgUsecs/Pkt     Sessions\n"
       "   777   unknown                      131        490                0            2\n")


def row(rank: int, gid: int, sid: int, rev: int, checks: str, matches: str, total: str) -> str:
    """A row as Snort's setw() columns print it (a wider value pushes the rest right)."""
    cells = [f"{rank:<5}", f"{gid:>6}", f"{sid:>6}", f"{rev:>4}", f"{checks:>10}", f"{matches:>8}", f"{'0':>7}",
             f"{total:>10}", f"{'1':>10}", f"{'0':>10}", f"{'1':>14}", f"{'0':>9}", f"{'0':>9}", f"{'1.00000':>14}"]
    return "".join(cells) + "\n"


def test_the_issues_excerpt_reads_as_microseconds_with_no_maximum() -> None:
    rules = parse_snort_rule_profile(WORST_5)
    assert rules == [RuleCost(gid=4, sid=112, rev=1, checks=1, matches=0, ticks_total=7, ticks_avg=7.0,
                              ticks_max=None, unit="us"),
                     RuleCost(gid=4, sid=57, rev=1, checks=1, matches=1, ticks_total=7, ticks_avg=7.0,
                              ticks_max=None, unit="us")]


def test_all_title_seven_digit_sids_and_the_tables_after_it() -> None:
    rules = parse_snort_rule_profile(ALL)
    assert rules is not None
    assert [(r.gid, r.sid, r.rev, r.checks, r.matches, r.ticks_total) for r in rules] == [
        (1, 2012345, 2, 59, 22, 287), (4, 24, 1, 1, 1, 9), (1, 1000001, 1, 2, 2, 3), (1, 123456, 12, 2, 0, 2)]
    # the average is the total over the checks (Snort prints it cut to whole µs: 4)
    assert rules[0].ticks_avg == pytest.approx(287 / 59, abs=1e-4)


def test_wide_values_and_digit_grouping_are_cut_by_the_column_widths() -> None:
    text = ("rule profile (all)\n" + HEADER + row(1, 1, 2024897, 3, "12345678901", "1234567", "98765") +
            row(2, 116, 1234567, 10, "1,234,567", "12,345", "1,000") + row(3, 1, 99, 1, "5", "0", "0"))
    rules = parse_snort_rule_profile(text)
    assert rules is not None
    assert [(r.gid, r.sid, r.rev, r.checks, r.matches, r.ticks_total) for r in rules] == [
        (1, 2024897, 3, 12345678901, 1234567, 98765), (116, 1234567, 10, 1234567, 12345, 1000), (1, 99, 1, 5, 0, 0)]
    assert rules[2].ticks_avg == 0.0


def test_an_empty_table_is_an_empty_profile_and_no_table_is_none() -> None:
    assert parse_snort_rule_profile("rule profile (worst 0, sorted by checks)\n" + HEADER + "\n--------\n") == []
    assert parse_snort_rule_profile("Module Statistics\n--------\nrule_eval 1 621 267\n") is None


def test_a_garbage_table_is_an_error_naming_the_line() -> None:
    with pytest.raises(ValueError, match="header is not Snort 3's"):
        parse_snort_rule_profile("rule profile (all)\n#  gid sid checks\n=== === ===\n1 1 2 3\n")
    cut = "rule profile (all)\n" + HEADER + row(1, 1, 2001, 1, "5", "0", "9") + "2         1  20\n"
    with pytest.raises(ValueError, match=r"line 5: rule profile row 2 does not read"):
        parse_snort_rule_profile(cut)
    skipped = "rule profile (all)\n" + HEADER + row(1, 1, 2001, 1, "5", "0", "9") + row(3, 1, 2002, 1, "5", "0", "9")
    with pytest.raises(ValueError, match="ranked 3 where 2 was due"):
        parse_snort_rule_profile(skipped)


def test_the_last_table_counts() -> None:
    text = "rule profile (all)\n" + HEADER + row(1, 1, 2001, 1, "5", "0", "9") + "\n" + \
        "rule profile (all)\n" + HEADER + row(1, 1, 2002, 1, "6", "0", "90")
    assert [r.sid for r in parse_snort_rule_profile(text) or []] == [2002]


def test_collect_writes_the_series_file_from_snorts_console(tmp_path: Path) -> None:
    (tmp_path / "stdout.txt").write_text("Commencing packet processing\n" + ALL)
    out = collect(tmp_path)
    assert out == tmp_path / RULE_PROFILE_FILE
    rows = read_profile(out)
    assert [(r.sid, r.unit, r.ticks_max) for r in rows] == [(2012345, "us", None), (24, "us", None),
                                                            (1000001, "us", None), (123456, "us", None)]
    assert collect_sample(tmp_path, "snort+profiling") == []


def test_a_profiling_sample_without_a_readable_profile_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "stdout.txt").write_text("Commencing packet processing\nSnort exiting\n")
    (warning,) = collect_sample(tmp_path, "snort+profiling")
    assert "left no rule profile" in warning and "stdout.txt" in warning
    assert collect_sample(tmp_path, "snort") == []
    (tmp_path / "stdout.txt").write_text("rule profile (all)\nnot a header\n")
    (warning,) = collect_sample(tmp_path, "snort+profiling")
    assert "does not read" in warning and "stdout.txt" in warning and not (tmp_path / RULE_PROFILE_FILE).exists()
    assert profiling_requested("suricata@8.0.6+nohyperscan+profiling") and not profiling_requested("snort")


# --- the unit column -------------------------------------------------------------------------------------


def test_unit_and_a_missing_maximum_round_trip(tmp_path: Path) -> None:
    costs = [RuleCost(1, 2001, 1, 10, 1, 900, 90.0, None, "us"), RuleCost(1, 2002, 1, 5, 0, 100, 20.0, None, "us")]
    path = write_profile(tmp_path, costs)
    assert path == tmp_path / RULE_PROFILE_FILE
    assert path.read_text().splitlines()[:2] == [
        "gid,sid,rev,checks,matches,ticks_total,ticks_avg,ticks_max,unit", "1,2001,1,10,1,900,90.0,,us"]
    assert read_profile(path) == costs


def test_a_file_written_before_the_unit_column_reads_as_ticks(tmp_path: Path) -> None:
    old = tmp_path / "old.csv"
    old.write_text("gid,sid,rev,checks,matches,ticks_total,ticks_avg,ticks_max\n1,2001,3,10,1,900,90.0,300\n")
    assert read_profile(old) == [RuleCost(1, 2001, 3, 10, 1, 900, 90.0, 300, "ticks")]
    old.write_text("gid,sid,rev,checks,matches,ticks_total,ticks_avg,ticks_max,unit\n1,2001,3,10,1,900,90.0,300,ms\n")
    with pytest.raises(ValueError, match="unknown unit 'ms'"):
        read_profile(old)


# --- snort+profiling as an engine ---------------------------------------------------------------------------


def test_snort_profiling_is_an_engine_that_renders_the_profiler() -> None:
    engine = registry.engine("snort+profiling")
    assert isinstance(engine, Snort) and engine.profiling and engine.name == "snort"
    plain = registry.engine("snort")
    assert isinstance(plain, Snort) and not plain.profiling
    opts = SnortOptions(rules=(), log_dir=Path("/tmp/x"), stats_interval_s=1, interface="eth0")
    assert "profiler" not in render_config(opts, Path("/b/snort.lua"))
    lua = render_config(SnortOptions(rules=(), log_dir=Path("/tmp/x"), stats_interval_s=1, interface="eth0",
                                     rule_profile=True, overrides="x = 1\n"), Path("/b/snort.lua"))
    assert RULE_PROFILER_LUA in lua and "count = 0" in lua and "modules = { show = false }" in lua
    assert lua.index("profiler =") < lua.index("x = 1")  # the spec's Lua still comes last


@pytest.mark.parametrize(("name", "fix"), [
    ("snort+fast", "snort+profiling"),
    ("snort+", "snort+profiling"),
    ("snort@3.12.2.0+profiling", "'snort+profiling'"),
    ("capture+profiling", "snort+profiling"),
    ("zeek+profiling", "snort+profiling"),
])
def test_profiling_names_an_engine_cannot_take_are_spec_errors_naming_the_fix(name: str, fix: str) -> None:
    with pytest.raises(SpecError) as err:
        registry.check_name(name)
    assert fix in str(err.value)


def test_a_bad_snort_option_fails_at_plan_time_before_any_sample() -> None:
    spec = Spec.model_validate({"name": "x", "sensor": {"engine": ["snort", "snort+profilin"]},
                                "traffic": {"traces": ["builtin:mixed"]}})
    with pytest.raises(SpecError, match="profilin"):
        plan(spec)
    ok = plan(Spec.model_validate({"name": "x", "sensor": {"engine": ["snort+profiling"]},
                                   "traffic": {"traces": ["builtin:mixed"]}}))
    assert ok[0].engine == "snort+profiling"


# Snort 3.12.2 live with ET Open: an IP-list rule's 7-digit sid and 4-digit rev run together with the gid
MERGED = ("rule profile (all, sorted by total_time)\n" + HEADER +
          "1         125228075500       724       0      0      8479        11         0            11        0"
          "        0       0.06766\n"
          "2         1240338591326       845       0      0      5840         6         0             6        0"
          "        0       0.04660\n")


def test_a_sid_and_rev_that_ran_together_are_cut_where_a_loaded_rule_is(tmp_path: Path) -> None:
    rules = tmp_path / "et.rules"
    rules.write_text('alert ip [1.2.3.4] any -> $HOME_NET any (msg:"ET TOR group 1"; sid:2522807; rev:5500;)\n'
                     'alert ip [1.2.3.5] any -> $HOME_NET any (msg:"ET CINS group 2"; sid:2403385; rev:91326;)\n')
    (tmp_path / "snort.lua").write_text(f"include '/x/snort.lua'\nips.rules = [[\ninclude {rules}\n]]\n")
    assert snort_rule_files(tmp_path / "snort.lua") == [rules]
    known = loaded_rules([rules])
    assert known == {(1, 2522807, 5500), (1, 2403385, 91326)}
    cut = parse_snort_rule_profile(MERGED, known) or []
    assert [(r.gid, r.sid, r.rev, r.checks, r.ticks_total) for r in cut] == [(1, 2522807, 5500, 724, 8479),
                                                                            (1, 2403385, 91326, 845, 5840)]
    # without the loaded rules the widths alone allow both cuts; the first (a 6-digit sid) is not the rule
    assert [(r.sid, r.rev) for r in parse_snort_rule_profile(MERGED) or []] == [(252280, 75500), (240338, 591326)]
    (tmp_path / "stdout.txt").write_text(MERGED)
    assert [(r.sid, r.rev) for r in read_profile(collect(tmp_path) or tmp_path)] == [(2522807, 5500), (2403385, 91326)]
