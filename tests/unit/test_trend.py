"""trend: case keys, change detection (jumpavg + effect size), what changed, the gate, the index."""

from __future__ import annotations

import argparse
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import jsonschema
import pytest

from idsbench.analysis.trend import build_series
from idsbench.analysis.trend_load import from_dirs
from idsbench.cli import trend as trend_cli
from idsbench.store.casekey import case_key
from idsbench.store.reader import read_campaign_doc
from tests.fakecampaign import T0, FakeCase, write_campaign

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "trend.schema.json").read_text())
JIT = [1.0, 1.01, 0.99, 1.005, 0.995, 1.0]


def _campaigns(tmp_path: Path, levels: list[float], costly_from: int | None = None) -> list[Path]:
    """One campaign per level (sensor CPU %), a day apart; from `costly_from` on they load costly.rules too."""
    out = []
    for i, level in enumerate(levels):
        root = write_campaign(tmp_path / f"c{i + 1}", [FakeCase(samples=4, sensor_cpu=[level * j for j in JIT[i % 3:]])],
                              name=f"c{i + 1}")
        doc = json.loads((root / "campaign.json").read_text())
        doc["created_unix"] = T0 + 86400 * i
        for trace in doc["inputs"]["traces"].values():
            trace["sha256"] = "ab" * 32
        rules = [{"path": "/etc/suricata/rules/app.rules", "sha256": "11" * 32}]
        sets = [{"source": "builtin:events", "rules": 367, "loaded": 367}]
        sids = list(range(2200000, 2200367))
        if costly_from is not None and i + 1 >= costly_from:
            rules.append({"path": "/data/costly.rules", "sha256": "22" * 32})
            sets.append({"source": "/data/costly.rules", "rules": 400, "loaded": 400})
            sids += list(range(1999000, 1999400))
        doc["inputs"]["rules"] = rules
        doc["inputs"]["rule_load"] = {"suricata": {"sets": sets, "rules": sum(s["rules"] for s in sets),
                                                   "loaded": sum(s["rules"] for s in sets), "sids": sids}}
        (root / "campaign.json").write_text(json.dumps(doc))
        out.append(root)
    return out


def _cli(argv: list[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    trend_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = args.func(args)
    return code, out.getvalue(), err.getvalue()


def test_one_regression_at_the_fifth_named_and_explained(tmp_path: Path):
    dirs = _campaigns(tmp_path, [40, 40.3, 39.8, 40.1, 48, 48.2, 47.9, 48.1], costly_from=5)
    cases, explain = from_dirs(dirs)
    series = build_series(cases, ("sensor_cpu_pct", "drop_ratio"), explain=explain)
    cpu = next(s for s in series if s.metric == "sensor_cpu_pct")
    assert len(cpu.points) == 8 and len(cpu.segments) == 2
    (change,) = cpu.changes
    assert change.at == str(dirs[4]) and change.kind == "regression"  # CPU is lower-is-better
    assert change.size_pct == pytest.approx(20, abs=1.5) and change.size_ci[0] > 2
    assert any("rule file added: costly.rules (400 rules)" in w for w in change.what_changed)
    assert any("+400 sids" in w for w in change.what_changed)
    drops = next(s for s in series if s.metric == "drop_ratio")
    assert not drops.changes


def test_noise_and_small_shifts_are_no_change(tmp_path: Path):
    dirs = _campaigns(tmp_path, [40, 40.4, 39.7, 40.2, 40.6, 39.9, 40.1, 40.3])
    cases, explain = from_dirs(dirs)
    (cpu,) = build_series(cases, ("sensor_cpu_pct",), explain=explain)
    assert not cpu.changes and len(cpu.segments) == 1


def test_progression_and_cli_json_schema_and_gate(tmp_path: Path):
    dirs = _campaigns(tmp_path, [48, 48.2, 47.9, 48.1, 40, 40.3, 39.8, 40.1])
    code, out, err = _cli(["trend", *map(str, dirs), "--format", "json", "--metric", "sensor_cpu_pct",
                           "--fail-on-regression"])
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert code == 0 and [c["kind"] for c in doc[0]["changes"]] == ["progression"]
    regress = _campaigns(tmp_path / "r", [40, 40.3, 39.8, 40.1, 48, 48.2, 47.9, 48.1], costly_from=5)
    code, out, err = _cli(["trend", *map(str, regress), "--metric", "sensor_cpu_pct", "--fail-on-regression"])
    assert code == 1
    (line,) = [ln for ln in err.splitlines() if ln.startswith("FAIL")]
    assert "sensor_cpu_pct" in line and "before 40" in line and "48" in line and "threshold ±2%" in line
    assert "regression +20" in line and "c5" in line
    html = _cli(["trend", *map(str, regress), "--metric", "sensor_cpu_pct", "--format", "html"])[1]
    assert html.startswith("<!DOCTYPE html>") and "data:image/svg+xml;base64," in html and "regression" in html


def test_index_keys_and_trend_from_the_index(tmp_path: Path):
    from idsbench.analysis.publish import index_root

    root = tmp_path / "results"
    _campaigns(root, [40, 40.3, 39.8, 40.1, 48, 48.2, 47.9, 48.1], costly_from=5)
    assert {r.action for r in index_root(root)} == {"indexed"}
    code, out, _ = _cli(["trend", "--index", str(root), "--format", "json", "--metric", "sensor_cpu_pct"])
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    (series,) = doc
    assert [p["campaign"] for p in series["points"]] == [f"c{i}" for i in range(1, 9)]
    assert [(c["at"], c["kind"]) for c in series["changes"]] == [("c5", "regression")]
    assert any("costly.rules" in w for w in series["changes"][0]["what_changed"])
    assert series["points"][4]["software"]["rules_count"] == "767"
    code, out, _ = _cli(["trend", "--index", str(root), "--series", series["series_id"], "--format", "json"])
    assert {s["series_id"] for s in json.loads(out)} == {series["series_id"]}


def test_old_campaigns_get_unknown_parts_that_never_join(tmp_path: Path):
    a, b = (write_campaign(tmp_path / n, [FakeCase()], name=n) for n in ("a", "b"))
    keys = []
    for root in (a, b):
        doc = read_campaign_doc(root)
        (case,) = doc.cases
        keys.append(case_key(doc, case, None, root.name))
    assert keys[0].trace_sha256 == "unknown@a" and keys[1].trace_sha256 == "unknown@b"
    assert keys[0].series_id != keys[1].series_id
    assert keys[0].host_digest == keys[1].host_digest and keys[0].host_digest.startswith("env:")


def test_an_older_index_schema_asks_for_a_rebuild(tmp_path: Path):
    import duckdb

    from idsbench.errors import InputError
    from idsbench.store.index_trend import keyed_cases

    root = tmp_path / "results"
    root.mkdir()
    con = duckdb.connect(str(root / "index.duckdb"))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema', '3')")
    con.close()
    with pytest.raises(InputError, match="rebuild it with `idsbench index"):
        keyed_cases(root)


def test_pruned_grouping_equals_jumpavg_classify():
    import random

    from idsbench.analysis.trend import group_sizes

    rng = random.Random(2)
    for n in [40] * 15 + [150] * 5:
        levels = [rng.choice([40, 41, 44, 48, 60]) for _ in range(5)]
        cuts = sorted(rng.sample(range(1, n), 4))
        runs = [[levels[sum(i >= c for c in cuts)] * (1 + rng.gauss(0, rng.choice([0.01, 0.03, 0.06])))
                 for _ in range(rng.choice([1, 3, 6]))] for i in range(n)]
        assert group_sizes(runs) == group_sizes(runs, prune_bits=None)


def test_a_lone_first_point_of_a_new_level_starts_the_change_there():
    """CI #5's series (sensor µs per packet, 3 samples per campaign): the costly rules from n5 on, whose first
    campaign ran ~20% slower than the three after it. jumpavg groups [n1-n4], [n5], [n6-n8]; n5 alone is
    `inconclusive` against n1-n4 (3 samples reach no 95% CI, a +271% step notwithstanding). It joins the
    nearer neighbour, n6-n8, so the change is at n5 (it used to join n1-n4 and the change was put at n6); a
    lone undecided point nearer the old level stays in it."""
    from idsbench.analysis.trend import TrendPoint, segment_series

    def points(levels: list[list[float]]) -> list[TrendPoint]:
        return [TrendPoint(f"n{i + 1}", T0 + i, sorted(s)[1], None, tuple(s), {}) for i, s in enumerate(levels)]

    old = [[22.0, 22.1, 23.0], [22.9, 23.0, 24.5], [22.6, 22.7, 23.5], [22.7, 22.7, 24.5]]
    new = [[67.4, 70.1, 75.5], [69.5, 71.6, 73.6], [68.0, 69.7, 72.0]]
    segs = segment_series(points(old + [[79.1, 84.6, 87.4]] + new), min_effect_pct=40)
    assert [(s, e) for s, e, _ in segs] == [(0, 4), (4, 8)], segs
    assert segs[1][2] is not None and segs[1][2].verdict == "higher"
    segs = segment_series(points(old + [[30.0, 31.0, 33.0]] + new), min_effect_pct=40)
    assert [(s, e) for s, e, _ in segs] == [(0, 5), (5, 8)], segs
