"""`idsbench search SPEC`: preflight as for a run, then one search per case; results as a campaign.

Each case's search lands in `<campaign>/search/<case_id>/` (search.json, the trials' outputs, the
warm sensor's logs) and its NDR verification as the case's sample s0, so `results`, `report`,
`index` and `compare` read a searched campaign like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from idsbench import settings
from idsbench.run.campaign import signals_as_interrupt
from idsbench.run.preflight import prepare_campaign
from idsbench.run.progress import Progress
from idsbench.run.session import SampleDeps
from idsbench.search.run import CaseSearch
from idsbench.spec import Spec
from idsbench.store.layout import SEARCH_DIR, SEARCH_FILE
from idsbench.store.schema import SearchResult


@dataclass
class SearchCampaignResult:
    out_dir: Path
    searched: int = 0
    skipped: int = 0
    results: list[SearchResult] = field(default_factory=list)


def search_campaign(spec: Spec, out_dir: Path, *, resume: bool = False, progress: Progress | None = None,
                    state_dir: Path | None = None, cache_dir: Path | None = None, name_prefix: str | None = None,
                    deps: SampleDeps | None = None, require_quiet: bool = False) -> SearchCampaignResult:
    """Search every case of `spec` (one verification sample each) into `out_dir`."""
    spec = spec.model_copy(update={"samples": 1})
    with signals_as_interrupt():
        ctx, cases = prepare_campaign(spec, out_dir, resume=resume, state_dir=state_dir or settings.state_dir(),
                                      cache_dir=cache_dir or settings.cache_dir(), require_quiet=require_quiet,
                                      search=True)
        ctx.name_prefix = name_prefix or settings.name_prefix()
        progress = progress or Progress(len(cases))
        out = SearchCampaignResult(out_dir)
        with progress:
            for warning in ctx.warnings:
                progress.note(f"warning: {warning}")
            for case in cases:
                done = out_dir / SEARCH_DIR / case.case_id / SEARCH_FILE
                if resume and done.is_file() and ctx.layout.is_done(case.case_id, 0):
                    progress.skip(case.case_id)
                    out.skipped += 1
                    continue
                progress.sample_started(case.case_id)
                # without a terminal (a nightly job's log) each trial is a line; a terminal has the live display
                result = CaseSearch(ctx, case, deps, phase=progress.phase,
                                    trial_lines=None if progress.live else progress.note).run()
                out.results.append(result)
                out.searched += 1
                progress.sample_done(case.case_id, describe(result), list(result.notes))
        return out


def describe(result: SearchResult) -> str:
    """One line: each tolerance's value with its bracket, and the trials it took."""
    parts = []
    for r in result.results:
        name = "NDR" if r.tolerance == 0 else f"PDR {r.tolerance:g}"
        if result.axis == "cpus":
            name = "min cpus" if r.tolerance == 0 else f"min cpus ({r.tolerance:g})"
        value = "none" if r.value is None else f"{r.value:,.4g} {result.unit}"
        if r.lower_bound:
            value = f">= {value}"
        if r.bracket:
            value += f" [{r.bracket[0]:,.4g}, {r.bracket[1]:,.4g}]"
        if r.sender_limited:
            value += " (sender-limited: the sensor was not the limit)"
        elif r.lower_bound:
            value += " (the axis' top)"
        if r.verified is False:
            value += " (verification failed)"
        parts.append(f"{name} {value}")
    return f"{'; '.join(parts)} in {len(result.trials)} {result.mode} trials + {len(result.verification)} verification"
