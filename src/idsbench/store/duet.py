"""A duet sample's pair-level record (`duet/<pair_id>/s<k>/duet.json`) and its reader.

Each side's sample is an ordinary sample of its own case (`cases/<case_id>/s<k>/summary.json`, with
that side's sensor files and a monitor.csv of its own columns); this record holds what only the pair
knows: which slot each side took (the swap), where they ran, and each side's CPU time over the span
both were measured on (the raw inputs of the paired ratio; analysis/duet.py computes it).
Written last, after both sides' summaries: a duet sample is complete iff it exists.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from pydantic import Field, JsonValue

from idsbench.store.atomic import write_csv, write_json
from idsbench.store.layout import DUET_DIR, DUET_FILE, DUET_PLAN_FILE, MONITOR_FILE
from idsbench.store.schema import Record
from idsbench.store.series_file import complete_text, series_rows


class DuetSideRecord(Record):
    side: str                                  # "a" or "b"
    case_id: str
    slot: int                                  # 0: the mirror's first copy, started first
    cpus: tuple[int, ...] | None = None        # the CPUs it was pinned to (None: all)
    quota: float | None = None                 # its CPU limit in cores (None: none)
    status: str = "ok"                         # the side's sample verdict
    cpu_s: float | None = None                 # its cgroup's CPU time over the common span
    isolation_cpu_s: float | None = None       # its setup's host processes outside the cgroup (a container
                                               # runtime's), over the span; None: the setup has none
    processed_pkts: int = 0                    # packets it decoded (its final counters)
    sent_pkts: int = 0                         # what the replay sent (the same for both sides)
    lost_pkts: int = 0                         # every loss of its waterfall, unaccounted included
    exact: bool = False                        # ok, no loss, decoded = sent
    mem_peak_bytes: int | None = None          # its cgroup's peak memory over the sample (a VM: the whole qemu)
    labels: tuple[str, ...] = ()               # its setup's labels ("emulated": a VM under TCG)

    @property
    def cost_s(self) -> float | None:
        """What its isolation cost the host over the span: its cgroup and its isolation processes."""
        return None if self.cpu_s is None else self.cpu_s + (self.isolation_cpu_s or 0.0)


class DuetSampleRecord(Record):
    pair_id: str
    sample: int
    axis: str | None = None                    # the side axis that differs (None: A/A)
    ref: str | None = None                     # side a's value of that axis (the reference)
    cell: dict[str, JsonValue] = Field(default_factory=dict)  # the matrix's other axes' values (plan.DuetPair)
    replay_s: float | None = None              # the replay's length asked (a precision plan may lengthen it)
    swapped: bool = False                      # side a took slot 1
    placement: str = "shared"                  # run/duet/place.py: split | shared
    mirror: str = "mirred"                     # wire/mirror.py method
    sender_cpus: tuple[int, ...] = ()
    span_start_unix: float | None = None       # the common span: replay start …
    span_end_unix: float | None = None         # … to both sides drained
    softirq_s: tuple[float, ...] | None = None  # each CPU's softirq time over the span (run/duet/hostcost.py)
    sides: tuple[DuetSideRecord, ...] = Field(default_factory=tuple)  # a, then b
    status: str = "ok"                         # ok when both sides are ok, else the first side's failure
    reason: str | None = None

    def side(self, name: str) -> DuetSideRecord | None:
        return next((s for s in self.sides if s.side == name), None)


def write_duet_record(pair_dir: Path, record: DuetSampleRecord) -> Path:
    """duet.json, written last (after both sides' summaries): the duet sample is complete."""
    path = pair_dir / DUET_FILE
    write_json(path, record.model_dump(mode="json"))
    return path


class PairPlanRecord(Record):
    pair_id: str
    replay_s: float                            # each sample's replay length
    expected_half_width: float                 # the CI half-width expected (relative)
    cpu_per_s: tuple[float, float]             # calibration: each side's CPU-s per replay second
    overhead_s: float                          # calibration: a sample's wall time beyond its replay


class DuetPlanRecord(Record):
    """`duet/plan.json`: a precision plan as the campaign printed it at its start (run/duet/precision.py)."""

    precision: float
    budget_s: float
    samples: int                               # planned samples per pair (more are added while short)
    pairs: tuple[PairPlanRecord, ...]
    total_s: float                             # the expected wall time of the planned samples
    feasible: bool                             # the precision was expected within the budget
    best_s: float | None = None                # the time the precision needs
    lines: tuple[str, ...] = ()                # as printed
    planned_unix: float = 0.0                  # when the plan was made (after the calibration)
    calibration_s: float = 0.0                 # the calibration's wall time

    def pair(self, pair_id: str) -> PairPlanRecord | None:
        return next((p for p in self.pairs if p.pair_id == pair_id), None)


def write_plan(campaign_root: Path, record: DuetPlanRecord) -> Path:
    """duet/plan.json: the precision plan as the campaign printed it."""
    path = campaign_root / DUET_DIR / DUET_PLAN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, record.model_dump(mode="json"))
    return path


def read_plan(campaign_root: Path) -> DuetPlanRecord | None:
    """The campaign's precision plan (None: it asked no precision, or the file is unreadable)."""
    try:
        return DuetPlanRecord.model_validate_json((campaign_root / DUET_DIR / DUET_PLAN_FILE).read_text())
    except (OSError, ValueError):
        return None


def duet_samples(campaign_root: Path) -> dict[str, list[DuetSampleRecord]]:
    """Every pair's sample records, by pair id, in sample order (unreadable ones left out)."""
    out: dict[str, list[DuetSampleRecord]] = {}
    base = campaign_root / DUET_DIR
    if not base.is_dir():
        return out
    for pair_dir in sorted(p for p in base.iterdir() if p.is_dir()):
        records = []
        for path in pair_dir.glob(f"s*/{DUET_FILE}"):
            try:
                records.append(DuetSampleRecord.model_validate_json(path.read_text()))
            except (OSError, ValueError):
                continue
        out[pair_dir.name] = sorted(records, key=lambda r: r.sample)
    return out


def read_monitor_rows(path: Path) -> list[dict[str, float | None]]:
    """A monitor.csv as rows of floats (empty cells: None); [] when missing."""
    try:
        rows = series_rows(path).rows
    except FileNotFoundError:
        return []
    return [{k: (float(v) if v not in ("", None) else None) for k, v in row.items()} for row in rows]


def pair_monitor(campaign_root: Path, pair_id: str, index: int) -> list[dict[str, float | None]]:
    """The pair-level monitor rows of one duet sample (both sides' columns: `a_sensor_cpu_pct` …)."""
    return read_monitor_rows(campaign_root / DUET_DIR / pair_id / f"s{index}" / MONITOR_FILE)


def project_monitor(pair_csv: Path, side: str, out_csv: Path) -> None:
    """Side `side`'s view of the pair's monitor.csv, in the single-sample header: its own columns
    (`a_sensor_cpu_pct` → `sensor_cpu_pct`, `a_isolation_cpu_pct` → `isolation_cpu_pct`), the shared
    ones (host, sender) as they are, the other side's left out. The same raw readings, renamed."""
    other = "b_" if side == "a" else "a_"
    own = f"{side}_"
    reader = csv.reader(io.StringIO(complete_text(pair_csv), newline=""))
    header = next(reader, None)
    if header is None:
        return
    keep = [i for i, name in enumerate(header) if not name.startswith(other)]
    write_csv(out_csv, [header[i].removeprefix(own) for i in keep],
              ([row[i] if i < len(row) else "" for i in keep] for row in reader))
