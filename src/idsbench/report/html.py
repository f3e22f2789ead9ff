"""write_report(DIR): report.html (self-contained), figures/*.svg|png, tables/cases.csv|json."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from idsbench import __version__
from idsbench.analysis import case_table, overhead
from idsbench.analysis.compare import MetricDelta
from idsbench.analysis.duet import with_duet
from idsbench.analysis.overhead import Overhead, overhead_note
from idsbench.analysis.profile import case_profile
from idsbench.analysis.search import HOST_MOVED, repeat_fields, sensor_cost
from idsbench.analysis.warnings import campaign_warnings
from idsbench.errors import InputError
from idsbench.metrics import metric, number, search_metric
from idsbench.plan import trace_label
from idsbench.probe.diff import load as load_probe
from idsbench.probe.render import facts
from idsbench.probe.warnings import warnings as probe_warnings
from idsbench.profile.perf import RECORD_EVENT
from idsbench.report import duet_out, export, rules_out, tables
from idsbench.report.ab import ab_section
from idsbench.report.casedata import degraded, engine_version
from idsbench.report.compare_out import verdict_text
from idsbench.report.duet import duet_section
from idsbench.report.engines import engine_section
from idsbench.report.figures import build_figures
from idsbench.report.fmt import load_label
from idsbench.report.hostside import host_side_view
from idsbench.report.style import setup_colors
from idsbench.report.table import Column, Figure, Measure, Table, Text, Value, metric_column, table
from idsbench.store.campaigndoc import HostFingerprint
from idsbench.store.layout import (
    CAMPAIGN_FILE,
    COUNTERS_FILE,
    EVE_FILE,
    MONITOR_FILE,
    PROBE_FILE,
    SUMMARY_FILE,
    SURICATA_CONFIG_FILE,
    SURICATA_LOG_FILE,
)
from idsbench.store.reader import Campaign, load_campaign
from idsbench.store.schema import CaseResult, SearchResult
from idsbench.store.writers import figures_dir, write_report_html, write_report_table

RAW_FILES = (SUMMARY_FILE, COUNTERS_FILE, MONITOR_FILE, EVE_FILE, SURICATA_LOG_FILE, SURICATA_CONFIG_FILE)
View = dict[str, object]  # what a template shows of one item: its values, printed by Jinja only

# (title, metric): the contender's difference from the baseline in the metric's unit and format (its
# percentage of the baseline under it); decode_ratio: the change in percent only
OVERHEAD_COLUMNS = (("extra host CPU (pp)", "host_cpu_pct"), ("extra sensor CPU (pp)", "sensor_cpu_pct"),
                    ("extra memory (MiB)", "sensor_rss_peak_bytes"), ("extra drops (pkts)", "dropped_pkts"),
                    ("decode rate change (%)", "decode_ratio"))


def write_report(campaign_dir: Path | str, *, baseline: str = "baremetal",
                 cv_threshold: float = 0.10) -> Path:
    """Analyse the campaign in `campaign_dir` and write DIR/report.html; returns its path."""
    root = Path(campaign_dir)
    campaign = load_campaign(root)
    rows = case_table(campaign, cv_threshold=cv_threshold)
    rows, pairs = with_duet(campaign, rows)  # a duet campaign: its pair rows join the tables
    write_report_table(root, "json", duet_out.results_text("json", rows, pairs) if pairs else tables.to_json(rows))
    write_report_table(root, "csv", duet_out.results_text("csv", rows, pairs) if pairs else tables.to_csv(rows))
    colors = setup_colors([r.params.setup for r in rows])
    over = overhead(campaign, baseline)
    figs = build_figures(campaign, rows, colors, figures_dir(root), baseline=baseline, overhead_rows=over)
    profiles = [v for r in rows if (v := _profile_view(campaign, r)) is not None]
    html = export.html_env(strict=True).get_template("report.html.j2").render(
        c=_meta(campaign), generated=time.strftime("%Y-%m-%d %H:%M:%S"), version=__version__,
        coverage_note=_coverage_note(rows), missing=missing_note(rows), colors=colors,
        results=tables.results_table(rows, colors),
        warnings=campaign_warnings(campaign, rows),
        cv_threshold=f"{cv_threshold:.0%}",
        figures=[{"name": f.name, "title": f.title, "caption": f.caption, "uri": f.data_uri()}
                 for f in figs.files],
        notes=figs.notes, baseline=baseline, engines=engine_section(campaign, rows, colors),
        overhead=_overhead_table(over, colors) if over else None,
        overhead_note=f"No overhead table: {overhead_note([r.params.setup for r in rows], baseline)}.",
        environment=_environment(campaign), host=_host(campaign.root), spec_json=json.dumps(
            campaign.doc.model_dump(mode="json", include={"spec", "inputs", "cases"}), indent=2),
        raw=_raw(campaign), campaign_file=CAMPAIGN_FILE, probe_file=PROBE_FILE,
        searches=[_search_view(campaign, r) for r in campaign.searches.values()],
        waterfall=_waterfall_table(campaign, [r for r in rows if r.samples]),
        profiles=profiles, profile_event=RECORD_EVENT, ab=ab_section(campaign, rows),
        rule_costs=rules_out.report_views(campaign), compared=_axis_views(rows),
        duet=duet_section(campaign, figures_dir(root)),
        duet_study=export.to_html(duet_out.study_table(pairs)) if pairs else None,
    )
    return write_report_html(root, html)


def _meta(campaign: Campaign) -> View:
    created = campaign.doc.created_unix
    spec = campaign.doc.spec
    return {"name": campaign.name, "description": spec.description,
            "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created)) if created else "unknown",
            "root": str(campaign.root.resolve()), "samples": spec.samples,
            "interval": f"{campaign.stats_interval_s:g}"}


WATERFALL_METRICS = ("sent_pkts", "loss_sender_pkts", "loss_wire_pkts", "loss_nic_pkts", "loss_softnet_pkts",
                     "loss_capture_pkts", "bypassed_pkts", "unprocessed_pkts", "decoded_pkts", "unaccounted_pkts")
WATERFALL_TITLES = ("sent", "sender loss", "wire loss", "NIC drops", "softnet drops", "capture drops", "bypassed",
                    "unprocessed", "decoded", "unaccounted")


def _waterfall_table(campaign: Campaign, rows: list[CaseResult]) -> Table:
    """Where each case's packets went (medians over its ok samples), the capture method's own drop points
    (their sum is the capture drops; pcap's ps_ifdrop is the interface's, in NIC drops), what is invisible,
    what degraded."""
    columns = (Column("case", "case"), *(Column(k, t, "right") for k, t in zip(WATERFALL_METRICS, WATERFALL_TITLES)),
               Column("capture", "capture: its drop points"), Column("invisible", "invisible"),
               Column("degraded", "degraded"))
    body: list[tuple[Value, ...]] = []
    for row in rows:
        invisible = sorted({p for s in campaign.samples_of(row.case) for p in s.summary.invisible})
        points = ", ".join(f"{k} {number(v, 0)}" for k, v in sorted(row.capture_drops.items()))
        body.append((f"{row.params.setup} {load_label(row)} {row.params.rate}",
                     *(Measure(k, row.medians.get(k)) for k in WATERFALL_METRICS),
                     f"{row.capture or 'default'}" + (f": {points}" if points else ""), ", ".join(invisible) or "–",
                     ", ".join(f"{k} {number(v, 0)}" for k, v in degraded(row).items()) or "–"))
    return table(columns, body, css="results")


def _search_view(campaign: Campaign, result: SearchResult) -> View:
    try:
        p = campaign.case(result.case_id).params
        case = f"{p.setup} {trace_label(p.trace)} {p.replayers}X"
    except KeyError:
        case = result.case_id
    results = []
    show = search_metric(result.unit).show
    for r in result.results:
        value = "none" if r.value is None else f"{show(r.value)} {result.unit}"
        if r.lower_bound:
            value = f"≥ {value}"
        if r.sender_limited or (r.lower_bound and result.sender_ceiling_pps is not None):
            value += " (sender-limited: the sensor was not the limit)"
        elif r.lower_bound:
            value += " (the axis' top)"
        mbps = metric("ndr_mbps").show(r.value_pps * result.avg_frame_bytes * 8 / 1e6) if r.value_pps and \
            result.avg_frame_bytes and result.axis != "cpus" else "–"
        results.append({"tolerance": f"{r.tolerance:g}", "value": value, "mbps": mbps,
                        "bracket": f"[{show(r.bracket[0])}, {show(r.bracket[1])}]" if r.bracket else "–",
                        "verified": {True: "yes", False: "no", None: "–"}[r.verified]})
    cost, notes, us = sensor_cost(result), list(result.notes), metric("sensor_us_per_pkt").show
    if cost is not None and cost.spread > HOST_MOVED:
        notes.append(f"the sensor's CPU per packet moved {cost.spread:.0%} between trials near the NDR: the host's "
                     "speed changed during the search, a repeated search may differ as much")
    return {"case": case, "axis": result.axis, "results": results, "mode": result.mode,
            "trials": f"{len(result.trials)} + {len(result.verification)}",
            "cost": "–" if cost is None else
            f"{us(cost.median_us)} ({us(cost.low_us)}–{us(cost.high_us)}, {cost.trials} trials)",
            "ceiling": metric("sender_pps").show(result.sender_ceiling_pps) + (
                f" (measured once for {len(result.repeats)} repeats)"
                if result.sender_ceiling_pps and len(result.repeats) > 1 else ""), "notes": "; ".join(notes) or "–",
            **_repeats_view(result)}


def _repeats_view(result: SearchResult) -> dict[str, str]:
    """The repeats of a search side by side: each one's NDR and relevant bounds, their median and CI."""
    f = repeat_fields(result)
    g = result.goals
    ci = f.ndr_ci
    ndr = next((r for r in result.results if r.tolerance == 0), None)
    pps, show = metric("ndr_pps").show, search_metric(result.unit).show
    bounds = []
    for rep in result.repeats:
        r0 = next((r for r in rep.results if r.tolerance == 0), None)
        if r0 is not None:
            bounds.append(f"[{show(r0.relevant_lower)}, {show(r0.relevant_upper)}]")
    capacity = f.ndr_capacity_pps
    level = f.ndr_ci_level
    return {
        "goals": "–" if g is None else (f"exceed {g.exceed_ratio:g}, width {g.relative_width:g}, trials "
                                        f"{g.initial_trial_s:g}→{g.final_trial_s:g} s, sum {g.duration_sum_s:g} s"),
        "repeat_ndrs": ", ".join(pps(x) for x in f.ndr_repeats) or "–",
        "repeat_bounds": "; ".join(bounds) or "–",
        "median_ndr": pps(ndr.value_pps) if ndr else "–",
        "ndr_ci": f"[{pps(ci[0])}, {pps(ci[1])}] ({float(level or 0):.0%})" if ci else "–",
        "conditional": pps(ndr.conditional_pps) if ndr else "–",
        "capacity": pps(capacity)}


def _profile_view(campaign: Campaign, row: CaseResult) -> dict[str, Any] | None:  # Any: a Jinja template's view
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
            "ratios": "; ".join(ratios), "notes": list(prof.notes), "host": host_side_view(campaign, row.case)}


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


def _overhead_table(over: list[Overhead], colors: dict[str, str]) -> Table:
    """Each contender setup minus the baseline at the same trace, rate, load and limits."""
    columns = (Column("setup", "setup"), Column("trace", "trace"), Column("rate", "rate"),
               Column("load", "load", "right"), *(Column(k, t, "right") for t, k in OVERHEAD_COLUMNS))
    body = []
    for o in over:
        cells: list[Value] = []
        for _, key in OVERHEAD_COLUMNS:
            m = o.metrics[key]
            pct = Figure(m.pct, 2 if key == "decode_ratio" else 1, "%", m.pct_ci if key == "decode_ratio" else None)
            cells.append(pct if key == "decode_ratio" else
                         Measure(key, m.diff, m.diff_ci, "" if m.pct is None else f"{number(m.pct, 1)}%"))
        body.append((Text(o.setup, swatch=colors.get(o.setup, "#888")), trace_label(o.contender.trace),
                     o.contender.rate, f"{o.contender.replayers}X", *cells))
    return table(columns, body)


def _environment(campaign: Campaign) -> list[tuple[str, str]]:
    """The host's fingerprint, each engine's version, and on hosts each host's hello and the pairs."""
    env = campaign.doc.environment
    out = []
    for key, value in env.model_dump(exclude_unset=True).items():
        if key not in HostFingerprint.model_fields:
            continue
        if key == "mem_total_bytes" and isinstance(value, (int, float)):
            value = f"{value / 2**30:.1f} GiB"
        out.append((key, str(value)))
    if env.controller:
        out.append(("controller", "True"))
    out += [(name, build.version or json.dumps(build.record())[:300]) for name, build in env.engines.items()]
    if env.hosts:
        out.append(("hosts", json.dumps(env.hosts, default=str)[:300]))
    if env.pairs:
        out.append(("pairs", json.dumps(env.pairs)[:300]))
    return out


def _host(root: Path) -> View | None:
    """The campaign's host probe (store.reader.read_probe) as table rows, with its trap warnings."""
    if not (root / PROBE_FILE).is_file():
        return None
    try:
        probe = load_probe(root)
    except InputError as exc:
        return {"rows": [], "warnings": [f"{PROBE_FILE} is unreadable: {exc}"], "notes": []}
    return {"rows": facts(probe), "warnings": probe_warnings(probe), "notes": probe.notes}


def _raw(campaign: Campaign) -> list[View]:
    out: list[View] = []
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


AXIS_TITLES = {"engine": "Builds compared", "rules": "Rulesets compared", "capture": "Capture methods compared",
               "bypass": "Bypass compared"}


def _axis_views(rows: list[CaseResult]) -> list[View]:
    """Per compared axis (engines/builds, rulesets), its cases compared value by value (analysis/builds.py)."""
    from idsbench.analysis.builds import COMPARED_AXES, compare_along

    sections: list[View] = []
    for axis in COMPARED_AXES:
        compared = compare_along(rows, axis)
        if not compared:
            continue
        keys = list(dict.fromkeys(k for c in compared for k in c.deltas))
        body: list[tuple[Value, ...]] = []
        columns = (Column("base", "base"), Column("contender", "contender"), Column("case", "case"),
                   *(metric_column(k) for k in keys))
        for c in compared:
            base, contender = c.values
            if axis == "engine":
                base += f" ({engine_version(c.base) or '?'})"
                contender += f" ({engine_version(c.contender) or '?'})"
            labels: tuple[Value, Value] = (base, contender)
            if axis == "capture":  # the effective options (defaults written out) under each method
                labels = (Text(base, note=_options_text(c.base)), Text(contender, note=_options_text(c.contender)))
            if axis == "bypass":  # its settings, written out
                labels = (Text(base, note=_settings_text(c.base)), Text(contender, note=_settings_text(c.contender)))
            body.append((*labels, c.contender.case, *(_delta(k, c.deltas.get(k)) for k in keys)))
        sections.append({"axis": axis, "id": f"compared-{axis}", "title": AXIS_TITLES[axis],
                         "table": table(columns, body)})
    return sections


def _settings_text(r: CaseResult) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(r.bypass_settings.items()))


def _options_text(r: CaseResult) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(r.capture_options.items()))


def _delta(key: str, d: MetricDelta | None) -> Text:
    """`base → contender` as the tables print the metric, compare's verdict under it."""
    if d is None:
        return Text("–")
    show = metric(key).show
    return Text(f"{show(d.base)} → {show(d.contender)}", note=verdict_text(d), css=f"num dir-{d.verdict}")
