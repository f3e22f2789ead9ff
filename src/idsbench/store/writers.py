"""The writers of a campaign's files: every write into a campaign directory (or a guest run's or the
nested lab's output directory) goes through `store/`, under a name from `store/layout.py`.

Each file has one writer. Whole files are written atomically (`store/atomic.py`: a temporary file
beside the target, fsync, rename), so a reader sees the old file or the new one, never a part; the
series written while a sample runs are appended a whole row at a time (`store/appender.py`).
Writers elsewhere in store/: counters.csv `series_file.write_counters`, rule_profile.csv
`rule_profile.write_profile`, duet.json `duet.write_duet_record`, a duet side's monitor.csv
`duet.project_monitor`, the result store's series `index_series`.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from idsbench.probemodel import HostProbe
from idsbench.store import atomic
from idsbench.store.appender import RowAppender
from idsbench.store.campaigndoc import CampaignDoc
from idsbench.store.layout import (
    BISECT_FILE,
    CAMPAIGN_FILE,
    CONTAINER_FILE,
    FIGURES_DIR,
    GATE_FILE,
    GATE_MD_FILE,
    GUESTRUN_FILE,
    HOSTS_FILE,
    LAB_INNER_FILE,
    LAB_QEMU_EVENTS_FILE,
    LAB_SPEC_FILE,
    PERF_HOST_REPORT,
    PERF_REPORT,
    PROBE_FILE,
    QUICK_SPEC_FILE,
    REPORT_FILE,
    SEARCH_FILE,
    SUMMARY_FILE,
    TABLES_DIR,
    TRUTH_DIR,
    VM_FILE,
    CampaignDir,
    cases_table,
)
from idsbench.store.reader import host_probe_file
from idsbench.store.record import Record
from idsbench.store.schema import GroundTruth, SampleSummary, SearchResult

__all__ = ["HostClockRecord", "HostsRecord", "RowAppender", "write_campaign_doc", "write_container_record",
           "write_figure", "write_guestrun_record", "write_host_probe", "write_hosts_record",
           "write_lab_inner", "write_lab_qemu_events", "write_lab_spec", "write_perf_report", "write_probe",
           "write_report_html", "write_report_table", "write_search_result", "write_sensor_config",
           "write_summary", "write_truth", "write_vm_record"]


# --- the campaign ------------------------------------------------------------------------------------
def write_campaign_doc(root: Path, doc: CampaignDoc) -> Path:
    path = root / CAMPAIGN_FILE
    atomic.write_json(path, doc.to_json())
    return path


def write_probe(root: Path, probe: HostProbe) -> Path:
    """The campaign's host probe (probe.json)."""
    path = root / PROBE_FILE
    atomic.write_json(path, probe.model_dump(mode="json"))
    return path


def write_host_probe(layout: CampaignDir, host: str, probe: HostProbe) -> Path:
    """A hosts campaign's probe of one host (probes/<host>.json)."""
    path = host_probe_file(layout, host)
    atomic.write_json(path, probe.model_dump(mode="json"), indent=1)
    return path


def write_truth(root: Path, truth: GroundTruth) -> Path:
    """A case's offline ground truth (truth/<case_id>.json)."""
    path = root / TRUTH_DIR / f"{truth.case_id}.json"
    atomic.write_json(path, truth.model_dump(mode="json"))
    return path


def write_search_result(search_dir: Path, result: SearchResult) -> Path:
    """A search's result (search/<case_id>/search.json), rewritten after every trial."""
    path = search_dir / SEARCH_FILE
    atomic.write_json(path, result.model_dump(mode="json"))
    return path


# --- a sample ----------------------------------------------------------------------------------------
def write_summary(sample_dir: Path, summary: SampleSummary) -> Path:
    """summary.json, written LAST: a sample is complete iff it exists."""
    path = sample_dir / SUMMARY_FILE
    atomic.write_json(path, summary.to_json())
    return path


class HostClockRecord(Record):
    name: str
    address: str
    clock_offset_s: float       # the host's clock minus the controller's
    clock_uncertainty_s: float


class HostsRecord(Record):
    """hosts.json: a sample run on hosts — the pair, each host's clock offset, the fetched files' sha256."""

    pair: str
    clock: str = "times of this sample are the sensor host's clock; offsets are host minus controller"
    hosts: dict[str, HostClockRecord]  # by role: sensor, sender
    artifacts_sha256: dict[str, str]
    controller_started_unix: float
    controller_s: float


def write_hosts_record(sample_dir: Path, record: HostsRecord) -> Path:
    path = sample_dir / HOSTS_FILE
    atomic.write_json(path, record.model_dump(mode="json"), indent=1)
    return path


def write_vm_record(sample_dir: Path, doc: Mapping[str, object]) -> Path:
    """vm.json: the VM's boot facts and the guest's last status, for whoever reads the sample later."""
    path = sample_dir / VM_FILE
    atomic.write_json(path, dict(doc), indent=1)
    return path


def write_container_record(sample_dir: Path, doc: Mapping[str, object]) -> Path:
    """container.json: what ran where, for whoever reads the sample later."""
    path = sample_dir / CONTAINER_FILE
    atomic.write_json(path, dict(doc), indent=1)
    return path


def write_sensor_config(path: Path, text: str) -> None:
    """An engine's configuration as its adapter rendered it (suricata.yaml, snort.lua): part of the sample's
    record (the report links it; the rule profile reads which rule files it loaded). The adapter names
    the file (a layout constant) and the directory: the sample's, or a work directory for a config test."""
    atomic.write_text(path, text)


def write_perf_report(out_dir: Path, text: str, *, host: bool = False) -> Path:
    """`perf report`'s text of the sensor (perf-report.txt) or of a setup's host side (perf-host-report.txt)."""
    path = out_dir / (PERF_HOST_REPORT if host else PERF_REPORT)
    atomic.write_text(path, text)
    return path


# --- the report ---------------------------------------------------------------------------------------
def write_report_html(root: Path, html: str) -> Path:
    path = root / REPORT_FILE
    atomic.write_text(path, html)
    return path


def write_report_table(root: Path, fmt: str, text: str) -> Path:
    """The report's case table (tables/cases.json or tables/cases.csv)."""
    path = root / TABLES_DIR / cases_table(fmt)
    atomic.write_text(path, text)
    return path


def figures_dir(root: Path) -> Path:
    return root / FIGURES_DIR


def write_figure(out_dir: Path, name: str, svg: bytes, png: bytes) -> tuple[Path, Path]:
    """One figure of the report as `<name>.svg` and `<name>.png` in `out_dir` (figures/ of the campaign)."""
    svg_path, png_path = out_dir / f"{name}.svg", out_dir / f"{name}.png"
    atomic.write_bytes(svg_path, svg)
    atomic.write_bytes(png_path, png)
    return svg_path, png_path


# --- a guest run's and the nested VFIO lab's output directory -----------------------------------------
def mirror_campaign(src: Path, dst: Path) -> None:
    """A copy of the campaign directory `src` (in the outer VM's tmpfs) in `dst` (the lab's OUT/campaign),
    updated in place, each file replaced atomically; sockets and tap nodes left out."""
    shutil.copytree(src, dst, dirs_exist_ok=True, ignore_dangling_symlinks=True, copy_function=atomic.copy_file,
                    ignore=shutil.ignore_patterns("*.sock", "tap"))


def write_guestrun_record(out_dir: Path, doc: Mapping[str, object]) -> Path:
    path = out_dir / GUESTRUN_FILE
    atomic.write_json(path, dict(doc), indent=1)
    return path


def write_lab_spec(out_dir: Path, doc: Mapping[str, object]) -> Path:
    """The spec as the outer VM reads it (spec.json)."""
    path = out_dir / LAB_SPEC_FILE
    atomic.write_json(path, dict(doc), indent=1)
    return path


def write_lab_inner(out_dir: Path, report: BaseModel) -> Path:
    """What the outer VM saw (inner.json: lab/vfio_inner.py's InnerReport)."""
    path = out_dir / LAB_INNER_FILE
    atomic.write_json(path, report.model_dump(mode="json"), indent=1)
    return path


def write_lab_qemu_events(out_dir: Path, counts: Mapping[str, int]) -> Path:
    """The outer qemu's data-path trace events, counted (qemu-events.json)."""
    path = out_dir / LAB_QEMU_EVENTS_FILE
    atomic.write_json(path, dict(sorted(counts.items())), indent=1)
    return path


def write_quick_spec(root: Path, toml: str) -> Path:
    """spec.toml: the spec `idsbench run --trace …` made from its flags (kept as first written)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / QUICK_SPEC_FILE
    atomic.write_text(path, toml)
    return path


def write_gate(out: Path, doc: Mapping[str, object], markdown: str) -> tuple[Path, Path]:
    """gate.json (for scripts) and gate.md (for a pull request) of `idsbench gate --out DIR`."""
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_json(out / GATE_FILE, doc)
    atomic.write_text(out / GATE_MD_FILE, markdown)
    return out / GATE_FILE, out / GATE_MD_FILE


def write_bisect(out: Path, doc: Mapping[str, object]) -> Path:
    """bisect.json of `idsbench gate --bisect`: every step and the culprit."""
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_json(out / BISECT_FILE, doc)
    return out / BISECT_FILE
