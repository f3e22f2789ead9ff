"""Rows of the result-store tables, built from an analysed campaign (no raw eve.json needed).

Column lists here are the schema of `index.duckdb` (docs/architecture.md, "Result store").
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from idsbench.analysis.cases import METRICS, sample_metrics
from idsbench.analysis.load import SUMMARY_FILE, Campaign, SampleRecord

SCHEMA_VERSION = "1"
SERIES_FILES = ("summary.json", "counters.csv", "monitor.csv")  # what the digest watches (not eve.json)
SAMPLE_FIGURES = (*METRICS, "decode_ratio")
MAX_FLAT_LIST = 64  # longer lists (e.g. trace.per_second) stay in the `summary` JSON only

CAMPAIGN_COLUMNS: dict[str, str] = {
    "campaign_id": "VARCHAR PRIMARY KEY", "name": "VARCHAR", "path": "VARCHAR",
    "created_unix": "DOUBLE", "created": "TIMESTAMP", "spec": "JSON", "environment": "JSON",
    "fingerprint": "VARCHAR", "hostname": "VARCHAR", "kernel": "VARCHAR", "suricata_version": "VARCHAR",
    "n_cases": "INTEGER", "n_samples": "INTEGER", "n_incomplete": "INTEGER", "warnings": "VARCHAR[]",
    "counters_parquet": "VARCHAR", "monitor_parquet": "VARCHAR", "digest": "VARCHAR",
    "indexed_unix": "DOUBLE",
}
CASE_COLUMNS: dict[str, str] = {
    "campaign_id": "VARCHAR", "campaign": "VARCHAR", "ordinal": "INTEGER", "case": "VARCHAR",
    "setup": "VARCHAR",
    "trace": "VARCHAR", "replayers": "INTEGER", "rate": "VARCHAR", "loops": "INTEGER", "cpus": "DOUBLE",
    "memory": "VARCHAR", "flow_mode": "VARCHAR", "duration_s": "DOUBLE", "samples": "INTEGER",
    **{m: "DOUBLE" for m in METRICS},
    **{f"{m}_ci_{end}": "DOUBLE" for m in METRICS for end in ("lo", "hi")},
    "status": "VARCHAR", "labels": "VARCHAR[]", "samples_failed": "INTEGER",
    "samples_incomplete": "INTEGER", "warnings": "VARCHAR[]", "row": "JSON",
}
SAMPLE_COLUMNS: dict[str, str] = {
    "campaign_id": "VARCHAR", "case": "VARCHAR", "sample": "INTEGER", "status": "VARCHAR",
    "reason": "VARCHAR", "path": "VARCHAR", "start_unix": "DOUBLE", "end_unix": "DOUBLE",
    **{m: "DOUBLE" for m in SAMPLE_FIGURES},
    "labels": "VARCHAR[]", "warnings": "VARCHAR[]", "sensor_version": "VARCHAR",
    "figures": "MAP(VARCHAR, DOUBLE)", "summary": "JSON",
}


def campaign_digest(root: Path) -> str:
    """Changes when campaign.json or any sample's summary/series file appears, changes or goes.

    Keyed by name, size and mtime; eve.json is left out on purpose (it may be deleted after indexing)."""
    h = hashlib.sha256(SCHEMA_VERSION.encode())
    _stat_into(h, root / "campaign.json", "campaign.json")
    cases = root / "cases"
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


def environment_fingerprint(env: dict[str, Any]) -> str:
    """Short stable digest of campaign.json's environment (same host + versions = same value)."""
    return hashlib.sha256(json.dumps(env, sort_keys=True, default=str).encode()).hexdigest()[:16]


def campaign_row(campaign: Campaign, campaign_id: str, rel_path: str, digest: str,
                 series: dict[str, str | None], now: float) -> dict[str, Any]:
    env = campaign.environment
    suricata = env.get("suricata") if isinstance(env.get("suricata"), dict) else {}
    created = campaign.doc.get("created_unix")
    return {
        "campaign_id": campaign_id, "name": campaign.name, "path": rel_path,
        "created_unix": float(created) if created is not None else None,
        "created": float(created) if created is not None else None,  # made a TIMESTAMP (UTC) on insert
        "spec": json.dumps(campaign.spec), "environment": json.dumps(env),
        "fingerprint": environment_fingerprint(env), "hostname": env.get("hostname"),
        "kernel": env.get("kernel"), "suricata_version": suricata.get("version"),
        "n_cases": len(campaign.cases), "n_samples": len(campaign.samples),
        "n_incomplete": len(campaign.incomplete), "warnings": list(campaign.warnings),
        "counters_parquet": series.get("counters"), "monitor_parquet": series.get("monitor"),
        "digest": digest, "indexed_unix": now,
    }


def case_rows(campaign: Campaign, campaign_id: str, table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Typed columns for WHERE clauses plus `row`: the exact case_table dict, returned as is."""
    planned = {str(c.get("case_id")): c for c in campaign.doc.get("cases") or [] if isinstance(c, dict)}
    out = []
    for ordinal, row in enumerate(table):
        entry = planned.get(row["case"], {})
        rec: dict[str, Any] = {"campaign_id": campaign_id, "campaign": campaign.name, "ordinal": ordinal}
        for key in ("case", "setup", "trace", "replayers", "rate", "loops", "cpus", "memory", "samples",
                    *METRICS, "status", "samples_failed", "samples_incomplete"):
            rec[key] = row.get(key)
        rec["flow_mode"] = entry.get("flows")
        rec["duration_s"] = entry.get("duration_s")
        for m in METRICS:
            lo, hi = row.get(f"{m}_ci") or (None, None)
            rec[f"{m}_ci_lo"], rec[f"{m}_ci_hi"] = lo, hi
        rec["labels"] = [str(x) for x in row.get("labels") or []]
        rec["warnings"] = [str(x) for x in row.get("warnings") or []]
        rec["row"] = json.dumps(row)
        out.append(rec)
    return out


def sample_rows(campaign: Campaign, campaign_id: str) -> list[dict[str, Any]]:
    """Every sample: complete ones (any status) and incomplete ones with their reason."""
    out = []
    for s in campaign.samples:
        out.append(_sample_row(campaign, campaign_id, s.case_id, s.index, s.path, s.status, None, s.summary))
    for inc in campaign.incomplete:
        summary = _read_summary(inc.path / SUMMARY_FILE)  # e.g. present, but eve.json was cut
        out.append(_sample_row(campaign, campaign_id, inc.case_id, inc.index, inc.path, "incomplete",
                               inc.reason, summary))
    return sorted(out, key=lambda r: (r["case"], r["sample"]))


def _sample_row(campaign: Campaign, campaign_id: str, case_id: str, index: int, path: Path, status: str,
                reason: str | None, summary: dict[str, Any] | None) -> dict[str, Any]:
    figures: dict[str, float | None] = {m: None for m in SAMPLE_FIGURES}
    if summary is not None:
        figures.update(sample_metrics(SampleRecord(case_id, index, path, summary)))
    replay = (summary or {}).get("replay") or {}
    return {
        "campaign_id": campaign_id, "case": case_id, "sample": index, "status": status, "reason": reason,
        "path": os.path.relpath(path, campaign.root), "start_unix": _float(replay.get("start_unix")),
        "end_unix": _float(replay.get("end_unix")), **figures,
        "labels": [str(x) for x in (summary or {}).get("labels") or []],
        "warnings": [str(x) for x in (summary or {}).get("warnings") or []],
        "sensor_version": ((summary or {}).get("sensor") or {}).get("version"),
        "figures": flatten_numbers(summary or {}),
        "summary": json.dumps(summary) if summary is not None else None,
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


def _read_summary(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
