"""store.index: indexing fake campaigns, incremental re-index, stored rows, series, incomplete samples."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from idsbench.analysis import case_table
from idsbench.analysis.publish import index_campaign, index_root
from idsbench.errors import InputError, SpecError
from idsbench.sensors.suricata.eve import scan_eve
from idsbench.store.index import find_campaigns, index_file
from idsbench.store.index_query import campaign_cases, query_cases, series
from idsbench.store.reader import load_campaign
from tests.fakecampaign import FakeCase, standard_campaign, write_campaign

STATS = '{"timestamp":"2024-01-01T00:00:00.000000+0000","event_type":"stats","stats":{"uptime":1}}\n'
ALERT = '{"timestamp":"2024-01-01T00:00:01.000000+0000","event_type":"alert","alert":{"sid":1}}\n'


def _actions(results) -> dict[str, str]:
    return {r.campaign_id: r.action for r in results}


def _sql(root: Path, sql: str, params=()):
    with duckdb.connect(str(index_file(root)), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    standard_campaign(tmp_path / "a", samples=3)
    write_campaign(tmp_path / "nested" / "b", [FakeCase(setup="container", replayers=4, samples=2),
                                               FakeCase(setup="vm", replayers=1, samples=2, incomplete=[1])],
                   name="b")
    return tmp_path


def test_index_root_stores_campaigns_cases_samples(root: Path):
    results = index_root(root)
    assert _actions(results) == {"a": "indexed", "nested/b": "indexed"}
    assert find_campaigns(root) == [root / "a", root / "nested" / "b"]
    (name, fp, n_cases, n_samples, n_inc, created, spec), = _sql(
        root, "SELECT name, fingerprint, n_cases, n_samples, n_incomplete, created, spec->>'$.name' "
              "FROM campaigns WHERE campaign_id = 'nested/b'")
    assert (name, n_cases, n_samples, n_inc, spec) == ("b", 2, 3, 1, "b") and len(fp) == 16
    assert created.year == 2023  # tests.fakecampaign.T0
    # The stored case results are exactly analysis.case_table's, with their campaign id.
    expected = case_table(load_campaign(root / "a"))
    got = [r for cid, r in query_cases(root) if cid == "a"]
    assert got == expected
    assert [r.case for r in got] == [r.case for r in expected]  # plan order kept
    # Typed columns for filters, incl. CIs and parameters.
    (lo, hi, med, flow_mode, labels), = _sql(
        root, "SELECT sensor_cpu_pct_ci_lo, sensor_cpu_pct_ci_hi, sensor_cpu_pct, flow_mode, labels "
              "FROM cases WHERE campaign_id = 'a' AND setup = 'container' AND replayers = 4")
    assert lo < med < hi and flow_mode == "distinct" and labels == ["emulated"]


def test_samples_table_keeps_incomplete_samples_with_reason(root: Path):
    index_root(root)
    rows = _sql(root, "SELECT \"case\", sample, status, reason, sent_pkts, figures['replay.sent_pkts'], "
                      "summary->>'$.sensor.version' FROM samples WHERE campaign_id = 'nested/b' "
                      "ORDER BY \"case\", sample")
    assert len(rows) == 4
    done = [r for r in rows if r[2] == "ok"]
    (inc,) = [r for r in rows if r[2] == "incomplete"]
    assert inc[1] == 1 and "no summary.json" in inc[3] and inc[4] is None
    assert all(r[4] == r[5] > 0 and r[6] == "7.0.10" for r in done)


def test_series_parquet_is_aligned_on_replay_start(root: Path):
    index_root(root)
    campaign = load_campaign(root / "a")
    sample = campaign.samples[0]
    df = series(root, "counters", "a", sample.case_id)
    one = df[df["sample"] == sample.index]
    assert len(one) > 10 and (one["t_s"] - (one["t_unix"] - sample.start_unix)).abs().max() < 1e-6
    assert (root / "a" / "series" / "monitor.parquet").is_file()
    # The views span every campaign; the incomplete sample's monitor rows are there, without t_s.
    (n_campaigns,), = _sql(root, "SELECT count(DISTINCT campaign_id) FROM monitor")
    (no_t,), = _sql(root, "SELECT count(*) FROM monitor WHERE campaign_id = 'nested/b' AND t_s IS NULL")
    assert n_campaigns == 2 and no_t > 0


def test_incremental_reindex_only_reads_changed_campaigns(root: Path):
    index_root(root)
    assert set(_actions(index_root(root)).values()) == {"unchanged"}
    summary = next((root / "a" / "cases").glob("*/s0/summary.json"))
    doc = json.loads(summary.read_text())
    doc["sensor"]["counters"]["decoded_pkts"] = 12345
    summary.write_text(json.dumps(doc))
    os.utime(summary, ns=(1, 1))  # a different mtime even on a coarse clock
    assert _actions(index_root(root)) == {"a": "indexed", "nested/b": "unchanged"}
    (decoded,), = _sql(root, "SELECT decoded_pkts FROM samples WHERE campaign_id = 'a' AND path = ?",
                       [os.path.relpath(summary.parent, root / "a")])
    assert decoded == 12345
    # A new sample directory (a resumed run) is a change too; a deleted campaign is dropped.
    (summary.parent.parent / "s7").mkdir()
    assert _actions(index_root(root))["a"] == "indexed"
    for p in sorted((root / "nested").rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    assert _actions(index_root(root)) == {"a": "unchanged", "nested/b": "removed"}
    assert _sql(root, "SELECT count(*) FROM cases WHERE campaign_id = 'nested/b'") == [(0,)]
    assert _actions(index_root(root, force=True)) == {"a": "indexed"}


def test_deleting_eve_after_indexing_changes_nothing(root: Path):
    for eve in (root / "a" / "cases").glob("*/s*/eve.json"):
        eve.write_text(STATS + ALERT + STATS)
    index_root(root)
    before = query_cases(root)
    samples_before = _sql(root, "SELECT * EXCLUDE (figures) FROM samples ORDER BY campaign_id, \"case\", sample")
    victim = next((root / "a" / "cases").glob("*/s1/eve.json"))
    victim.unlink()
    assert _actions(index_root(root))["a"] == "unchanged"
    assert query_cases(root) == before
    index_root(root, force=True)  # even a full re-read does not need eve.json
    assert query_cases(root) == before
    assert _sql(root, "SELECT * EXCLUDE (figures) FROM samples ORDER BY campaign_id, \"case\", sample") \
        == samples_before


def _cut_eve(sample_dir: Path) -> str:
    """A truncated eve.json (sensor killed mid-write); returns the scan warning the runner records."""
    eve = sample_dir / "eve.json"
    eve.write_text(STATS + ALERT + '{"timestamp":"2024-01-01T00:00:02","event_type":"sta')
    (warning,) = scan_eve(eve).warnings
    return warning


def test_truncated_eve_recorded_by_runner_makes_sample_incomplete(tmp_path: Path):
    case = FakeCase(samples=3, statuses=["ok", "ok", "oom"])
    root = tmp_path / "r"
    write_campaign(root / "c", [case])
    cases_dir = root / "c" / "cases" / case.case_id
    for k in (1, 2):  # s1 ok but its eve.json was cut; s2 died of OOM (a cut eve.json is expected)
        summary = cases_dir / f"s{k}" / "summary.json"
        doc = json.loads(summary.read_text())
        doc["warnings"].append(_cut_eve(summary.parent))
        summary.write_text(json.dumps(doc))
    results = index_root(root)
    eve = cases_dir / "s1" / "eve.json"
    assert any(str(eve) in w and "incomplete" in w for w in results[0].warnings)
    statuses = dict(_sql(root, "SELECT sample, status FROM samples ORDER BY sample"))
    assert statuses == {0: "ok", 1: "incomplete", 2: "oom"}
    (reason,), = _sql(root, "SELECT reason FROM samples WHERE sample = 1")
    assert str(eve) in reason and "last line is incomplete" in reason
    ((_, row),) = query_cases(root)
    assert row.samples == 1 and row.samples_incomplete == 1 and row.samples_failed == 1
    assert any(f"case {case.case_id}: 1 sample(s) incomplete" in w for w in row.warnings)


def test_event_log_damage_recorded_by_runner_makes_sample_incomplete(tmp_path: Path):
    case = FakeCase(samples=2)
    root = tmp_path / "r"
    write_campaign(root / "c", [case])
    sample = root / "c" / "cases" / case.case_id / "s0"
    doc = json.loads((sample / "summary.json").read_text())
    doc["eve"] = {"path": str(sample / "eve.json"), "lines": 3, "corrupt_lines": 1, "truncated_tail": False}
    (sample / "summary.json").write_text(json.dumps(doc))
    results = index_root(root)
    assert any(str(sample / "eve.json") in w and "corrupt line" in w for w in results[0].warnings)
    assert dict(_sql(root, "SELECT sample, status FROM samples")) == {0: "incomplete", 1: "ok"}
    assert query_cases(root)[0][1].samples_incomplete == 1


def test_index_campaign_defaults_to_parent_and_checks_root(tmp_path: Path):
    camp, _ = standard_campaign(tmp_path / "res" / "one", samples=2)
    result = index_campaign(camp)
    assert result.action == "indexed" and result.campaign_id == "one" and result.cases == 6
    assert index_file(tmp_path / "res").is_file()
    assert index_campaign(camp).action == "unchanged"
    with pytest.raises(SpecError, match="not under the results root"):
        index_campaign(camp, tmp_path / "elsewhere")
    with pytest.raises(SpecError, match="is a campaign"):
        index_campaign(camp, camp)
    assert campaign_cases(tmp_path / "res", "one")[1] == case_table(load_campaign(camp))


def test_broken_campaign_is_reported_and_others_indexed(root: Path):
    (root / "junk").mkdir()
    (root / "junk" / "campaign.json").write_text("{not json")
    results = {r.campaign_id: r for r in index_root(root)}
    assert results["junk"].action == "failed" and "campaign.json" in results["junk"].warnings[0]
    assert results["a"].action == "indexed"


def test_query_errors(root: Path):
    with pytest.raises(InputError, match="no result index"):
        query_cases(root)
    index_root(root)
    with pytest.raises(SpecError, match=r"replayer=4.*Fix: .*replayers.*drop_ratio"):
        query_cases(root, "replayer=4")
    with pytest.raises(SpecError, match="not a valid filter"):
        query_cases(root, "replayers=4; DROP TABLE cases")
    with pytest.raises(SpecError, match="empty"):
        query_cases(root, "  ")
    assert len(query_cases(root)) == 8  # nothing was dropped


def test_not_ok_samples_keep_their_recall_in_the_samples_table(tmp_path: Path):
    # every case metric is a column of both tables (sender, loss waterfall, recall: schema 3)
    case = FakeCase(samples=2, statuses=["ok", "failed"])
    write_campaign(tmp_path / "t", [case], name="t")
    truth = {"case_id": case.case_id, "engine": "suricata", "engine_version": "7.0.10", "traces": ["0" * 64],
             "alerts_by_sid": {"1": 4}}
    (tmp_path / "t" / "truth").mkdir()
    (tmp_path / "t" / "truth" / f"{case.case_id}.json").write_text(json.dumps(truth))
    index_root(tmp_path)
    rows = _sql(tmp_path, "SELECT sample, status, alert_recall FROM samples ORDER BY sample")
    assert [(k, status) for k, status, _ in rows] == [(0, "ok"), (1, "failed")]
    assert all(r is not None and 0.0 <= r <= 1.0 for _, _, r in rows), rows
    (recall, lo, hi, loss_wire), = _sql(tmp_path, "SELECT alert_recall, alert_recall_ci_lo, alert_recall_ci_hi, "
                                                  "loss_wire_pkts FROM cases")
    assert recall == rows[0][2] and loss_wire is not None


def test_an_index_of_an_older_schema_is_refused_for_queries_then_rebuilt(root: Path):
    index_root(root)
    with duckdb.connect(str(index_file(root))) as con:
        con.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
        con.execute("ALTER TABLE cases DROP COLUMN alert_recall")
    with pytest.raises(InputError, match="has schema 2.*rebuild it with `idsbench index"):
        query_cases(root)
    assert _actions(index_root(root)) == {"a": "indexed", "nested/b": "indexed"}  # all of it, anew
    assert [r for cid, r in query_cases(root) if cid == "a"] == case_table(load_campaign(root / "a"))
    (n, with_recall), = _sql(root, "SELECT count(*), count(alert_recall) FROM cases")  # the column is back
    assert n == len(case_table(load_campaign(root / "a"))) + 2 and with_recall == 0  # no ground truth here
