"""Reads a campaign directory (docs/architecture.md, "Sample directory") into a frozen Campaign.

A sample is complete iff its summary.json exists and parses and, for an `ok` sample, its eve.json
was read whole (no corrupt or truncated lines: the counters may be short otherwise). Planned samples
that are missing, unfinished or corrupt are kept as IncompleteSample with a reason: never dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from idsbench.errors import InputError

CAMPAIGN_FILE = "campaign.json"
SUMMARY_FILE = "summary.json"
EVE_FILE = "eve.json"
PARAM_KEYS = ("trace", "replayers", "rate", "loops", "setup", "cpus", "memory")
_SAMPLE_DIR = re.compile(r"^s(\d+)$")


@dataclass(frozen=True)
class SampleRecord:
    """One complete sample: its directory and parsed summary.json."""

    case_id: str
    index: int
    path: Path
    summary: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.summary.get("status") or "ok")

    @property
    def start_unix(self) -> float | None:
        value = (self.summary.get("replay") or {}).get("start_unix")
        return float(value) if value is not None else None


@dataclass(frozen=True)
class IncompleteSample:
    case_id: str
    index: int
    path: Path
    reason: str


@dataclass(frozen=True)
class CaseInfo:
    case_id: str
    params: dict[str, Any]
    planned_samples: int


@dataclass(frozen=True)
class Campaign:
    root: Path
    doc: dict[str, Any]
    cases: tuple[CaseInfo, ...]
    samples: tuple[SampleRecord, ...]
    incomplete: tuple[IncompleteSample, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return str(self.spec.get("name") or self.root.name)

    @property
    def spec(self) -> dict[str, Any]:
        return self.doc.get("spec") or {}

    @property
    def environment(self) -> dict[str, Any]:
        return self.doc.get("environment") or {}

    @property
    def stats_interval_s(self) -> float:
        return float((self.spec.get("sensor") or {}).get("stats_interval_s") or 1.0)

    def samples_of(self, case_id: str) -> list[SampleRecord]:
        return [s for s in self.samples if s.case_id == case_id]

    def incomplete_of(self, case_id: str) -> list[IncompleteSample]:
        return [s for s in self.incomplete if s.case_id == case_id]

    def case(self, case_id: str) -> CaseInfo:
        for c in self.cases:
            if c.case_id == case_id:
                return c
        raise KeyError(case_id)


def read_campaign_doc(root: Path) -> dict[str, Any]:
    """campaign.json of `root`, or InputError naming the directory and the fix."""
    if not root.is_dir():
        raise InputError(f"{root} does not exist or is not a directory.",
                         fix="give the campaign directory that `idsbench run --out DIR` wrote.")
    path = root / CAMPAIGN_FILE
    if not path.is_file():
        raise InputError(f"{root} is not an idsbench campaign (it has no {CAMPAIGN_FILE}).",
                         fix="give the campaign directory that `idsbench run --out DIR` wrote "
                             "(the one holding campaign.json and cases/).")
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} is unreadable or not valid JSON ({exc}).",
                         fix="restore it from a copy, or re-run the campaign.") from exc
    if not isinstance(doc, dict):
        raise InputError(f"{path} does not hold a JSON object.", fix="re-run the campaign.")
    return doc


def load_campaign(root: Path | str) -> Campaign:
    root = Path(root)
    doc = read_campaign_doc(root)
    warnings: list[str] = []
    planned: dict[str, CaseInfo] = {}
    for entry in doc.get("cases") or []:
        params = {k: entry.get(k) for k in PARAM_KEYS}
        planned[entry["case_id"]] = CaseInfo(entry["case_id"], params, int(entry.get("samples") or 0))
    samples: list[SampleRecord] = []
    incomplete: list[IncompleteSample] = []
    cases_dir = root / "cases"
    extra = sorted(p.name for p in cases_dir.iterdir() if p.is_dir() and p.name not in planned) \
        if cases_dir.is_dir() else []
    for case_id in [*planned, *extra]:
        info = planned.get(case_id)
        found = _sample_dirs(cases_dir / case_id)
        indexes = sorted(set(found) | set(range(info.planned_samples if info else 0)))
        for index in indexes:
            path = cases_dir / case_id / f"s{index}"
            record, reason = _read_sample(case_id, index, path, warnings)
            if record:
                samples.append(record)
            else:
                incomplete.append(IncompleteSample(case_id, index, path, reason))
        if info is None:
            params = next((dict(s.summary.get("case") or {}) for s in samples if s.case_id == case_id), {})
            planned[case_id] = CaseInfo(case_id, {k: params.get(k) for k in PARAM_KEYS}, len(indexes))
            warnings.append(f"{cases_dir / case_id} is not in campaign.json's plan; included from its "
                            "summaries.")
    for s in incomplete:
        warnings.append(f"sample {s.case_id}/s{s.index} is incomplete: {s.reason}")
    return Campaign(root, doc, tuple(planned.values()), tuple(samples), tuple(incomplete), tuple(warnings))


def _sample_dirs(case_dir: Path) -> list[int]:
    if not case_dir.is_dir():
        return []
    return [int(m.group(1)) for p in case_dir.iterdir() if p.is_dir() and (m := _SAMPLE_DIR.match(p.name))]


def _read_sample(case_id: str, index: int, path: Path,
                 warnings: list[str]) -> tuple[SampleRecord | None, str]:
    summary = path / SUMMARY_FILE
    if not path.is_dir():
        return None, "not run"
    if not summary.is_file():
        return None, "no summary.json (interrupted or still running)"
    try:
        doc = json.loads(summary.read_text())
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        warnings.append(f"{summary} is corrupt ({exc}); sample {case_id}/s{index} is left out. "
                        "Re-run it with `idsbench run SPEC --out DIR --resume` after deleting the file.")
        return None, f"corrupt summary.json ({exc})"
    record = SampleRecord(case_id, index, path, doc)
    if record.status == "ok":  # a failed sample (oom...) is expected to leave a cut eve.json
        problem = eve_problem(path, doc)
        if problem:
            return None, problem
    return record, ""


# What sensors.eve.scan_eve writes (and the runner copies into summary.json `warnings`).
_EVE_WARNING = re.compile(r"^(?P<file>.+?\.json): (?:last line is incomplete|\d+ corrupt line)")


def eve_problem(path: Path, summary: dict[str, Any]) -> str:
    """Why the sample's eve.json makes it incomplete, naming the file, or "".

    From the summary (the runner's eve scan: structured `eve` or its warnings); eve.json itself
    is scanned only when the summary has no counters, so deleting eve.json later changes nothing."""
    eve = summary.get("eve") if isinstance(summary.get("eve"), dict) else {}
    found = [f"{eve.get('path') or path / EVE_FILE}: {int(eve.get('corrupt_lines') or 0)} corrupt line(s)"
             f"{', last line incomplete' if eve.get('truncated_tail') else ''}"] \
        if eve.get("corrupt_lines") or eve.get("truncated_tail") else []
    found += [str(w) for w in summary.get("warnings") or [] if _EVE_WARNING.match(str(w))]
    if not found and not (summary.get("sensor") or {}).get("counters") and (path / EVE_FILE).is_file():
        from idsbench.sensors.eve import scan_eve  # numpy-backed; only needed here

        found = scan_eve(path / EVE_FILE, record_types=()).warnings
    if not found:
        return ""
    return (f"eve.json is corrupt or truncated, so its counters may be short ({'; '.join(found)}); "
            "delete the sample's summary.json and re-run it with `idsbench run SPEC --out DIR --resume`")
