"""Analyse a campaign for the result index: the one place where analysis meets the store's index."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from idsbench.analysis.cases import case_samples, case_table
from idsbench.store.index import DEFAULT_ROOT, IndexResult
from idsbench.store.index import index_campaign as _index_campaign
from idsbench.store.index import index_root as _index_root
from idsbench.store.index_rows import AnalysedCampaign
from idsbench.store.reader import Campaign


def analyse(campaign: Campaign) -> AnalysedCampaign:
    groups = case_samples(campaign)
    # not-ok samples keep their figures (recall included) in the samples table too
    figures = {(s.case_id, s.index): asdict(f) for cs in groups
               for s, f in (*zip(cs.used, cs.figures), *zip(cs.failed, cs.failed_figures))}
    return AnalysedCampaign(campaign, tuple(case_table(campaign, groups)), figures)


def index_campaign(campaign_dir: Path | str, root: Path | str | None = None, *,
                   force: bool = False) -> IndexResult:
    """(Re)index one campaign into ROOT/index.duckdb (ROOT: the campaign's parent by default)."""
    return _index_campaign(campaign_dir, analyse, root, force=force)


def index_root(root: Path | str = DEFAULT_ROOT, *, force: bool = False) -> list[IndexResult]:
    """Index every campaign under root incrementally; drop campaigns whose directory is gone."""
    return _index_root(analyse, root, force=force)
