"""A campaign's warnings in one list, as the run printed them: what the reader found, the CI level the sample
count reaches, the host's noise and traps (probe.json), each sample's warnings and each case's — what the
report's Warnings section shows (issue 41: it said "None" after a run that warned)."""

from __future__ import annotations

from collections.abc import Sequence

from idsbench.analysis.effect import LEVEL, samples_for
from idsbench.analysis.stats import ci_coverage
from idsbench.errors import IdsbenchError
from idsbench.probe.noise import noise_warning
from idsbench.probe.warnings import warnings as trap_warnings
from idsbench.store.reader import Campaign, read_probe
from idsbench.store.schema import CaseResult

MAX_SAMPLE_WARNINGS = 40  # the samples' own warnings shown at most (the rest are in their summaries)


def ci_warning(samples: int, level: float = LEVEL) -> str | None:
    """The campaign's CIs will not reach `level`: say what they reach and what would."""
    need = samples_for(level)
    if samples >= need:
        return None
    return (f"samples = {samples}: the confidence intervals of the medians cover {ci_coverage(samples, level):.0%}, "
            f"not {level:.0%}; {level:.0%} needs samples = {need} or more (and no comparison gives a verdict below it).")


def host_warnings(campaign: Campaign) -> list[str]:
    """The host's noise above the campaign's precision and its traps, from the campaign's probe.json."""
    try:
        probe = read_probe(campaign.root)
    except IdsbenchError:
        return []
    noisy = noise_warning(probe.noise, campaign.doc.spec.search.precision)
    return [f"host: {w}" for w in ([noisy] if noisy else []) + trap_warnings(probe)]


def campaign_warnings(campaign: Campaign, rows: Sequence[CaseResult]) -> list[str]:
    out = list(campaign.warnings)
    if (ci := ci_warning(campaign.doc.spec.samples)) is not None:
        out.append(ci)
    out += host_warnings(campaign)
    sample_lines = [f"{s.case_id}/s{s.index}: {w}" for s in campaign.samples for w in s.summary.warnings]
    out += sample_lines[:MAX_SAMPLE_WARNINGS]
    if len(sample_lines) > MAX_SAMPLE_WARNINGS:
        out.append(f"… {len(sample_lines) - MAX_SAMPLE_WARNINGS} more sample warnings in the samples' summary.json")
    out += [w for r in rows for w in r.warnings]
    return list(dict.fromkeys(out))
