"""gate.md: the gate's verdict as a pull request comment (pure: GateDoc -> markdown).

The head line (verdict, exit status), the two sides' identities, the noise floor the A/A arm measured, one
table row per trace (Δ% with its CI, samples, a mark), the alert differences (every one), the counters that
moved beyond the A/A arm, and a collapsible <details> with event types, resources and the method."""

from __future__ import annotations

from idsbench.gate.model import GateDoc, SideDoc

MARKS = {"regression": "❌ regression", "improvement": "🟢 improvement", "same": "✅ same", "unknown": "❔ unknown"}
MAX_ROWS = 50  # counters and events beyond this are summarised (the JSON has every one)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:+.2f}%"


def _ci(ci: list[float] | None) -> str:
    return "–" if not ci else f"[{(ci[0] - 1) * 100:+.2f}%, {(ci[1] - 1) * 100:+.2f}%]"


def _side(label: str, s: SideDoc) -> str:
    ident = s.id if len(s.id) <= 24 else s.id[:20] + "…"
    flags = f"; configure `{s.flags}`" if s.flags else ""
    build = f"; built in {s.build_s} s" if s.build_s is not None else ""
    return f"- **{label}** `{s.name}`: {s.kind} `{ident}`, Suricata {s.version}{flags}{build}"


def _num(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.3f}"


def render(doc: GateDoc) -> str:
    out = [f"## idsbench gate: {MARKS[doc.verdict]}", ""]
    alerts = len(doc.alerts_diff)
    out.append(f"{doc.reason}; {alerts} signature{'s' if alerts != 1 else ''} with a different alert count"
               + (" (allowed)" if doc.allow_alert_changes and alerts else "") + f". Exit status {doc.exit_status}.")
    out += ["", _side("base", doc.base), _side("head", doc.head), ""]
    floor = f"±{doc.noise_floor_pct:.2f}%" if doc.noise_floor_pct is not None else "not measured"
    aa = ""
    if doc.aa is not None:
        aa = f" (A/A arm: {_pct(None if doc.aa.ratio is None else (doc.aa.ratio - 1) * 100)} {_ci(doc.aa.ratio_ci)}, " \
             f"{doc.aa.samples} samples, {doc.aa.verdict})"
    out.append(f"Threshold ±{doc.threshold_pct:g}%; noise floor {floor}{aa}; {doc.rounds} rounds in "
               f"{doc.measure_s:.0f} s (budget {doc.budget_s:.0f} s; {doc.wall_s:.0f} s with the builds and the "
               "offline pass).")
    out += ["", "| trace | Δ cost/packet | CI | samples | verdict |", "|---|---:|---|---:|---|"]
    for t in doc.traces:
        need = f" (about {t.samples_needed} samples would settle it)" if t.verdict == "unknown" and t.samples_needed else ""
        level = f" {t.ci_level:.0%}" if t.ratio_ci else ""
        out.append(f"| {t.trace} | {_pct(t.effect_pct)} | {_ci(t.ratio_ci)}{level} | {t.samples} | "
                   f"{MARKS[t.verdict]}{need} |")
    out += ["", f"### Alerts ({alerts} signature{'s' if alerts != 1 else ''} differ)", ""]
    if doc.alerts_diff:
        out += ["| sid | base | head | trace |", "|---:|---:|---:|---|"]
        out += [f"| {a.sid} | {a.base:,} | {a.head:,} | {a.trace} |" for a in doc.alerts_diff]
    else:
        out.append("Every signature raised as many alerts on both sides (offline read of every trace).")
    out += ["", f"### Counters beyond the A/A arm ({len(doc.counters_diff)})", ""]
    if doc.counters_diff:
        out += ["| counter | base | head | ratio | A/A spread | trace |", "|---|---:|---:|---:|---:|---|"]
        for c in doc.counters_diff[:MAX_ROWS]:
            ratio = f"{c.ratio:.3f}" if c.ratio is not None else "–"
            out.append(f"| {c.counter} | {_num(c.base)} | {_num(c.head)} | {ratio} | {c.aa_spread:.1%} | {c.trace} |")
        if len(doc.counters_diff) > MAX_ROWS:
            out.append(f"| … {len(doc.counters_diff) - MAX_ROWS} more in gate.json | | | | | |")
    else:
        out.append("No stats counter moved more than between the A/A arm's identical sides.")
    out += ["", "<details><summary>Details: event types, resources, method</summary>", ""]
    out += [f"**Eve event types** ({len(doc.events_diff)} differ)", ""]
    if doc.events_diff:
        out += ["| event type | base | head | trace |", "|---|---:|---:|---|"]
        out += [f"| {e.event_type} | {e.base:,} | {e.head:,} | {e.trace} |" for e in doc.events_diff[:MAX_ROWS]]
    else:
        out.append("The same event types, as many of each.")
    out += ["", "**Resources** (medians over the duet samples)", "", "| metric | base | head | ratio | trace |",
            "|---|---:|---:|---:|---|"]
    for r in doc.resources:
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "–"
        out.append(f"| {r.metric} | {_num(r.base)} | {_num(r.head)} | {ratio} | {r.trace} |")
    out += ["", "**Method**: per trace a duet (base and head on the same mirrored packets at the same time, "
            "each in its own cgroup, slots swapped every other sample) and an A/A arm (base against base) in "
            "the same rounds; the cost ratio is each side's CPU per packet, head/base, per sample; the CI is the "
            "order-statistic CI of the median. `same` = the CI inside ±threshold, `regression`/`improvement` = "
            "clear of it, else `unknown`."]
    rates = ", ".join(f"{t.trace} {t.rate_pps:,.0f} pps" for t in doc.traces if t.rate_pps)
    if rates:
        out.append(f"Load: {rates}.")
    if doc.notes:
        out += ["", *(f"- {n}" for n in doc.notes)]
    out += ["", "</details>", ""]
    return "\n".join(out)
