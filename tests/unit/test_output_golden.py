"""Golden outputs: what scripts read from `results`, `compare`, `trend` and `results --rules` in JSON and
CSV, pinned on fixed inputs (the fake campaigns of tests/fakecampaign.py, seeded) so that a change of the
renderers cannot move a key or a value unseen.

The expected files are tests/unit/data/golden/*. JSON is compared as parsed documents with their key
order; CSV as text (header order, cells, line ends). A deliberate change of the contract or of an
analysis that moves values: rerun with IDSBENCH_UPDATE_GOLDEN=1 (test-only variable) and review the
diff of the golden files in the commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from idsbench.cli.main import main
from idsbench.store.rule_profile import RuleCost, write_profile
from tests.fakecampaign import T0, FakeCase, write_campaign

GOLDEN = Path(__file__).parent / "data" / "golden"
UPDATE = os.environ.get("IDSBENCH_UPDATE_GOLDEN") == "1"
JIT = [1.0, 1.02, 0.98, 1.01, 0.99]


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) in (0, 1), argv
    return capsys.readouterr().out


def _check(name: str, text: str, tmp: Path) -> None:
    text = text.replace(str(tmp), "<TMP>")
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    expected = path.read_bytes().decode()  # bytes: a CSV's line ends are compared too
    if name.endswith(".json"):
        # the same document with the same key order (whitespace free to change)
        assert json.dumps(json.loads(text)) == json.dumps(json.loads(expected)), name
    else:
        assert text == expected, name


def _results_campaign(tmp: Path) -> Path:
    """Cases with every shape a results row takes: all ok, ok with a failed sample and a label, none ok,
    a missing sample; drops with a CI, a native sender's lateness figures."""
    cases = [
        FakeCase(replayers=1, samples=5, sensor_cpu=[40.0 * j for j in JIT], host_cpu=[20.5 * j for j in JIT]),
        FakeCase(setup="container", replayers=2, samples=5, statuses=["ok", "ok", "failed", "ok", "ok"],
                 labels=["emulated"], drop_fraction=[0.01 * j for j in JIT], sensor_cpu=[1234.56 * j for j in JIT],
                 rss_bytes=[2.5e9 * j for j in JIT], sender="native"),
        FakeCase(setup="container", replayers=4, samples=3, statuses=["oom", "oom", "oom"]),
        FakeCase(setup="baremetal", replayers=4, samples=3, incomplete=[2], stable_after_s=[9.5, 10.25, 11.0]),
    ]
    return write_campaign(tmp / "results", cases, name="golden")


def test_results_json_and_csv_of_a_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _results_campaign(tmp_path)
    _check("results.json", _run(capsys, ["results", str(root), "--format", "json"]), tmp_path)
    _check("results.csv", _run(capsys, ["results", str(root), "--format", "csv"]), tmp_path)


def test_results_json_and_csv_from_the_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _results_campaign(tmp_path)
    _run(capsys, ["index", str(tmp_path)])
    where = ["results", "--root", str(tmp_path), "--where", "replayers >= 2"]
    _check("results_index.json", _run(capsys, [*where, "--format", "json"]), tmp_path)
    _check("results_index.csv", _run(capsys, [*where, "--format", "csv"]), tmp_path)


def test_compare_json_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jit = [*JIT, 1.0]  # 6 samples: verdicts need the 95% a median's CI reaches from 6 on
    loose = [FakeCase(replayers=r, cpus=1.0, samples=6, sensor_cpu=[40.0 * r * j for j in jit]) for r in (1, 2)]
    tight = [FakeCase(replayers=r, cpus=0.5, samples=6, sensor_cpu=[48.0 * j for j in jit],
                      drop_fraction=[0.1 * r * j for j in jit]) for r in (1, 2)]
    a = write_campaign(tmp_path / "loose", loose, name="loose")
    b = write_campaign(tmp_path / "tight", tight, name="tight")
    _check("compare.json", _run(capsys, ["compare", str(a), str(b), "--format", "json"]), tmp_path)
    _check("compare.csv", _run(capsys, ["compare", str(a), str(b), "--format", "csv"]), tmp_path)


def test_trend_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dirs = []
    for i, level in enumerate([40, 40.3, 39.8, 40.1, 48, 48.2, 47.9]):
        root = write_campaign(tmp_path / f"c{i + 1}", [FakeCase(samples=4, sensor_cpu=[level * j for j in JIT[i % 2:]])],
                              name=f"c{i + 1}")
        doc = json.loads((root / "campaign.json").read_text())
        doc["created_unix"] = T0 + 86400 * i
        for trace in doc["inputs"]["traces"].values():
            trace["sha256"] = "ab" * 32
        doc["inputs"]["rules"] = [{"path": "/r/app.rules", "sha256": ("11" if i < 4 else "22") * 32}]
        (root / "campaign.json").write_text(json.dumps(doc))
        dirs.append(str(root))
    out = _run(capsys, ["trend", *dirs, "--metric", "sensor_cpu_pct", "--metric", "drop_ratio", "--format", "json"])
    _check("trend.json", out, tmp_path)


def _rules_campaign(tmp: Path) -> Path:
    case = FakeCase(samples=2)
    root = write_campaign(tmp / "rules", [case], environment={"hostname": "h", "suricata": {"version": "8.0.6"}})
    profiles = [[RuleCost(1, 2001, 1, 10, 1, 50_000, 5000.0, None, "us"), RuleCost(1, 2002, 1, 4, 0, 10_000, 2500.0, None, "us")],
                [RuleCost(1, 2001, 1, 12, 1, 60_000, 5000.0, None, "us"), RuleCost(1, 2003, 1, 2, None, 20_000, 10000.0, None, "us")]]
    for k, costs in enumerate(profiles):
        sample = root / "cases" / case.case_id / f"s{k}"
        summary = json.loads((sample / "summary.json").read_text())
        summary["cost"] = {"cpu_s": (0.5, 0.8)[k], "processed_pkts": 1000}
        (sample / "summary.json").write_text(json.dumps(summary))
        write_profile(sample, costs)
    return root


def test_results_rules_json_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _rules_campaign(tmp_path)
    for fmt in ("json", "csv"):
        _check(f"rules.{fmt}", _run(capsys, ["results", str(root), "--rules", "--format", fmt]), tmp_path)
