"""Where things live in a campaign directory (docs/results.md, "The sample directory and campaign.json").

Every file name of the results layout is declared here and nowhere else.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from idsbench.store.summaryfile import read_summary

CAMPAIGN_FILE = "campaign.json"
PROBE_FILE = "probe.json"
PROBES_DIR = "probes"          # campaigns on hosts: probes/<host>.json
HOSTS_FILE = "hosts.json"      # a sample run on hosts: pair, clock offsets, artifact checksums
CASES_DIR = "cases"
SUMMARY_FILE = "summary.json"
MONITOR_FILE = "monitor.csv"
COUNTERS_FILE = "counters.csv"
EVE_FILE = "eve.json"
SERIES_DIR = "series"
REPORT_FILE = "report.html"
SEARCH_DIR = "search"          # <campaign>/search/<case_id>/search.json + trial directories
SEARCH_FILE = "search.json"
TRUTH_DIR = "truth"            # <campaign>/truth/<case_id>.json: the offline ground truth of a case
DUET_DIR = "duet"              # <campaign>/duet/<pair_id>/s<k>/duet.json + monitor.csv (both sides)
DUET_FILE = "duet.json"
GATE_FILE = "gate.json"        # `idsbench gate --out DIR`: the verdict for scripts (gate/model.py)
GATE_MD_FILE = "gate.md"       # … and for a pull request (gate/render.py)
BISECT_FILE = "bisect.json"    # `idsbench gate --bisect`: every step and the culprit
KEPT_ON_RESUME = ("ok", "invalid", "oom")


@dataclass(frozen=True)
class CampaignDir:
    root: Path

    @property
    def campaign_file(self) -> Path:
        return self.root / CAMPAIGN_FILE

    @property
    def cases_dir(self) -> Path:
        return self.root / CASES_DIR

    def case_dir(self, case_id: str) -> Path:
        return self.cases_dir / case_id

    def sample_dir(self, case_id: str, index: int) -> Path:
        return self.case_dir(case_id) / f"s{index}"

    def duet_sample_dir(self, pair_id: str, index: int) -> Path:
        """A duet sample's pair-level directory (store/duet.py)."""
        return self.root / DUET_DIR / pair_id / f"s{index}"

    def is_complete(self, case_id: str, index: int) -> bool:
        return (self.sample_dir(case_id, index) / SUMMARY_FILE).is_file()

    def is_done(self, case_id: str, index: int) -> bool:
        """Complete with a measured verdict (ok, invalid, oom): what --resume keeps. Samples that
        failed (a process died), are incomplete or missing run again."""
        try:
            return read_summary(self.sample_dir(case_id, index) / SUMMARY_FILE).status in KEPT_ON_RESUME
        except (OSError, ValueError):  # missing, or a summary the reader cannot read: run it again
            return False

    def fresh_sample_dir(self, case_id: str, index: int) -> Path:
        """An empty directory for a sample; leftovers of an interrupted attempt are removed."""
        path = self.sample_dir(case_id, index)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path
