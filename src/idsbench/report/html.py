"""write_report(DIR): report.html (self-contained), figures/*.svg|png, tables/cases.csv|json."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jinja2

from idsbench import __version__
from idsbench.analysis import OVERHEAD_METRICS, Campaign, case_table, load_campaign, overhead
from idsbench.analysis.stats import ci_coverage
from idsbench.plan import trace_label
from idsbench.report import tables
from idsbench.report.figures import build_figures
from idsbench.report.fmt import COLUMNS, MIB, load_label, median_and_ci, number
from idsbench.report.style import setup_colors, variant

RAW_FILES = ("summary.json", "counters.csv", "monitor.csv", "eve.json", "suricata.log", "suricata.yaml")
OVERHEAD_COLUMNS = (("extra host CPU (pp)", "host_cpu_pct", 1.0, 1, False),
                    ("extra sensor CPU (pp)", "sensor_cpu_pct", 1.0, 1, False),
                    ("extra memory (MiB)", "sensor_rss_peak_bytes", MIB, 1, False),
                    ("extra drops (pkts)", "dropped_pkts", 1.0, 0, False),
                    ("decode rate change (%)", "decode_ratio", 1.0, 2, True))


def write_report(campaign_dir: Path | str, *, baseline: str = "baremetal",
                 cv_threshold: float = 0.10) -> Path:
    """Analyse the campaign in `campaign_dir` and write DIR/report.html; returns its path."""
    root = Path(campaign_dir)
    campaign = load_campaign(root)
    rows = case_table(campaign, cv_threshold=cv_threshold)
    (root / "tables").mkdir(exist_ok=True)
    (root / "tables" / "cases.json").write_text(tables.to_json(rows))
    (root / "tables" / "cases.csv").write_text(tables.to_csv(rows))
    colors = setup_colors([str(r["setup"]) for r in rows])
    over = overhead(campaign, baseline)
    figs = build_figures(campaign, rows, colors, root / "figures", baseline=baseline, overhead_rows=over)
    env = jinja2.Environment(loader=jinja2.PackageLoader("idsbench.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    html = env.get_template("report.html.j2").render(
        c=_meta(campaign), generated=time.strftime("%Y-%m-%d %H:%M:%S"), version=__version__,
        coverage_note=_coverage_note(rows), colors=colors,
        column_titles=[t for t, *_ in COLUMNS], rows=[_row_view(r) for r in rows],
        warnings=[*campaign.warnings, *(w for r in rows for w in r["warnings"])],
        cv_threshold=f"{cv_threshold:.0%}",
        figures=[{"name": f.name, "title": f.title, "caption": f.caption, "uri": f.data_uri()}
                 for f in figs.files],
        notes=figs.notes, baseline=baseline,
        overhead=[_overhead_view(o) for o in over], overhead_titles=[t for t, *_ in OVERHEAD_COLUMNS],
        overhead_note=(f"No overhead table: the campaign has no {baseline} cases, or no other setup with "
                       f"matching trace, rate, load and limits."),
        environment=_environment(campaign), spec_json=json.dumps(
            {k: campaign.doc.get(k) for k in ("spec", "inputs", "cases")}, indent=2, default=str),
        raw=_raw(campaign),
    )
    out = root / "report.html"
    out.write_text(html)
    return out


def _meta(campaign: Campaign) -> dict[str, Any]:
    created = campaign.doc.get("created_unix")
    return {"name": campaign.name, "description": campaign.spec.get("description") or "",
            "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created)) if created else "unknown",
            "root": str(campaign.root.resolve()), "samples": campaign.spec.get("samples", "?"),
            "interval": f"{campaign.stats_interval_s:g}"}


def _coverage_note(rows: list[dict[str, Any]]) -> str:
    counts = sorted({int(r["samples"]) for r in rows if r["samples"]})
    return ", ".join(f"{n} samples: {ci_coverage(n):.1%}" for n in counts) or "no samples"


def _row_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"setup": row["setup"], "variant": variant(row), "trace": trace_label(str(row["trace"])),
            "trace_ref": row["trace"], "rate": row["rate"],
            "load": load_label(row), "samples": row["samples"], "status": row["status"],
            "labels": ", ".join(row["labels"]),
            "cells": [median_and_ci(row, key, scale, digits) for _, key, scale, digits in COLUMNS]}


def _overhead_view(o: dict[str, Any]) -> dict[str, Any]:
    cells = []
    for _, key, scale, digits, pct_only in OVERHEAD_COLUMNS:
        m = o[key]
        if pct_only:
            cells.append(_ci_text(m["pct"], m["pct_ci"], 1.0, digits))
        else:
            value, ci = _ci_text(m["diff"], m["diff_ci"], scale, digits)
            pct = f" ({number(m['pct'], 1)}%)" if m["pct"] is not None else ""
            cells.append((value + pct, ci))
    return {"setup": o["setup"], "trace": trace_label(str(o["trace"])), "rate": o["rate"], "load": f"{o['replayers']}X",
            "cells": cells}


def _ci_text(value: float | None, ci: list[float] | None, scale: float, digits: int) -> tuple[str, str]:
    return median_and_ci({"v": value, "v_ci": ci}, "v", scale, digits)


def _environment(campaign: Campaign) -> list[tuple[str, str]]:
    out = []
    for key, value in campaign.environment.items():
        if isinstance(value, dict):
            value = value.get("version") or json.dumps(value, default=str)[:300]
        if key == "mem_total_bytes" and isinstance(value, (int, float)):
            value = f"{value / 2**30:.1f} GiB"
        out.append((key, str(value)))
    return out


def _raw(campaign: Campaign) -> list[dict[str, Any]]:
    out = []
    for info in campaign.cases:
        samples = []
        for s in campaign.samples_of(info.case_id):
            rel = s.path.relative_to(campaign.root).as_posix()
            files = [(n, f"{rel}/{n}") for n in RAW_FILES if (s.path / n).is_file()]
            samples.append({"index": s.index, "href": f"{rel}/", "status": s.status, "files": files})
        out.append({"case_id": info.case_id, "href": f"cases/{info.case_id}/", "samples": samples,
                    "incomplete": [{"index": i.index, "reason": i.reason}
                                   for i in campaign.incomplete_of(info.case_id)]})
    return out
