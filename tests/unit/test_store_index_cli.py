"""CLI over the result store: `idsbench index`, `results --where`, `compare` by campaign id, `report`."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from idsbench.cli.main import main
from tests.fakecampaign import FakeCase, standard_campaign, write_campaign


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    standard_campaign(tmp_path / "a", samples=2)
    write_campaign(tmp_path / "b", [FakeCase(setup="container", replayers=4, samples=2, cpus=0.5,
                                             sensor_cpu=90.0),
                                    FakeCase(setup="container", replayers=2, samples=2, cpus=0.5)], name="b")
    return tmp_path


def test_index_then_where_across_campaigns(capsys, root: Path):
    rc, out, _ = _run(capsys, ["index", str(root)])
    assert rc == 0 and "indexed    a  (6 cases, 12 samples)" in out and "2 indexed" in out
    rc, out, _ = _run(capsys, ["index", str(root)])
    assert "2 unchanged" in out
    rc, out, _ = _run(capsys, ["results", "--root", str(root), "--where", "setup='container' and replayers=4",
                               "--format", "json"])
    rows = json.loads(out)
    assert rc == 0 and sorted(r["campaign"] for r in rows) == ["a", "b"]
    assert all(r["setup"] == "container" and r["replayers"] == 4 for r in rows)
    assert {r["campaign"]: r["cpus"] for r in rows} == {"a": 1.0, "b": 0.5}
    assert next(r for r in rows if r["campaign"] == "b")["sensor_cpu_pct"] == 90
    # CIs and labels are filterable; csv and table render the same rows.
    rc, out, _ = _run(capsys, ["results", "--root", str(root), "--where",
                               "drop_ratio_ci_hi > 0.01 and list_contains(labels, 'emulated')", "--format", "csv"])
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert row["campaign"] == "a" and row["replayers"] == "4" and float(row["drop_ratio_ci_lo"]) > 0
    rc, out, _ = _run(capsys, ["results", "--root", str(root), "--where", "campaign = 'b'"])
    assert out.startswith("campaign b\n") and out.count("container") == 2


def test_results_dir_unchanged_and_bad_where(capsys, root: Path):
    rc, direct, _ = _run(capsys, ["results", str(root / "a"), "--format", "json"])
    _run(capsys, ["index", str(root)])
    rc, indexed, _ = _run(capsys, ["results", "--root", str(root), "--where", "campaign_id = 'a'",
                                   "--format", "json"])
    assert [{k: v for k, v in r.items() if k != "campaign"} for r in json.loads(indexed)] == json.loads(direct)
    rc, out, err = _run(capsys, ["results", "--root", str(root), "--where", "setup = container"])
    assert rc == 2 and out == ""
    assert "spec error: --where 'setup = container'" in err and "replayers" in err and "status" in err
    rc, _, err = _run(capsys, ["results", str(root / "a"), "--where", "replayers=1"])
    assert rc == 2 and "drop DIR" in err
    rc, _, err = _run(capsys, ["results", "--root", str(root / "none"), "--where", "replayers=1"])
    assert rc == 2 and "idsbench index" in err


def test_compare_by_campaign_id_matches_compare_by_directory(capsys, root: Path):
    _run(capsys, ["index", str(root)])
    rc, by_dir, _ = _run(capsys, ["compare", str(root / "a"), str(root / "b"), "--format", "json"])
    rc2, by_id, _ = _run(capsys, ["compare", "a", "b", "--root", str(root), "--format", "json"])
    d, i = json.loads(by_dir), json.loads(by_id)
    assert rc == rc2 == 0 and d["rows"] == i["rows"] and d["rows"]
    assert i["differs"] == {"cpus": [1.0, 0.5]} and i["differs"] == d["differs"]
    # Mixed: a directory against an indexed id; the raw files of the indexed one are not read.
    for summary in (root / "b" / "cases").rglob("summary.json"):
        summary.unlink()
    rc, mixed, _ = _run(capsys, ["compare", str(root / "a"), "b", "--root", str(root), "--format", "json"])
    assert json.loads(mixed)["rows"] == d["rows"]
    rc, _, err = _run(capsys, ["compare", "a", "nope", "--root", str(root)])
    assert rc == 2 and "'nope'" in err and "known: a, b" in err


def test_index_of_a_campaign_dir_and_report_hook(capsys, tmp_path: Path):
    camp = write_campaign(tmp_path / "res" / "one", [FakeCase(samples=2)], name="one")
    rc, out, _ = _run(capsys, ["index", str(camp)])
    assert rc == 0 and "indexed    one" in out and (tmp_path / "res" / "index.duckdb").is_file()
    two = write_campaign(tmp_path / "res" / "two", [FakeCase(samples=2, replayers=2)], name="two")
    rc, out, _ = _run(capsys, ["report", str(two)])
    assert rc == 0 and (two / "report.html").is_file()
    rc, out, _ = _run(capsys, ["results", "--root", str(tmp_path / "res"), "--where", "replayers = 2",
                               "--format", "json"])
    assert [r["campaign"] for r in json.loads(out)] == ["two"]
