"""Where things live in a campaign directory (docs/results.md, "The sample directory and campaign.json").

Every file name of the results layout is declared here and nowhere else.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from idsbench.store.summaryfile import read_summary

# --- the campaign directory ------------------------------------------------------------------------
CAMPAIGN_FILE = "campaign.json"
QUICK_SPEC_FILE = "spec.toml"   # a campaign made from `idsbench run --trace …` flags: the spec they made
PROBE_FILE = "probe.json"
PROBES_DIR = "probes"          # campaigns on hosts: probes/<host>.json
CASES_DIR = "cases"
REPORT_FILE = "report.html"
TABLES_DIR = "tables"          # the report's tables: tables/cases.json, tables/cases.csv
CASES_TABLE = "cases"          # … with the format as its suffix
FIGURES_DIR = "figures"        # the report's figures: figures/<name>.svg and .png
SERIES_DIR = "series"          # the result store's per-campaign parquet copies of the series
SEARCH_DIR = "search"          # <campaign>/search/<case_id>/search.json + trial directories
SEARCH_FILE = "search.json"
TRUTH_DIR = "truth"            # <campaign>/truth/<case_id>.json: the offline ground truth of a case
DUET_DIR = "duet"              # <campaign>/duet/<pair_id>/s<k>/duet.json + monitor.csv (both sides)
DUET_FILE = "duet.json"
PREFLIGHT_DIR = "preflight"     # the preflights' work (config tests, ground truth runs); removed after

# --- a sample directory (cases/<case_id>/s<k>/): idsbench's files ---------------------------------------
SUMMARY_FILE = "summary.json"
MONITOR_FILE = "monitor.csv"
WITNESS_FILE = "witness.csv"   # the host-speed witness's pieces (monitor/witness.py; store/witness.py reads it)
COUNTERS_FILE = "counters.csv"
RULE_PROFILE_FILE = "rule_profile.csv"
HOSTS_FILE = "hosts.json"      # a sample run on hosts: pair, clock offsets, artifact checksums
SENDER_MONITOR_FILE = "sender-monitor.csv"  # … and the sender host's own monitor
REPLAY_NATIVE_FILE = "replay-native.json"   # the native replayer's record (all its replayers)
REPLAY_OUTPUT = "replay-{index}.txt"        # each tcpreplay's output: replay_output(i)
# … the engines' files (written by the engine or rendered by its adapter)
CONSOLE_FILE = "stdout.txt"    # every engine's console (Snort prints its rule profile there)
EVE_FILE = "eve.json"
SURICATA_CONFIG_FILE = "suricata.yaml"
SURICATA_LOG_FILE = "suricata.log"
SURICATA_PID_FILE = "suricata.pid"
RULE_PERF_FILE = "rule_perf.log"            # Suricata's rule profile
SNORT_CONFIG_FILE = "snort.lua"
CAPTURE_STATS_FILE = "capture-stats.json"   # the capture-only engine's counters
# … the setups' files
VM_FILE = "vm.json"
CONTAINER_FILE = "container.json"
QEMU_LOG_FILE = "qemu.txt"     # qemu's own output (and its trace events)
CONSOLE_LOG_FILE = "console.log"  # a guest's kernel console
GUEST_CSV_FILE = "guest.csv"   # the guest init's monitor rows
DOCKERD_LOG_FILE = "dockerd.log"
# … the profiler's files (profile/recorder.py)
PERF_DATA = "perf.data"
PERF_STAT = "perf-stat.csv"
PERF_REPORT = "perf-report.txt"
PERF_HOST_DATA = "perf-host.data"      # a container runtime's processes (a VM's host side is perf.data)
PERF_HOST_REPORT = "perf-host-report.txt"
PERF_RECORD_LOG = "perf-record.log"
PERF_HOST_RECORD_LOG = "perf-record-host.log"
PERF_STAT_LOG = "perf-stat.log"

# --- a guest run's output directory (setups/vm/guestrun.py) and the nested VFIO lab's (lab/vfio.py) ---
GUESTRUN_FILE = "guestrun.json"
GUEST_OUTPUT_FILE = "output.txt"       # the command's output in the guest
LAB_SPEC_FILE = "spec.json"            # the spec as the outer VM reads it
LAB_INNER_FILE = "inner.json"          # what the outer VM saw (lab/vfio_inner.py)
LAB_QEMU_EVENTS_FILE = "qemu-events.json"  # the outer qemu's trace events, counted
LAB_CAMPAIGN_DIR = "campaign"          # the campaign run in the outer VM

DUET_PLAN_FILE = "plan.json"   # <campaign>/duet/plan.json: a precision plan (run/duet/precision.py) as printed
DUET_CALIBRATION_DIR = "duet-calibration"  # <campaign>/duet-calibration/: a campaign layout of its own for
                                           # the calibration samples (one per pair; read by no analysis)

# --- `idsbench gate --out DIR` (src/idsbench/gate/) -------------------------------------------------
GATE_FILE = "gate.json"        # `idsbench gate --out DIR`: the verdict for scripts (gate/model.py)
GATE_MD_FILE = "gate.md"       # … and for a pull request (gate/render.py)
BISECT_FILE = "bisect.json"    # `idsbench gate --bisect`: every step and the culprit
KEPT_ON_RESUME = ("ok", "invalid", "oom")


def replay_output(index: int) -> str:
    """The output file of replayer `index` (tcpreplay's own report)."""
    return REPLAY_OUTPUT.format(index=index)


def cases_table(fmt: str) -> str:
    """The report's case table in `fmt` ("json" or "csv")."""
    return f"{CASES_TABLE}.{fmt}"


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
