"""Rows of the result-store tables, built from an analysed campaign (no raw eve.json needed).

Column lists here are the schema of `index.duckdb` (docs/compare.md, "The result store").
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from idsbench.store.campaigndoc import Environment
from idsbench.store.casekey import case_key
from idsbench.store.layout import CAMPAIGN_FILE, CASES_DIR, COUNTERS_FILE, MONITOR_FILE, SUMMARY_FILE
from idsbench.store.reader import Campaign, probe_or_none, read_probe_doc
from idsbench.store.schema import CASE_METRICS, CaseResult, SampleSummary, phase_seconds

SCHEMA_VERSION = "8"  # 3: every case metric (sender, loss waterfall, recall) is a column; 4: overhead_s, phases, case
# keys (store.casekey); 5: `row` holds the typed CaseResult (no `extra`), environment with its `engines`; 6: the
# engine "capture" is "nodetect" (idsbench.legacy), in the columns and the case keys trend joins on
# 7: sensor_us_per_pkt_net (issue 41)
# 8: host_speed, sensor_us_per_pkt_norm (issue 42)
SERIES_FILES = (SUMMARY_FILE, COUNTERS_FILE, MONITOR_FILE)  # what the digest watches (not eve.json)
# Stored as columns: the case medians (and their CIs) of CASE_METRICS, and the per-sample figures.
SAMPLE_FIGURES = (*CASE_METRICS, "decode_ratio")
MAX_FLAT_LIST = 64  # longer lists (e.g. trace.per_second) stay in the `summary` JSON only

CAMPAIGN_COLUMNS: dict[str, str] = {
    "campaign_id": "VARCHAR PRIMARY KEY", "name": "VARCHAR", "path": "VARCHAR",
    "created_unix": "DOUBLE", "created": "TIMESTAMP", "spec": "JSON", "environment": "JSON",
    "fingerprint": "VARCHAR", "hostname": "VARCHAR", "kernel": "VARCHAR", "suricata_version": "VARCHAR",
    "n_cases": "INTEGER", "n_samples": "INTEGER", "n_incomplete": "INTEGER", "warnings": "VARCHAR[]",
    "counters_parquet": "VARCHAR", "monitor_parquet": "VARCHAR", "digest": "VARCHAR",
    "indexed_unix": "DOUBLE",
    "inputs": "JSON", "probe": "JSON",  # campaign.json inputs, probe.json: what a trend's "what changed" reads
}
CASE_COLUMNS: dict[str, str] = {
    "campaign_id": "VARCHAR", "campaign": "VARCHAR", "ordinal": "INTEGER", "case": "VARCHAR",
    "setup": "VARCHAR", "engine": "VARCHAR", "sender": "VARCHAR",
    "trace": "VARCHAR", "replayers": "INTEGER", "rate": "VARCHAR", "loops": "INTEGER", "cpus": "DOUBLE",
    "memory": "VARCHAR", "flow_mode": "VARCHAR", "duration_s": "DOUBLE", "samples": "INTEGER",
    **{m: "DOUBLE" for m in CASE_METRICS},
    **{f"{m}_ci_{end}": "DOUBLE" for m in CASE_METRICS for end in ("lo", "hi")},
    "status": "VARCHAR", "labels": "VARCHAR[]", "samples_failed": "INTEGER",
    "samples_incomplete": "INTEGER", "ci_level": "DOUBLE", "warnings": "VARCHAR[]", "row": "JSON",
    # the case's identity across campaigns (store.casekey): trend joins on series_id
    "key_id": "VARCHAR", "series_id": "VARCHAR", "key": "JSON",
}
SAMPLE_COLUMNS: dict[str, str] = {
    "campaign_id": "VARCHAR", "case": "VARCHAR", "sample": "INTEGER", "status": "VARCHAR",
    "reason": "VARCHAR", "path": "VARCHAR", "start_unix": "DOUBLE", "end_unix": "DOUBLE",
    **{m: "DOUBLE" for m in SAMPLE_FIGURES},
    "labels": "VARCHAR[]", "warnings": "VARCHAR[]", "sensor_version": "VARCHAR",
    "phases": "MAP(VARCHAR, DOUBLE)", "figures": "MAP(VARCHAR, DOUBLE)", "summary": "JSON",
}


def campaign_digest(root: Path) -> str:
    """Changes when campaign.json or any sample's summary/series file appears, changes or goes.

    Keyed by name, size and mtime; eve.json is left out on purpose (it may be deleted after indexing)."""
    h = hashlib.sha256(SCHEMA_VERSION.encode())
    _stat_into(h, root / CAMPAIGN_FILE, CAMPAIGN_FILE)
    cases = root / CASES_DIR
    for case in sorted(os.scandir(cases), key=lambda e: e.name) if cases.is_dir() else []:
        if not case.is_dir():
            continue
        for sample in sorted(os.scandir(case.path), key=lambda e: e.name):
            if sample.is_dir():
                for name in SERIES_FILES:
                    _stat_into(h, Path(sample.path) / name, f"{case.name}/{sample.name}/{name}")
    return h.hexdigest()


def _stat_into(h: Any, path: Path, label: str) -> None:
    try:
        st = path.stat()
        h.update(f"{label}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    except FileNotFoundError:
        h.update(f"{label}\0-\n".encode())


def environment_fingerprint(env: Environment) -> str:
    """Short stable digest of campaign.json's environment (same host + versions = same value)."""
    return hashlib.sha256(json.dumps(env.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:16]


# One row of a table: column -> value (DuckDB casts it to the column's type, CAMPAIGN/CASE/SAMPLE_COLUMNS).
Row = dict[str, object]


@dataclass(frozen=True)
class AnalysedCampaign:
    """A campaign as read, with its analysis: what the index stores (built by analysis.publish)."""

    campaign: Campaign
    cases: tuple[CaseResult, ...]
    sample_figures: Mapping[tuple[str, int], Mapping[str, float | None]]


def campaign_row(campaign: Campaign, campaign_id: str, rel_path: str, digest: str,
                 series: dict[str, str | None], now: float) -> Row:
    env = campaign.doc.environment
    suricata = env.engines.get("suricata")
    created = campaign.doc.created_unix
    return {
        "campaign_id": campaign_id, "name": campaign.name, "path": rel_path,
        "created_unix": float(created) if created is not None else None,
        "created": float(created) if created is not None else None,  # made a TIMESTAMP (UTC) on insert
        "spec": json.dumps(campaign.doc.spec.model_dump(mode="json")),
        "environment": json.dumps(env.model_dump(mode="json")),
        "fingerprint": environment_fingerprint(env), "hostname": env.hostname,
        "kernel": env.kernel, "suricata_version": suricata.version if suricata is not None else None,
        "n_cases": len(campaign.cases), "n_samples": len(campaign.samples),
        "n_incomplete": len(campaign.incomplete), "warnings": list(campaign.warnings),
        "counters_parquet": series.get("counters"), "monitor_parquet": series.get("monitor"),
        "digest": digest, "indexed_unix": now,
        "inputs": json.dumps(campaign.doc.inputs.model_dump(mode="json")),
        "probe": json.dumps(read_probe_doc(campaign.root)),
    }


def case_rows(analysed: AnalysedCampaign, campaign_id: str) -> list[Row]:
    """Typed columns for WHERE clauses plus `row`: the case's results-contract JSON object."""
    out = []
    probe = probe_or_none(analysed.campaign.root)
    for ordinal, result in enumerate(analysed.cases):
        p = result.params
        key = case_key(analysed.campaign.doc, p, probe, campaign_id)
        rec: Row = {"campaign_id": campaign_id, "campaign": analysed.campaign.name,
                               "ordinal": ordinal, "case": result.case, "setup": p.setup,
                               "engine": p.engine, "sender": p.sender, "trace": p.trace,
                               "replayers": p.replayers, "rate": p.rate, "loops": p.loops, "cpus": p.cpus,
                               "memory": p.memory, "flow_mode": p.flows, "duration_s": p.duration_s,
                               "samples": result.samples, "status": result.status,
                               "samples_failed": result.samples_failed,
                               "samples_incomplete": result.samples_incomplete, "ci_level": result.ci_level}
        for m in CASE_METRICS:
            rec[m] = result.medians.get(m)
            lo, hi = result.cis.get(m) or (None, None)
            rec[f"{m}_ci_lo"], rec[f"{m}_ci_hi"] = lo, hi
        rec["labels"] = list(result.labels)
        rec["warnings"] = list(result.warnings)
        rec["row"] = result.model_dump_json()
        rec["key_id"], rec["series_id"], rec["key"] = key.key_id, key.series_id, json.dumps(key.fields())
        out.append(rec)
    return out


def sample_rows(analysed: AnalysedCampaign, campaign_id: str) -> list[Row]:
    """Every sample: complete ones (any status) and incomplete ones with their reason."""
    campaign = analysed.campaign
    out = []
    for s in campaign.samples:
        out.append(_sample_row(analysed, campaign_id, s.case_id, s.index, s.path, s.status, s.summary.reason,
                               s.summary))
    for inc in campaign.incomplete:
        out.append(_sample_row(analysed, campaign_id, inc.case_id, inc.index, inc.path, "incomplete",
                               inc.reason, inc.summary))
    return sorted(out, key=lambda r: (r["case"], r["sample"]))


def _sample_row(analysed: AnalysedCampaign, campaign_id: str, case_id: str, index: int, path: Path,
                status: str, reason: str | None, summary: SampleSummary | None) -> Row:
    figures: dict[str, float | None] = {m: None for m in SAMPLE_FIGURES}
    figures.update({k: v for k, v in (analysed.sample_figures.get((case_id, index)) or {}).items()
                    if k in figures})
    doc = summary.to_json() if summary is not None else None
    replay = summary.replay if summary is not None else None
    return {
        "campaign_id": campaign_id, "case": case_id, "sample": index, "status": status, "reason": reason,
        "path": os.path.relpath(path, analysed.campaign.root),
        "start_unix": replay.start_unix if replay else None,
        "end_unix": replay.end_unix if replay else None, **figures,
        "labels": list(summary.labels) if summary else [],
        "warnings": list(summary.warnings) if summary else [],
        "sensor_version": summary.sensor.version if summary else None,
        "phases": phase_seconds(summary.phases) if summary else {},
        "figures": flatten_numbers(doc or {}),
        "summary": json.dumps(doc) if doc is not None else None,
    }


def flatten_numbers(doc: Any, prefix: str = "") -> dict[str, float]:
    """Every numeric leaf of a JSON document under a dotted key (`sensor.counters.alerts`,
    `replay.replayers.0.pps`); booleans, strings and lists longer than MAX_FLAT_LIST are left out."""
    out: dict[str, float] = {}
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out[name] = float(value)
        elif isinstance(value, dict) or (isinstance(value, list) and len(value) <= MAX_FLAT_LIST):
            out.update(flatten_numbers(value, name + "."))
    return out
