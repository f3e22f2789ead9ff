"""The one reader of a sample's summary.json (any schema version, migrated): used by the campaign
reader (`store.reader`, which re-exports it), by `CampaignDir.is_done` (--resume) and by the hosts
campaign (which pair a case ran on). Below `store.layout`, so the layout can use it."""

from __future__ import annotations

import json
from pathlib import Path

from idsbench.store.schema import SampleSummary, migrate_summary


def read_summary(path: Path) -> SampleSummary:
    """One summary.json; ValueError (a ValidationError too) or OSError when it cannot be read."""
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return SampleSummary.model_validate(migrate_summary(doc))
