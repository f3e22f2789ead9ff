"""The one reader of a campaign directory: campaign.json, probe.json (and a hosts campaign's
probes/<host>.json) and every sample's summary.json (`store.summaryfile`), typed.

A sample is complete iff its summary.json exists and parses and, for an `ok` sample, the sensor's
event log was read whole (no corrupt or truncated lines: the counters may be short otherwise).
Planned samples that are missing, unfinished or corrupt are kept as IncompleteSample with a
reason: never dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import JsonValue, ValidationError

from idsbench import legacy
from idsbench.errors import InputError
from idsbench.probemodel import HostProbe
from idsbench.store.campaigndoc import CAMPAIGN_SCHEMA, CampaignDoc
from idsbench.store.layout import (
    CAMPAIGN_FILE,
    CASES_DIR,
    EVE_FILE,
    PROBE_FILE,
    PROBES_DIR,
    RULE_PROFILE_FILE,
    SEARCH_DIR,
    SEARCH_FILE,
    SUMMARY_FILE,
    TRUTH_DIR,
    CampaignDir,
)
from idsbench.store.rule_profile import RuleCost, read_profile
from idsbench.store.schema import CaseParams, GroundTruth, PlannedCase, SampleSummary, SearchResult
from idsbench.store.summaryfile import read_summary

__all__ = ["Campaign", "CaseInfo", "IncompleteSample", "SampleRecord", "eve_problem", "host_probe_file",
           "load_campaign", "migrate_campaign", "probe_or_none", "read_campaign_doc", "read_host_probe", "read_probe", "read_spec_doc",
           "read_summary"]

_SAMPLE_DIR = re.compile(r"^s(\d+)$")
M = TypeVar("M", SearchResult, GroundTruth)
# What the sensor's eve reader writes into a summary's warnings when eve.json was damaged.
_EVE_WARNING = re.compile(r"^(?P<file>.+?\.json): (?:last line is incomplete|\d+ corrupt line)")


@dataclass(frozen=True)
class SampleRecord:
    """One complete sample: its directory and its summary."""

    case_id: str
    index: int
    path: Path
    summary: SampleSummary

    @property
    def status(self) -> str:
        return self.summary.status

    @property
    def start_unix(self) -> float | None:
        return self.summary.replay.start_unix if self.summary.replay else None


@dataclass(frozen=True)
class IncompleteSample:
    case_id: str
    index: int
    path: Path
    reason: str
    summary: SampleSummary | None = None  # present when the summary parsed but its eve.json was cut


@dataclass(frozen=True)
class CaseInfo:
    case_id: str
    params: CaseParams
    planned_samples: int


@dataclass(frozen=True)
class Campaign:
    root: Path
    doc: CampaignDoc
    cases: tuple[CaseInfo, ...]
    samples: tuple[SampleRecord, ...]
    incomplete: tuple[IncompleteSample, ...] = ()
    warnings: tuple[str, ...] = field(default=())
    searches: dict[str, SearchResult] = field(default_factory=dict)   # by case id (idsbench search)
    truths: dict[str, GroundTruth] = field(default_factory=dict)      # by case id (offline ground truth)

    @property
    def name(self) -> str:
        return self.doc.name or self.root.name

    @property
    def stats_interval_s(self) -> float:
        return self.doc.stats_interval_s

    def samples_of(self, case_id: str) -> list[SampleRecord]:
        return [s for s in self.samples if s.case_id == case_id]

    def incomplete_of(self, case_id: str) -> list[IncompleteSample]:
        return [s for s in self.incomplete if s.case_id == case_id]

    def case(self, case_id: str) -> CaseInfo:
        for c in self.cases:
            if c.case_id == case_id:
                return c
        raise KeyError(case_id)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def read_campaign_doc(root: Path) -> CampaignDoc:
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
        doc = _read_json(path)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        return CampaignDoc.model_validate(migrate_campaign(doc))
    except (OSError, ValueError) as exc:  # ValidationError is a ValueError
        raise InputError(f"{path} is unreadable or not a valid campaign file ({_short(exc)}).",
                         fix="restore it from a copy, or re-run the campaign.") from exc


ENVIRONMENT_PARTS = ("hosts", "pairs")  # the object-valued keys of a schema-2 environment that are no engine


def migrate_campaign(doc: dict[str, object]) -> dict[str, object]:
    """A campaign.json of schema 1 or 2 as schema 3 reads it: each engine's build info (an object at the
    top of `environment`, keyed by the engine's name) moves into `environment.engines`."""
    schema = doc.get("schema")
    if isinstance(schema, int) and schema >= CAMPAIGN_SCHEMA:
        return legacy.campaign_doc(doc)  # older engine names (idsbench.legacy)
    env = doc.get("environment")
    if isinstance(env, dict):
        engines = {k: v for k, v in env.items() if isinstance(v, dict) and k not in ENVIRONMENT_PARTS}
        env = {**{k: v for k, v in env.items() if k not in engines}, "engines": engines}
    return legacy.campaign_doc({**doc, "schema": CAMPAIGN_SCHEMA, "environment": env or {}})


def read_probe(path: Path) -> HostProbe:
    """A host probe: a probe file (`idsbench probe --json`, a hosts campaign's probes/<host>.json)
    or a campaign directory (its probe.json); InputError naming the file and the fix."""
    path = Path(path)
    file = path / PROBE_FILE if path.is_dir() else path
    if path.is_dir() and not file.is_file():
        raise InputError(f"The campaign {path} holds no {PROBE_FILE}.",
                         fix="campaigns record their probe since idsbench stored one; for older ones "
                         "compare probe files made with `idsbench probe --json > FILE`.")
    try:
        doc = _read_json(file)
    except OSError as exc:
        raise InputError(f"Cannot read {file}: {exc.strerror}.", fix="pass an existing probe file "
                         "(`idsbench probe --json > FILE`) or campaign directory.") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{file} is not JSON ({exc}).", fix="pass a file written by `idsbench probe --json`.") from exc
    try:
        return HostProbe.model_validate(doc)
    except ValidationError as exc:
        raise InputError(f"{file} is not an idsbench probe: {exc.errors()[0]['msg']} at "
                         f"{'.'.join(map(str, exc.errors()[0]['loc']))}.",
                         fix="pass a file written by `idsbench probe --json`.") from exc


def probe_or_none(root: Path) -> HostProbe | None:
    """A campaign's host probe; None when it has none or it does not read (older campaigns)."""
    try:
        return read_probe(root)
    except InputError:
        return None


def host_probe_file(layout: CampaignDir, host: str) -> Path:
    """Where a hosts campaign keeps the probe of one host."""
    return layout.root / PROBES_DIR / f"{host}.json"


def read_host_probe(layout: CampaignDir, host: str) -> HostProbe | None:
    """The stored probe of one host of a hosts campaign; None when missing or unreadable."""
    try:
        return read_probe(host_probe_file(layout, host))
    except InputError:
        return None


def read_spec_doc(root: Path) -> dict[str, JsonValue] | None:
    """The resolved spec a campaign directory recorded (JSON); None when `root` is no campaign."""
    if not (root / CAMPAIGN_FILE).is_file():
        return None
    return read_campaign_doc(root).spec.model_dump(mode="json")


def load_campaign(root: Path | str) -> Campaign:
    root = Path(root)
    doc = read_campaign_doc(root)
    warnings: list[str] = [f"{root / CAMPAIGN_FILE}: {doc.spec_problem}"] if doc.spec_problem else []
    planned: dict[str, CaseInfo] = {c.case_id: CaseInfo(c.case_id, _params(c), c.samples) for c in doc.cases}
    samples: list[SampleRecord] = []
    incomplete: list[IncompleteSample] = []
    cases_dir = root / CASES_DIR
    extra = sorted(p.name for p in cases_dir.iterdir() if p.is_dir() and p.name not in planned) \
        if cases_dir.is_dir() else []
    for case_id in [*planned, *extra]:
        info = planned.get(case_id)
        found = _sample_dirs(cases_dir / case_id)
        indexes = sorted(set(found) | set(range(info.planned_samples if info else 0)))
        for index in indexes:
            path = cases_dir / case_id / f"s{index}"
            record, gap = _read_sample(case_id, index, path, warnings)
            if record is not None:
                samples.append(record)
            elif gap is not None:
                incomplete.append(gap)
        if info is None:
            params = next((s.summary.case for s in samples if s.case_id == case_id), None)
            if params is not None:
                planned[case_id] = CaseInfo(case_id, params, len(indexes))
                warnings.append(f"{cases_dir / case_id} is not in campaign.json's plan; included from its "
                                "summaries.")
    for s in incomplete:
        warnings.append(f"sample {s.case_id}/s{s.index} is incomplete: {s.reason}")
    searches = _read_all(root / SEARCH_DIR, f"*/{SEARCH_FILE}", SearchResult, warnings)
    truths = _read_all(root / TRUTH_DIR, "*.json", GroundTruth, warnings)
    return Campaign(root, doc, tuple(planned.values()), tuple(samples), tuple(incomplete), tuple(warnings),
                    {r.case_id: r for r in searches}, {t.case_id: t for t in truths})


def _read_all(directory: Path, pattern: str, model: type[M], warnings: list[str]) -> list[M]:
    out: list[M] = []
    for path in sorted(directory.glob(pattern)) if directory.is_dir() else []:
        try:
            out.append(model.model_validate(_read_json(path)))
        except (OSError, ValueError, ValidationError) as exc:
            warnings.append(f"{path} is unreadable ({_short(exc)}); it is left out.")
    return out


def _params(case: PlannedCase) -> CaseParams:
    return CaseParams.model_validate(case.model_dump(exclude={"case_id", "samples"}))


def _sample_dirs(case_dir: Path) -> list[int]:
    if not case_dir.is_dir():
        return []
    return [int(m.group(1)) for p in case_dir.iterdir() if p.is_dir() and (m := _SAMPLE_DIR.match(p.name))]


def _read_sample(case_id: str, index: int, path: Path,
                 warnings: list[str]) -> tuple[SampleRecord | None, IncompleteSample | None]:
    summary_path = path / SUMMARY_FILE
    if not path.is_dir():
        return None, IncompleteSample(case_id, index, path, "not run")
    if not summary_path.is_file():
        return None, IncompleteSample(case_id, index, path, "no summary.json (interrupted or still running)")
    try:
        summary = read_summary(summary_path)
    except (OSError, ValueError, ValidationError) as exc:
        warnings.append(f"{summary_path} is corrupt ({_short(exc)}); sample {case_id}/s{index} is left out. "
                        "Re-run it with `idsbench run SPEC --out DIR --resume` after deleting the file.")
        return None, IncompleteSample(case_id, index, path, f"corrupt summary.json ({_short(exc)})")
    record = SampleRecord(case_id, index, path, summary)
    if record.status == "ok":  # a failed sample (oom...) is expected to leave a cut event log
        problem = eve_problem(path, summary)
        if problem:
            return None, IncompleteSample(case_id, index, path, problem, summary)
    return record, None


def eve_problem(path: Path, summary: SampleSummary) -> str:
    """Why the sample's event log makes it incomplete, naming the file, or ""."""
    eve = summary.eve
    found = [f"{eve.path or path / EVE_FILE}: {eve.corrupt_lines} corrupt line(s)"
             f"{', last line incomplete' if eve.truncated_tail else ''}"] if eve and eve.damaged else []
    found += [w for w in summary.warnings if _EVE_WARNING.match(w)]
    if not found:
        return ""
    return (f"eve.json is corrupt or truncated, so its counters may be short ({'; '.join(found)}); "
            "delete the sample's summary.json and re-run it with `idsbench run SPEC --out DIR --resume`")


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def read_probe_doc(root: Path | str) -> dict[str, JsonValue] | None:
    """A campaign's probe.json as stored (None when absent or unreadable: older campaigns have none)."""
    from idsbench.store.layout import PROBE_FILE

    try:
        doc = json.loads((Path(root) / PROBE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def rule_profile(sample: SampleRecord) -> list[RuleCost] | None:
    """The sample's rule profile (rule_profile.csv), None when it has none; ValueError/OSError when damaged."""
    path = sample.path / RULE_PROFILE_FILE
    if not path.is_file():
        return None
    return read_profile(path)
