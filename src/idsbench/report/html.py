"""write_report(DIR): report.html (self-contained), figures/*.svg|png, tables/cases.csv|json."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jinja2

from idsbench import __version__
from idsbench.analysis import case_table, overhead
from idsbench.analysis.compare import MetricDelta
from idsbench.analysis.duet import with_duet
from idsbench.analysis.overhead import Overhead
from idsbench.analysis.profile import case_profile
from idsbench.analysis.rules import RuleTime
from idsbench.analysis.search import HOST_MOVED, repeat_fields, sensor_cost
from idsbench.errors import InputError
from idsbench.metrics import metric
from idsbench.plan import trace_label
from idsbench.probe.diff import load as load_probe
from idsbench.probe.render import facts
from idsbench.probe.warnings import warnings as probe_warnings
from idsbench.profile.perf import RECORD_EVENT
from idsbench.report import duet_out, tables
from idsbench.report.ab import ab_section
from idsbench.report.compare_out import verdict_text
from idsbench.report.duet import duet_section
from idsbench.report.engines import engine_section
from idsbench.report.figures import build_figures
from idsbench.report.fmt import COLUMNS, MIB, count_text, load_label, median_and_ci, number, value_and_ci
from idsbench.report.style import setup_colors, variant
from idsbench.store.layout import CAMPAIGN_FILE, COUNTERS_FILE, EVE_FILE, MONITOR_FILE, PROBE_FILE, REPORT_FILE, SUMMARY_FILE
from idsbench.store.reader import Campaign, load_campaign
from idsbench.store.schema import CaseResult, SearchResult

RAW_FILES = (SUMMARY_FILE, COUNTERS_FILE, MONITOR_FILE, EVE_FILE, "suricata.log", "suricata.yaml")
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
    rows, pairs = with_duet(campaign, rows)  # a duet campaign: its pair rows join the tables
    (root / "tables" / "cases.json").write_text(duet_out.results_text("json", rows, pairs) if pairs else tables.to_json(rows))
    (root / "tables" / "cases.csv").write_text(duet_out.results_text("csv", rows, pairs) if pairs else tables.to_csv(rows))
    colors = setup_colors([r.params.setup for r in rows])
    over = overhead(campaign, baseline)
    figs = build_figures(campaign, rows, colors, root / "figures", baseline=baseline, overhead_rows=over)
    profiles = [v for r in rows if (v := _profile_view(campaign, r)) is not None]
    env = jinja2.Environment(loader=jinja2.PackageLoader("idsbench.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    html = env.get_template("report.html.j2").render(
        c=_meta(campaign), generated=time.strftime("%Y-%m-%d %H:%M:%S"), version=__version__,
        coverage_note=_coverage_note(rows), missing=missing_note(rows), colors=colors,
        column_titles=[t for t, *_ in COLUMNS], rows=[_row_view(r) for r in rows],
        warnings=[*campaign.warnings, *(w for r in rows for w in r.warnings)],
        cv_threshold=f"{cv_threshold:.0%}",
        figures=[{"name": f.name, "title": f.title, "caption": f.caption, "uri": f.data_uri()}
                 for f in figs.files],
        notes=figs.notes, baseline=baseline, engines=engine_section(campaign, rows),
        overhead=[_overhead_view(o) for o in over], overhead_titles=[t for t, *_ in OVERHEAD_COLUMNS],
        overhead_note=(f"No overhead table: the campaign has no {baseline} cases, or no other setup with "
                       f"matching trace, rate, load and limits."),
        environment=_environment(campaign), host=_host(campaign.root), spec_json=json.dumps(
            campaign.doc.model_dump(mode="json", include={"spec", "inputs", "cases"}), indent=2, default=str),
        raw=_raw(campaign), campaign_file=CAMPAIGN_FILE, probe_file=PROBE_FILE,
        searches=[_search_view(campaign, r) for r in campaign.searches.values()],
        waterfall_titles=[t for t, _ in WATERFALL_COLUMNS],
        waterfall=[_waterfall_view(campaign, r) for r in rows if r.samples],
        profiles=profiles, profile_event=RECORD_EVENT, ab=ab_section(campaign, rows),
        rule_costs=_rule_cost_views(campaign), compared=_axis_views(rows),
        duet=duet_section(campaign, root / "figures"),
    )
    out = root / REPORT_FILE
    out.write_text(html)
    return out


def _meta(campaign: Campaign) -> dict[str, Any]:
    created = campaign.doc.created_unix
    spec = campaign.doc.spec
    return {"name": campaign.name, "description": spec.get("description") or "",
            "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created)) if created else "unknown",
            "root": str(campaign.root.resolve()), "samples": spec.get("samples", "?"),
            "interval": f"{campaign.stats_interval_s:g}"}


WATERFALL_COLUMNS = (("sent", "sent_pkts"), ("sender loss", "loss_sender_pkts"), ("wire loss", "loss_wire_pkts"),
                     ("NIC drops", "loss_nic_pkts"), ("softnet drops", "loss_softnet_pkts"),
                     ("capture drops", "loss_capture_pkts"), ("unprocessed", "unprocessed_pkts"),
                     ("decoded", "decoded_pkts"), ("unaccounted", "unaccounted_pkts"))


def _waterfall_view(campaign: Campaign, row: CaseResult) -> dict[str, Any]:
    invisible = sorted({p for s in campaign.samples_of(row.case) for p in s.summary.invisible})
    degraded = row.extra.get("degraded_sensor") or {}
    return {"case": f"{row.params.setup} {load_label(row)} {row.params.rate}",
            "cells": [number(row.medians.get(key), 0) for _, key in WATERFALL_COLUMNS],
            "invisible": ", ".join(invisible) or "–",
            "degraded": ", ".join(f"{k} {number(v, 0)}" for k, v in degraded.items()) or "–"}


def _search_view(campaign: Campaign, result: SearchResult) -> dict[str, Any]:
    try:
        p = campaign.case(result.case_id).params
        case = f"{p.setup} {trace_label(p.trace)} {p.replayers}X"
    except KeyError:
        case = result.case_id
    results = []
    for r in result.results:
        value = "none" if r.value is None else f"{number(r.value, 2)} {result.unit}"
        if r.lower_bound:
            value = f"≥ {value} (sender-limited)"
        mbps = number(r.value_pps * result.avg_frame_bytes * 8 / 1e6, 1) if r.value_pps and result.avg_frame_bytes \
            and result.axis != "cpus" else "–"
        results.append({"tolerance": f"{r.tolerance:g}", "value": value, "mbps": mbps,
                        "bracket": f"[{number(r.bracket[0], 2)}, {number(r.bracket[1], 2)}]" if r.bracket else "–",
                        "verified": {True: "yes", False: "no", None: "–"}[r.verified]})
    cost, notes = sensor_cost(result), list(result.notes)
    if cost is not None and cost.spread > HOST_MOVED:
        notes.append(f"the sensor's CPU per packet moved {cost.spread:.0%} between trials near the NDR: the host's "
                     "speed changed during the search, a repeated search may differ as much")
    return {"case": case, "axis": result.axis, "results": results, "mode": result.mode,
            "trials": f"{len(result.trials)} + {len(result.verification)}",
            "cost": "–" if cost is None else
            f"{number(cost.median_us, 2)} ({number(cost.low_us, 2)}–{number(cost.high_us, 2)}, {cost.trials} trials)",
            "ceiling": number(result.sender_ceiling_pps, 0), "notes": "; ".join(notes) or "–",
            **_repeats_view(result)}


def _repeats_view(result: SearchResult) -> dict[str, str]:
    """The repeats of a search side by side: each one's NDR and relevant bounds, their median and CI."""
    f = repeat_fields(result)
    g = result.goals
    ci = f.get("ndr_ci")
    ndr = next((r for r in result.results if r.tolerance == 0), None)
    bounds = []
    for rep in result.repeats:
        r0 = next((r for r in rep.results if r.tolerance == 0), None)
        if r0 is not None:
            bounds.append(f"[{number(r0.relevant_lower, 2)}, {number(r0.relevant_upper, 2)}]")
    level = f.get("ndr_ci_level")
    return {
        "goals": "–" if g is None else (f"exceed {g.exceed_ratio:g}, width {g.relative_width:g}, trials "
                                        f"{g.initial_trial_s:g}→{g.final_trial_s:g} s, sum {g.duration_sum_s:g} s"),
        "repeat_ndrs": ", ".join(number(x, 0) for x in (f.get("ndr_repeats") or [])) or "–",  # type: ignore[attr-defined]
        "repeat_bounds": "; ".join(bounds) or "–",
        "median_ndr": number(ndr.value_pps, 0) if ndr else "–",
        "ndr_ci": f"[{number(ci[0], 0)}, {number(ci[1], 0)}] ({float(level or 0):.0%})"  # type: ignore[index,arg-type]
        if ci else "–",
        "conditional": number(ndr.conditional_pps, 0) if ndr else "–",
        "capacity": number(f.get("ndr_capacity_pps"), 0)}


def _profile_view(campaign: Campaign, row: CaseResult) -> dict[str, Any] | None:
    prof = case_profile(campaign, row.case)
    if prof is None:
        return None
    ratios = [f"{name.replace('_', ' ')} {number(value, 3)}" for name, value in prof.ratios.items() if value is not None]
    if prof.unsupported:
        ratios.append(f"not counted on this host: {', '.join(prof.unsupported)}")
    return {"title": f"{row.params.setup} {load_label(row)} {row.params.rate} ({prof.samples} samples, "
                     f"{prof.recorded} recorded)", "view": prof.view,
            "functions": [{"pct": number(f.self_pct, 2), "symbol": f.symbol, "dso": f.dso} for f in prof.functions],
            "threads": [{"name": t.name, "role": t.role, "pct": number(t.cpu_pct, 2)} for t in prof.threads],
            "worker_share": "–" if prof.worker_cpu_share is None else f"{prof.worker_cpu_share:.0%}",
            "ratios": "; ".join(ratios), "notes": list(prof.notes)}


def missing_note(rows: list[CaseResult]) -> str | None:
    """What the report lacks because samples were not ok (None when every case has an ok sample)."""
    counts: dict[str, int] = {}
    for r in rows:
        for status, n in r.status_counts.items():
            counts[status] = counts.get(status, 0) + n
    verdicts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no sample finished"
    if not any(r.samples for r in rows):
        return (f"No sample of this campaign is ok ({verdicts}): there are no medians, no figures drawn "
                "from ok samples, no loss waterfall and no overhead table. The verdicts and their reasons "
                "are listed under Warnings.")
    without = [f"{r.params.setup} {load_label(r)} {r.params.rate}" for r in rows if not r.samples]
    if without:
        return (f"{len(without)} of {len(rows)} cases have no ok sample ({'; '.join(without)}): their cells "
                "are empty and they are left out of the figures; see Warnings for the verdicts.")
    return None


def _coverage_note(rows: list[CaseResult]) -> str:
    levels = sorted({(r.samples, r.ci_level) for r in rows if r.samples})
    return ", ".join(f"{n} samples: {level:.1%}" for n, level in levels) or "no samples"


def _row_view(row: CaseResult) -> dict[str, Any]:
    """What the template shows of one case (strings, ready to print)."""
    p = row.params
    status = row.status if len(row.status_counts) <= 1 else \
        f"{row.status} ({', '.join(f'{n} {k}' for k, n in row.status_counts.items())})"
    return {"setup": p.setup, "variant": variant(p), "trace": trace_label(p.trace),
            "trace_ref": p.trace, "rate": p.rate, "load": load_label(row), "samples": row.samples,
            "ci_level": f"{row.ci_level:.0%}" if row.samples else "–", "status": status,
            "labels": ", ".join(row.labels),
            "cells": [median_and_ci(row, key, scale, digits) for _, key, scale, digits in COLUMNS]}


def _overhead_view(o: Overhead) -> dict[str, Any]:
    cells = []
    for _, key, scale, digits, pct_only in OVERHEAD_COLUMNS:
        m = o.metrics[key]
        if pct_only:
            cells.append(value_and_ci(m.pct, m.pct_ci, 1.0, digits))
        else:
            value, ci = value_and_ci(m.diff, m.diff_ci, scale, digits)
            pct = f" ({number(m.pct, 1)}%)" if m.pct is not None else ""
            cells.append((value + pct, ci))
    return {"setup": o.setup, "trace": trace_label(o.contender.trace), "rate": o.contender.rate,
            "load": f"{o.contender.replayers}X", "cells": cells}


def _environment(campaign: Campaign) -> list[tuple[str, str]]:
    out = []
    for key, value in campaign.doc.environment.items():
        if isinstance(value, dict):
            value = value.get("version") or json.dumps(value, default=str)[:300]
        if key == "mem_total_bytes" and isinstance(value, (int, float)):
            value = f"{value / 2**30:.1f} GiB"
        out.append((key, str(value)))
    return out


def _host(root: Path) -> dict[str, Any] | None:
    """The campaign's host probe (store.reader.read_probe) as table rows, with its trap warnings."""
    if not (root / PROBE_FILE).is_file():
        return None
    try:
        probe = load_probe(root)
    except InputError as exc:
        return {"rows": [], "warnings": [f"{PROBE_FILE} is unreadable: {exc}"], "notes": []}
    return {"rows": facts(probe), "warnings": probe_warnings(probe), "notes": probe.notes}


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


def _rule_cost_views(campaign: Campaign, top: int = 20) -> list[dict[str, Any]]:
    """Per profiled case: its costliest rules, all rules' time against the sensor's CPU time, and the
    cost per rule file and ET category (analysis/rules.py)."""
    from idsbench.analysis.rules import case_rule_time, case_rules, group_costs, rule_catalog

    def share(value: float | None) -> str:
        return "–" if value is None else f"{value:.3%}"

    info = rule_catalog(campaign)
    views = []
    for case in campaign.cases:
        rules = case_rules(campaign, case.case_id, info)
        if not rules:
            continue
        groups = [*group_costs(campaign, case.case_id, "file", info),
                  *group_costs(campaign, case.case_id, "category", info)]
        t = case_rule_time(campaign, case.case_id)
        unit = rules[0].unit
        views.append({"case": case.case_id, "engine": case.params.engine, "unit": "µs" if unit == "us" else unit,
                      "rule_time": _rule_time_text(t), "rules": [
            {"sid": r.sid if r.gid == 1 else f"{r.gid}:{r.sid}", "msg": r.msg, "file": r.file,
             "category": r.category, "hints": ", ".join(r.hints),
             "checks": f"{r.checks:,.0f}", "matches": count_text(r.matches), "ticks_total": f"{r.ticks_total:,.0f}",
             "ticks_avg": f"{r.ticks_avg:,.2f}" if unit == "us" else f"{r.ticks_avg:,.0f}",
             "ticks_max": "–" if r.ticks_max is None else f"{r.ticks_max:,.0f}", "share": f"{r.share:.1%}",
             "time_share": share(r.time_share)}
            for r in rules[:top]],
            "groups": [{"kind": g.kind, "name": g.name, "rules": g.rules, "ticks_total": f"{g.ticks_total:,.0f}",
                        "share": f"{g.share:.1%}", "time_share": share(g.time_share), "checks": f"{g.checks:,.0f}",
                        "removal_saving": share(g.removal_saving)} for g in groups[:40]]})
    return views


def _rule_time_text(t: RuleTime | None) -> str:
    """All rules of a case against the sensor's CPU time (analysis.rules.RuleTime), as a sentence."""
    if t is None or t.time_share is None or t.rule_time_s is None or t.sensor_cpu_s is None:
        return f"Share of the sensor's CPU time unknown: {t.why_none if t is not None else 'no profile'}."
    rate = f" (ticks at the measured TSC rate of {t.tsc_hz / 1e9:.4f} GHz)" if t.tsc_hz else ""
    warning = t.timer_warning()
    return (f"All rules together took {t.rule_time_s * 1e3:,.2f} ms{rate} of the sensor's {t.sensor_cpu_s:,.3f} s "
            f"of CPU time: {t.time_share:.2%} (medians over {t.samples} ok samples)."
            + (f" Note: {warning}." if warning else ""))


AXIS_TITLES = {"engine": "Builds compared", "rules": "Rulesets compared"}


def _axis_views(rows: list[CaseResult]) -> list[dict[str, Any]]:
    """Per compared axis (engines/builds, rulesets), its cases compared value by value (analysis/builds.py)."""
    from idsbench.analysis.builds import COMPARED_AXES, compare_along

    sections = []
    for axis in COMPARED_AXES:
        views = []
        for c in compare_along(rows, axis):
            base, contender = c.values
            if axis == "engine":
                base += f" ({c.base.extra.get('engine_version') or '?'})"
                contender += f" ({c.contender.extra.get('engine_version') or '?'})"
            views.append({"base": base, "contender": contender, "case": c.contender.case,
                          "cells": [{"metric": m, "value": _delta_text(m, d)} for m, d in c.deltas.items()]})
        if views:
            sections.append({"axis": axis, "id": f"compared-{axis}", "title": AXIS_TITLES[axis], "rows": views})
    return sections


def _delta_text(key: str, d: MetricDelta) -> str:
    """`base → contender (verdict effect% [CI])`: the medians as the tables print them and compare's verdict."""
    show = metric(key).show
    return f"{show(d.base)} → {show(d.contender)} ({verdict_text(d)})"
