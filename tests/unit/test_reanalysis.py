"""A campaign stored by an older idsbench (schema 1, tests/data/campaigns/v1-fixture: real Suricata and
tcpreplay output, eve.json removed) still loads, reports and indexes; and because every derived number
is computed at analysis time from the raw series, changing nothing but the analysis code path changes
the results of that stored campaign."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from idsbench.analysis import case_table
from idsbench.analysis import sample as sample_analysis
from idsbench.analysis.publish import index_campaign
from idsbench.report import write_report
from idsbench.store.index_query import query_cases
from idsbench.store.reader import load_campaign

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "campaigns" / "v1-fixture"


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    root = tmp_path / "results" / "v1"
    shutil.copytree(FIXTURE, root)
    return root


def _stored(root: Path) -> dict[tuple[str, int], dict[str, object]]:
    out = {}
    for path in root.glob("cases/*/s*/summary.json"):
        doc = json.loads(path.read_text())
        out[(doc["case_id"], doc["sample"])] = doc
    return out


def test_old_campaign_loads_and_its_derived_numbers_are_recomputed(campaign: Path):
    c = load_campaign(campaign)
    assert len(c.cases) == 2 and len(c.samples) == 4 and not c.incomplete
    assert all(s.summary.schema_version == 1 and s.status == "ok" for s in c.samples)
    stored = _stored(campaign)
    for s in c.samples:
        figures = sample_analysis.sample_figures(s, c.doc.settle_s)
        old = stored[(s.case_id, s.index)]
        # the same raw series give the same numbers the old runner froze into the summary
        # (the window now ends at the sensor stop instead of replay end + settle: within 0.1 s)
        assert figures.sensor_rss_peak_bytes == old["resources"]["sensor_rss_peak_bytes"]
        assert figures.stable_after_s == pytest.approx(old["stable_after_s"], abs=0.01)
        assert figures.decoded_pkts == s.summary.case.replayers * 199
    rows = {r.params.replayers: r for r in case_table(c)}
    assert rows[1].medians["decoded_pkts"] == 199 and rows[2].medians["decoded_pkts"] == 398
    assert rows[2].ci_level == 0.5 and rows[2].status_counts == {"ok": 2}


def test_changing_only_the_analysis_changes_the_stored_campaigns_results(campaign: Path, monkeypatch):
    before = {r.case: r for r in case_table(load_campaign(campaign))}
    summaries = {p: p.read_bytes() for p in campaign.glob("cases/*/s*/*")}
    # an analysis "fix": resources averaged over the first half second of the replay only
    monkeypatch.setattr(sample_analysis, "window",
                        lambda s, settle_s: (s.summary.replay.start_unix, s.summary.replay.start_unix + 0.5)
                        if s.summary.replay else None)
    after = {r.case: r for r in case_table(load_campaign(campaign))}
    assert {p: p.read_bytes() for p in campaign.glob("cases/*/s*/*")} == summaries  # no file touched
    changed = [c for c in before if before[c].medians["host_cpu_pct"] != after[c].medians["host_cpu_pct"]]
    assert changed, "the host CPU over a different window must differ"
    assert all(before[c].medians["decoded_pkts"] == after[c].medians["decoded_pkts"] for c in before)
    # the report and the index are made from the same analysis
    html = write_report(campaign).read_text()
    assert "v1-fixture" in html
    index_campaign(campaign)
    indexed = {r.case: r for _, r in query_cases(campaign.parent)}
    assert indexed == after
