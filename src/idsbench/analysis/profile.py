"""A case's profile over its ok samples: top functions (mean self % over the samples that ran
perf record), per-thread CPU and the counters' ratios (medians)."""

from __future__ import annotations

from dataclasses import dataclass

from idsbench.analysis.stats import median
from idsbench.profile.perf import FunctionShare, rank_functions
from idsbench.store.reader import Campaign
from idsbench.store.schema import FunctionRecord, ProfileRecord


@dataclass(frozen=True)
class ThreadShare:
    name: str
    role: str
    cpu_pct: float            # median over samples, of one core


@dataclass(frozen=True)
class CaseProfile:
    case_id: str
    view: str
    samples: int              # ok samples with a profile
    recorded: int             # of which ran perf record
    functions: tuple[FunctionShare, ...]
    threads: tuple[ThreadShare, ...]
    worker_cpu_share: float | None   # workers' part of the sensor's CPU (median)
    ratios: dict[str, float | None]
    unsupported: tuple[str, ...]     # counters this host does not expose
    notes: tuple[str, ...]


def case_profile(campaign: Campaign, case_id: str, top: int = 15) -> CaseProfile | None:
    profiles = [s.summary.profile for s in campaign.samples_of(case_id)
                if s.status == "ok" and s.summary.profile is not None]
    if not profiles:
        return None
    recorded = [p for p in profiles if p.recorded]
    return CaseProfile(
        case_id=case_id, view=profiles[0].view, samples=len(profiles), recorded=len(recorded),
        functions=_mean_functions([p.functions for p in recorded], top),
        threads=_threads(profiles), worker_cpu_share=_worker_share(profiles),
        ratios={k: median([v for p in profiles if (v := p.ratios.get(k)) is not None])
                for k in sorted({k for p in profiles for k in p.ratios})},
        unsupported=tuple(sorted({k for p in profiles for k, v in p.counters.items() if v is None})),
        notes=tuple(dict.fromkeys(n for p in profiles for n in p.notes)))


def _mean_functions(samples: list[tuple[FunctionRecord, ...]], top: int) -> tuple[FunctionShare, ...]:
    return tuple(rank_functions(((f.symbol, f.dso, f.self_pct) for functions in samples for f in functions),
                                top, divisor=len(samples)))


def _threads(profiles: list[ProfileRecord]) -> tuple[ThreadShare, ...]:
    by_name: dict[str, list[float]] = {}
    roles: dict[str, str] = {}
    for p in profiles:
        for t in p.threads:
            by_name.setdefault(t.name, []).append(t.cpu_pct)
            roles[t.name] = t.role
    rows = [ThreadShare(n, roles[n], round(median(v) or 0.0, 2)) for n, v in by_name.items()]
    return tuple(sorted(rows, key=lambda r: (-r.cpu_pct, r.name)))


def _worker_share(profiles: list[ProfileRecord]) -> float | None:
    shares = []
    for p in profiles:
        total = sum(t.cpu_s for t in p.threads)
        if total > 0:
            shares.append(sum(t.cpu_s for t in p.threads if t.role == "worker") / total)
    return round(median(shares) or 0.0, 4) if shares else None
