"""Where things live in a campaign directory (see docs/architecture.md, "Sample directory")."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

CAMPAIGN_FILE = "campaign.json"
SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class CampaignDir:
    root: Path

    @property
    def campaign_file(self) -> Path:
        return self.root / CAMPAIGN_FILE

    def sample_dir(self, case_id: str, index: int) -> Path:
        return self.root / "cases" / case_id / f"s{index}"

    def is_complete(self, case_id: str, index: int) -> bool:
        return (self.sample_dir(case_id, index) / SUMMARY_FILE).is_file()

    def fresh_sample_dir(self, case_id: str, index: int) -> Path:
        """An empty directory for a sample; leftovers of an interrupted attempt are removed."""
        path = self.sample_dir(case_id, index)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path
