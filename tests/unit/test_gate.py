"""idsbench gate, the pure parts: sides, the stopping rule and verdicts, the diffs, gate.md and gate.json
(against docs/gate.schema.json), the bisect search, the CLI's refusals (exit 3)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from idsbench.cli.main import main
from idsbench.errors import InputError, SpecError
from idsbench.gate import diffs
from idsbench.gate.bisect import search, side_of
from idsbench.gate.model import AADoc, AlertDoc, CounterDoc, EventDoc, GateDoc, ResourceDoc, SideDoc, TraceDoc, schema
from idsbench.gate.outputs import read_doc, write_outputs
from idsbench.gate.plan import MAX_RATE_PPS, PROBE_PPS, GateOptions, arm_spec, rate_for, settled, trace_label
from idsbench.gate.render import render
from idsbench.gate.sides import check_distinct, identity, parse_side, prepare
from idsbench.gate.verdict import exit_status, judge, next_round, overall, placed

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "docs" / "gate.schema.json"


def _tree(path: Path, version: str = "8.0.6") -> Path:
    (path / "src").mkdir(parents=True)
    (path / "src" / "suricata.c").write_text("int main(void) { return 0; }\n")
    (path / "configure.ac").write_text(f"    AC_INIT([suricata],[{version}])\n")
    return path


# --- sides ---------------------------------------------------------------------------------------------
def test_a_side_is_a_tree_a_git_ref_or_an_engine(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "head")
    side = parse_side("HEAD", str(tree))
    assert (side.kind, side.path) == ("tree", tree.resolve())
    assert prepare(side, tmp_path).engine == f"suricata@{tree.resolve()}"
    assert parse_side("BASE", "suricata").kind == "engine"
    assert parse_side("BASE", "suricata@8.0.6").kind == "engine"
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git = parse_side("HEAD", f"{repo}@main~2")
    assert (git.kind, git.path, git.ref) == ("git", repo.resolve(), "main~2")


def test_bad_sides_name_the_side_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "notatree").mkdir()
    with pytest.raises(InputError, match="HEAD .* not a Suricata source tree"):
        parse_side("HEAD", str(tmp_path / "notatree"))
    with pytest.raises(InputError, match="does not exist"):
        parse_side("BASE", str(tmp_path / "missing"))
    with pytest.raises(InputError, match="not a git repository"):
        parse_side("BASE", f"{tmp_path / 'notatree'}@v1")
    with pytest.raises(InputError, match="empty"):
        parse_side("BASE", " ")


def test_an_unknown_ref_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    _tree(repo / "t")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"],
                   check=True)
    with pytest.raises(InputError, match="no commit 'nope'"):
        prepare(parse_side("HEAD", f"{repo}@nope"), tmp_path)
    with pytest.raises(InputError, match="not a Suricata source tree"):  # the tree is under t/, not at the top
        prepare(parse_side("HEAD", f"{repo}@main"), tmp_path)


def test_identity_prefers_the_commit_then_the_tree_hash(tmp_path: Path) -> None:
    tree = prepare(parse_side("BASE", str(_tree(tmp_path / "b"))), tmp_path)
    info: dict[str, object] = {"version": "8.0.6", "configure_flags": "--enable-x", "build_identity": "tree=abc",
                               "build_s": 300, "make_s": 250, "ccache": "yes hits=10 misses=0"}
    ident = identity(tree, info)
    assert (ident.kind, ident.id, ident.flags, ident.build_s) == ("tree", "tree=abc", "--enable-x", 300)
    ident = identity(tree, {**info, "build_identity": "commit=" + "a" * 40})
    assert ident.id == "a" * 40 and ident.short() == "a" * 12
    installed = prepare(parse_side("BASE", "suricata"), tmp_path)
    assert identity(installed, {"version": "7.0.10"}).id == "suricata 7.0.10"
    with pytest.raises(SpecError, match="same engine"):
        check_distinct(installed, installed)


# --- verdicts and the stopping rule -----------------------------------------------------------------------
def test_verdicts_follow_the_ci_against_the_threshold() -> None:
    same = judge([0.995, 1.0, 1.004, 0.998, 1.002, 1.001], 2.0)
    assert same.verdict == "same" and same.samples == 6 and same.ratio_ci == (0.995, 1.004)
    reg = judge([1.05, 1.06, 1.055, 1.052, 1.058, 1.049], 2.0)
    assert reg.verdict == "regression" and reg.effect_pct == pytest.approx(5.35)
    imp = judge([0.90, 0.91, 0.92, 0.905, 0.915, 0.93], 2.0)
    assert imp.verdict == "improvement"
    # the CI straddles +2%: unknown, with more samples needed than taken
    unk = judge([1.0, 1.04, 1.02, 1.03, 1.01, 1.05], 2.0)
    assert unk.verdict == "unknown" and unk.samples_needed is not None and unk.samples_needed > 6
    # a clear shift, too few samples: unknown until MIN_SAMPLES
    few = judge([1.2, 1.21, 1.19], 2.0)
    assert few.verdict == "unknown" and few.samples_needed == 6 and "at least 6" in few.reason
    assert judge([None, float("nan")], 2.0).verdict == "unknown"


def test_the_overall_verdict_and_the_exit_status() -> None:
    same = judge([1.0] * 6, 2.0)
    reg = judge([1.1] * 6, 2.0)
    unk = judge([1.0, 1.05, 0.97, 1.02, 1.04, 0.99], 2.0)
    imp = judge([0.8] * 6, 2.0)
    assert overall([same, reg, unk], same)[0] == "regression"
    assert overall([same, unk], same)[0] == "unknown"
    assert overall([same, imp], same)[0] == "improvement"
    assert overall([same, same], same)[0] == "same"
    # an A/A arm that shows a difference between identical sides: nothing is believed
    verdict, why = overall([reg], reg)
    assert verdict == "unknown" and "A/A" in why
    assert exit_status("same", False) == 0 and exit_status("improvement", False) == 0
    assert exit_status("regression", False) == 1 and exit_status("same", True) == 1
    assert exit_status("same", True, allow_alert_changes=True) == 0
    assert exit_status("unknown", False) == 2 and exit_status("unknown", True) == 1


def test_rounds_go_on_until_settled_the_most_rounds_or_the_budget() -> None:
    unsettled, settled = judge([], 2.0), judge([1.0] * 6, 2.0)
    d = next_round({"a": settled, "b": settled}, 1, min_rounds=3, max_rounds=12, elapsed_s=10, budget_s=600, round_s=60)
    assert d.go and d.traces == ("a", "b")  # every trace until the minimum
    d = next_round({"a": settled, "b": unsettled}, 3, min_rounds=3, max_rounds=12, elapsed_s=10, budget_s=600, round_s=60)
    assert d.go and d.traces == ("b",)  # then the unsettled ones only
    d = next_round({"a": settled, "b": settled}, 3, min_rounds=3, max_rounds=12, elapsed_s=10, budget_s=600, round_s=60)
    assert not d.go and "settled" in d.reason
    d = next_round({"a": unsettled}, 12, min_rounds=3, max_rounds=12, elapsed_s=10, budget_s=600, round_s=60)
    assert not d.go and "12 rounds" in d.reason
    d = next_round({"a": unsettled}, 4, min_rounds=3, max_rounds=12, elapsed_s=560, budget_s=600, round_s=60)
    assert not d.go and "budget" in d.reason
    assert next_round({"a": unsettled}, 0, min_rounds=3, max_rounds=12, elapsed_s=0, budget_s=1, round_s=None).go


# --- diffs -------------------------------------------------------------------------------------------------
def test_alert_and_event_differences_are_listed_exactly() -> None:
    out = diffs.alerts_diff("t", {2200074: 3, 1: 5}, {1: 5, 2200075: 2})
    assert [(d.sid, d.base, d.head) for d in out] == [(2200074, 3, 0), (2200075, 0, 2)]
    assert diffs.alerts_diff("t", {1: 5}, {1: 5}) == []
    ev = diffs.events_diff("t", {"alert": 8, "flow": 4}, {"alert": 8, "flow": 4, "anomaly": 1})
    assert [(e.event_type, e.base, e.head) for e in ev] == [("anomaly", 0, 1)]


def test_counters_beyond_the_aa_arm_only() -> None:
    stats = {"uptime": 9, "decoder": {"pkts": 100, "bytes": 6400, "event": {"ipv4": {"opt_pad_required": 0}}},
             "tcp": {"sessions": 4}, "threads": {"W#01": {"decoder": {"pkts": 1}}}, "flag": True}
    flat = diffs.flatten(stats)
    assert flat == {"decoder.pkts": 100.0, "decoder.bytes": 6400.0, "decoder.event.ipv4.opt_pad_required": 0.0,
                    "tcp.sessions": 4.0}
    spreads = diffs.aa_spreads([({"flow.memuse": 1000.0, "decoder.pkts": 100.0}, {"flow.memuse": 1100.0, "decoder.pkts": 100.0})])
    assert spreads["flow.memuse"] == pytest.approx(100 / 1100) and spreads["decoder.pkts"] == 0
    base = [{"flow.memuse": 1000.0, "decoder.pkts": 100.0, "x.event": 0.0}] * 3
    head = [{"flow.memuse": 1050.0, "decoder.pkts": 100.0, "x.event": 7.0}] * 3
    out = diffs.counters_diff("t", base, head, spreads)
    # memuse moved 4.8%, within its A/A spread of 9.1%; the event counter the A/A never moved is listed
    assert [(c.counter, c.base, c.head, c.ratio) for c in out] == [("x.event", 0.0, 7.0, None)]
    r = diffs.resource_diff("t", "rule_load_s", [1.0, 1.2, 1.1], [1.3, None, 1.5])
    assert (r.base, r.head) == (1.1, 1.4) and r.ratio == pytest.approx(1.4 / 1.1)


# --- plan --------------------------------------------------------------------------------------------------
def test_trace_labels_are_short_and_unique() -> None:
    taken: set[str] = set()
    assert [trace_label(r, taken) for r in ("/x/a.pcap", "/y/a.pcap", "builtin:mixed", "/z/b c.pcapng")] == \
        ["a", "a-2", "mixed", "b-c"]


def test_arms_are_duet_specs_with_the_engines_as_the_side_axis(tmp_path: Path) -> None:
    opts = GateOptions(traffic=("builtin:mixed",), rules=("builtin:events",))
    spec = arm_spec("gate-head-mixed", ["suricata", "suricata@8.0.6"], "builtin:mixed", 5000.0, opts)
    assert spec.mode == "duet" and spec.sensor.engine == ["suricata", "suricata@8.0.6"]
    assert spec.samples == opts.planned_samples == 24 and opts.min_rounds == 3
    aa = arm_spec("gate-aa-mixed", ["suricata"], "builtin:mixed", 5000.0, opts)
    assert aa.sensor.engine == ["suricata"] and aa.traffic.rate[0].value == 5000.0
    assert rate_for(10.0) == 30_000.0 and rate_for(5.0) == MAX_RATE_PPS == 30_000.0  # 0.3 CPU, bounded
    assert rate_for(60.0) == 5000.0 and rate_for(None) == 200.0 and rate_for(1e6) == 200.0
    with pytest.raises(SpecError, match="threshold"):
        GateOptions(threshold_pct=0).check()


def test_the_load_probe_is_taken_again_at_the_load_it_gave(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cost per packet at PROBE_PPS carries the sensor's housekeeping over few packets (26 µs at 1,000 pps,
    9.7 at 11,470 measured here): the load is probed again where the first probe put it, and the gate runs at
    what that second probe gives. Every probe after the first reuses the first one's noise probe."""
    from idsbench.gate import run as gate_run

    def cost_at(pps: float) -> float:  # µs a packet: 8 of work, 0.018 CPU of housekeeping spread over the packets
        return 8.0 + 0.018e6 / pps

    probes: list[tuple[float, tuple[str, ...], object]] = []

    def probe_costs(spec, out, options, stream, noise):  # type: ignore[no-untyped-def]
        probes.append((spec.traffic.rate[0].value, tuple(spec.traffic.trace_refs()), noise.probe))
        noise.probe = noise.probe or "noise of the first probe"
        return {ref: (None if "broken" in ref and len(probes) > 1 else cost_at(spec.traffic.rate[0].value))
                for ref in spec.traffic.trace_refs()}

    monkeypatch.setattr(gate_run, "_probe_costs", probe_costs)
    traces = [("a", "/t/a.pcap", Path("/t/a.pcap")), ("broken", "/t/broken.pcap", Path("/t/broken.pcap"))]
    lines: list[str] = []
    rates = gate_run.probe_rates("suricata", traces, tmp_path / "probe", GateOptions(), lines.append, None,  # type: ignore[arg-type]
                                 gate_run.HostNoise())
    first = rate_for(cost_at(PROBE_PPS))  # 11,390 pps from 26 µs
    assert probes[0] == (PROBE_PPS, ("/t/a.pcap", "/t/broken.pcap"), None)
    assert probes[1] == (first, ("/t/a.pcap",), "noise of the first probe")
    assert probes[2] == (first, ("/t/broken.pcap",), "noise of the first probe") and len(probes) == 3
    assert rates == {"a": rate_for(cost_at(first)), "broken": first}
    assert rates["a"] > 1.5 * first  # 0.3 CPU at the refined cost (9.6 µs): 31,000 pps, bounded at MAX_RATE_PPS
    assert any("kept (the probe at it measured no cost)" in line for line in lines), lines
    assert settled(10_000, 11_000) and not settled(10_000, 13_000)
    given = gate_run.probe_rates("suricata", traces, tmp_path / "p2", GateOptions(rate_pps=700.0), lines.append,
                                 None, gate_run.HostNoise())  # type: ignore[arg-type]
    assert given == {"a": 700.0, "broken": 700.0} and len(probes) == 3


# --- outputs -----------------------------------------------------------------------------------------------
def _doc(**kw: object) -> GateDoc:
    side = SideDoc(kind="tree", id="tree=" + "b" * 64, flags="--enable-profiling-rules", name="/src/base",
                   engine="suricata@/src/base", version="8.0.6", build_s=360)
    head = side.model_copy(update={"kind": "git", "id": "c" * 40, "name": "/repo@pr-12"})
    doc = GateDoc(
        verdict="regression", exit_status=1, reason="1 of 2 trace(s) regressed", threshold_pct=2.0,
        noise_floor_pct=0.41, base=side, head=head,
        traces=[TraceDoc(trace="web", ratio=1.052, ratio_ci=[1.041, 1.063], ci_level=0.969, verdict="regression",
                         samples=6, effect_pct=5.2, rate_pps=5000.0, exact=6),
                TraceDoc(trace="dns", ratio=1.004, ratio_ci=[0.99, 1.03], ci_level=0.969, verdict="unknown",
                         samples=6, samples_needed=14, effect_pct=0.4)],
        alerts_diff=[AlertDoc(sid=2200074, base=3, head=0, trace="web")],
        counters_diff=[CounterDoc(counter="decoder.event.ipv4.opt_pad_required", base=3, head=0, ratio=0.0,
                                  trace="web", aa_spread=0.0)],
        events_diff=[EventDoc(event_type="anomaly", base=3, head=0, trace="web")],
        resources=[ResourceDoc(metric="rule_load_s", base=1.2, head=1.25, ratio=1.04, trace="web")],
        aa=AADoc(ratio=1.001, ratio_ci=[0.996, 1.004], ci_level=0.969, verdict="same", samples=6), rounds=3,
        wall_s=412.0, budget_s=900.0)
    return doc.model_copy(update=kw)


def test_gate_md_is_a_readable_table() -> None:
    md = render(_doc())
    lines = md.splitlines()
    assert lines[0] == "## idsbench gate: ❌ regression"
    assert "| trace | Δ cost/packet | CI | samples | verdict |" in lines
    assert "| web | +5.20% | [+4.10%, +6.30%] 97% | 6 | ❌ regression |" in lines
    assert "| dns | +0.40% | [-1.00%, +3.00%] 97% | 6 | ❔ unknown (about 14 samples would settle it) |" in lines
    assert "| 2200074 | 3 | 0 | web |" in lines
    assert "noise floor ±0.41%" in md and "Exit status 1" in md and "`/repo@pr-12`: git `ccccccccccccccccccc" in md
    assert md.count("<details>") == md.count("</details>") == 1
    assert "| decoder.event.ipv4.opt_pad_required | 3 | 0 | 0.000 | 0.0% | web |" in lines
    quiet = render(_doc(alerts_diff=[], counters_diff=[], events_diff=[], verdict="same", exit_status=0))
    assert "Every signature raised as many alerts" in quiet and "## idsbench gate: ✅ same" in quiet


def test_gate_json_has_the_contract_keys_and_validates_against_the_schema(tmp_path: Path) -> None:
    assert json.loads(SCHEMA.read_text()) == json.loads(json.dumps(schema())), \
        "docs/gate.schema.json is stale: regenerate it from idsbench.gate.model.schema()"
    json_path, md_path = write_outputs(tmp_path, _doc())
    doc = json.loads(json_path.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    for key in ("verdict", "threshold_pct", "noise_floor_pct", "base", "head", "traces", "alerts_diff", "counters_diff"):
        assert key in doc
    assert set(doc["base"]) >= {"kind", "id", "flags"}
    assert set(doc["traces"][0]) >= {"trace", "ratio", "ratio_ci", "verdict", "samples"}
    assert doc["alerts_diff"][0] == {"sid": 2200074, "base": 3, "head": 0, "trace": "web"}
    assert set(doc["counters_diff"][0]) >= {"counter", "base", "head", "ratio"}
    assert read_doc(json_path) == _doc() and md_path.read_text().startswith("## idsbench gate")
    bad = {**doc, "verdict": "maybe"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, json.loads(SCHEMA.read_text()))


# --- bisect ------------------------------------------------------------------------------------------------
def test_bisect_finds_the_first_commit_that_differs() -> None:
    commits = [f"c{i}" for i in range(7)]
    asked: list[str] = []

    def judge_commit(c: str) -> str:
        asked.append(c)
        return "regression" if int(c[1:]) >= 4 else "same"

    assert search(commits, judge_commit, "regression") == (4, (3, 4))
    assert len(asked) <= 3  # log2(7) steps
    found, (lo, hi) = search(commits, lambda c: "unknown" if c == "c3" else judge_commit(c), "regression")
    assert found is None and (lo, hi) == (2, 4)  # c2 same, c4 differs, c3 unknown: the range stays open
    assert search(["only"], judge_commit, "regression") == (0, (-1, 0))


def test_an_unknown_bisect_step_is_placed_by_its_ci_against_half_of_bads_effect() -> None:
    """Measured: a commit without the cost, +0.37% [-2.66, +1.79] after 9 rounds (`unknown` at ±2%) against
    BAD's +28.2%, ended the search; it is GOOD's side of +14.1%. A CI holding the midpoint stays unknown."""
    assert side_of("unknown", (-2.66, 1.79), "regression", 28.2) == "same"
    assert side_of("unknown", (15.0, 40.0), "regression", 28.2) == "regression"
    assert side_of("unknown", (5.0, 20.0), "regression", 28.2) == "unknown"
    assert side_of("unknown", (-3.0, 1.0), "improvement", -20.0) == "same"
    assert side_of("unknown", (-30.0, -12.0), "improvement", -20.0) == "improvement"
    assert side_of("regression", (3.0, 9.0), "regression", 28.2) == "regression"  # the gate's verdict decides
    assert side_of("same", None, "regression", 28.2) == "same"
    assert side_of("unknown", None, "regression", 28.2) == side_of("unknown", (0.0, 1.0), "regression", None) \
        == "unknown"
    # the step's gate stops once its CI is clear of the midpoint, with the samples a verdict needs
    near = judge([1.0, 1.03, 0.97, 1.01, 0.99, 1.025], 2.0)
    assert near.verdict == "unknown" and placed(near, 14.1) and not placed(near, 1.0) and not placed(near, None)
    assert not placed(judge([1.0, 1.03, 0.97], 2.0), 14.1)  # 3 samples: no verdict yet
    kw = {"min_rounds": 3, "max_rounds": 12, "elapsed_s": 100.0, "budget_s": 600.0, "round_s": 30.0}
    assert next_round({"a": near}, 3, **kw).go  # type: ignore[arg-type]
    assert not next_round({"a": near}, 3, decide_at_pct=14.1, **kw).go  # type: ignore[arg-type]


# --- the CLI's refusals: exit 3, nothing written -----------------------------------------------------------
def test_bad_input_exits_3_without_a_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").mkdir()
    out = tmp_path / "out"
    assert main(["gate", str(tmp_path / "plain"), "suricata", "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert "not a Suricata source tree" in err and "no verdict" in err
    assert main(["gate", "suricata", "--out", str(out)]) == 3
    assert "two sides" in capsys.readouterr().err
    bad_pcap = tmp_path / "x.pcap"
    bad_pcap.write_text("not a capture")
    assert main(["gate", "suricata", "suricata@8.0.6", "--traffic", str(bad_pcap), "--out", str(out)]) == 3
    assert "not a pcap" in capsys.readouterr().err
    assert main(["gate", "--bisect", "a", "b", "--out", str(out)]) == 3
    assert "--repo" in capsys.readouterr().err
    assert main(["gate", "suricata", "suricata", "--threshold", "0", "--out", str(out)]) == 3
    assert not (out / "gate.json").exists()


def test_traffic_takes_captures_and_a_specs_traces(tmp_path: Path) -> None:
    from idsbench.gate.run import expand_traffic

    (tmp_path / "a.pcap").write_bytes(b"")
    spec = tmp_path / "s.toml"
    spec.write_text('name = "x"\n[traffic]\ntraces = ["a.pcap", "builtin:web"]\n')
    assert expand_traffic(["/x/y.pcap", str(spec)]) == ["/x/y.pcap", str(tmp_path / "a.pcap"), "builtin:web"]
