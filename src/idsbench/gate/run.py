"""`idsbench gate BASE HEAD`: build both sides, read every trace offline on each, find a load, then rounds
of duet samples until every trace is settled or the budget ends; judge, diff, write the outputs.

A round runs, for every trace not yet settled, ROUND_SAMPLES duet samples base against head (one with each
side in each slot), and ROUND_SAMPLES samples of the A/A arm (base against base) on one trace (the traces
take turns): the noise floor is measured in the same rounds as the differences. Each arm is one campaign
(DIR/campaigns/<arm>-<trace>/, planned with the most samples a gate takes) continued with `--resume`
semantics a round at a time through `idsbench.dispatch.run_campaign`: a round stops the campaign after its
samples (`_RoundProgress`). Errors (bad input, a build that fails, a side that does not start) raise an
`IdsbenchError`: the CLI exits 3 and writes no verdict.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from idsbench import settings
from idsbench.analysis.duet import duet_results
from idsbench.dispatch import run_campaign
from idsbench.errors import InputError, SensorFailed, SpecError
from idsbench.gate import diffs, sides
from idsbench.gate.model import AADoc, AlertDoc, CounterDoc, EventDoc, GateDoc, ResourceDoc, SideDoc, TraceDoc
from idsbench.gate.offline import OfflineRead, read_offline
from idsbench.gate.plan import (
    PROBE_PPS,
    REFINE_STEPS,
    ROUND_SAMPLES,
    GateOptions,
    arm_spec,
    probe_spec,
    rate_for,
    settled,
    trace_label,
)
from idsbench.gate.verdict import Judgement, exit_status, judge, next_round, overall
from idsbench.probemodel import NoiseProbe
from idsbench.run.progress import Progress
from idsbench.sensors.suricata.eve import scan_eve
from idsbench.spec import Spec
from idsbench.store.layout import CAMPAIGN_FILE, EVE_FILE, GATE_FILE
from idsbench.store.reader import Campaign, load_campaign, read_probe
from idsbench.traffic.pcap import read_info
from idsbench.traffic.resolve import resolve_trace

CAMPAIGNS_DIR = "campaigns"
Log = Callable[[str], None]


class _RoundDone(Exception):
    """Raised by _RoundProgress once the round's samples ran: it ends the campaign call (every sample is
    on disk by then; the next round continues the campaign)."""


class _RoundProgress(Progress):
    def __init__(self, total: int, stop_after: int, stream: TextIO):
        super().__init__(total, stream=stream, live=False)
        self.stop_after = stop_after
        self.ran: list[tuple[str, str]] = []

    def sample_done(self, sample_id: str, status: str, warnings: list[str]) -> None:
        super().sample_done(sample_id, status, warnings)
        self.ran.append((sample_id, status))
        if len(self.ran) >= self.stop_after:
            raise _RoundDone


@dataclass
class Arm:
    """One campaign of the gate: base against head on a trace, or the A/A arm on a trace."""

    kind: str                      # "head" | "aa"
    trace: str                     # the trace's label
    ref: str                       # the trace reference
    out: Path
    engines: list[str]
    rate_pps: float
    failures: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.trace}"


class HostNoise:
    """The host's quietness probe (probe/noise.py, 6-12 s of busy loop) of the gate's first campaign, reused
    by every later one: they start seconds apart, and a probe before each of a round's campaigns took a third
    of its time (28 of 72 s, two campaigns a round)."""

    def __init__(self) -> None:
        self.probe: NoiseProbe | None = None

    def keep(self, campaign_dir: Path) -> None:
        if self.probe is None:
            try:
                self.probe = read_probe(campaign_dir).noise
            except InputError:
                pass


def _run_round(arm: Arm, options: GateOptions, log: Log, stream: TextIO, noise: HostNoise) -> None:
    spec = arm_spec(f"gate-{arm.name}", arm.engines, arm.ref, arm.rate_pps, options)
    progress = _RoundProgress(options.planned_samples, ROUND_SAMPLES, stream)
    resume = (arm.out / CAMPAIGN_FILE).is_file()
    try:
        run_campaign(spec, arm.out, resume=resume, progress=progress, state_dir=options.state_dir,
                     cache_dir=options.cache_dir, name_prefix=options.name_prefix, noise=noise.probe)
    except _RoundDone:
        pass
    noise.keep(arm.out)
    bad = [f"{sid}: {status}" for sid, status in progress.ran if status != "ok"]
    arm.failures += bad
    if progress.ran and len(bad) == len(progress.ran):
        reasons = _failure_reasons(arm.out)
        if all(status == "failed" for _, status in progress.ran):
            raise SensorFailed(f"every sample of {arm.name} in this round failed ({'; '.join(bad)}): "
                               + ("; ".join(reasons) or "no reason recorded"),
                               fix=f"read the samples' logs under {arm.out}/cases/*/s*/ (suricata.log).")


def _failure_reasons(out: Path) -> list[str]:
    try:
        campaign = load_campaign(out)
    except Exception:
        return []
    return sorted({s.summary.reason or s.status for s in campaign.samples if s.status != "ok"})[:3]


def _ratios(campaign: Campaign) -> tuple[list[float], int]:
    """The per-sample ratios b/a of the campaign's one duet pair (both sides ok), and the exact samples."""
    results = duet_results(campaign)
    if not results:
        return [], 0
    r = results[0]
    return [s.ratio for s in r.samples if s.ratio is not None], r.exact


def _last_stats(path: Path) -> dict[str, float]:
    last: dict[str, Any] = {}

    def sink(rec: dict[str, Any]) -> None:  # Any: an eve record
        if rec.get("event_type") == "stats":
            last.clear()
            last.update(rec.get("stats") or {})

    if path.is_file():
        scan_eve(path, ("stats",), sink, warn_truncated=False)
    return diffs.flatten(last)


@dataclass(frozen=True)
class SideSamples:
    """Each ok duet sample's counters and resources, per side."""

    counters: dict[str, list[dict[str, float]]]        # side "a"/"b" -> per ok sample
    ready_s: dict[str, list[float | None]]
    rss_peak: dict[str, list[float | None]]


def _side_samples(campaign: Campaign) -> SideSamples:
    results = duet_results(campaign)
    out = SideSamples({"a": [], "b": []}, {"a": [], "b": []}, {"a": [], "b": []})
    if not results:
        return out
    r = results[0]
    by_key = {(s.case_id, s.index): s for s in campaign.samples}
    for fig in r.samples:
        if fig.ratio is None:
            continue
        for side, case in (("a", r.a_case), ("b", r.b_case)):
            rec = by_key.get((case, fig.index))
            if rec is None:
                continue
            out.counters[side].append(_last_stats(rec.path / EVE_FILE))
            out.ready_s[side].append(rec.summary.sensor_ready_s)
    from idsbench.analysis import case_table  # numpy: only when a gate reads its results

    for row in case_table(campaign):
        for side, case in (("a", r.a_case), ("b", r.b_case)):
            if row.case == case:
                out.rss_peak[side].append(row.medians.get("sensor_rss_peak_bytes"))
    return out


def expand_traffic(refs: Sequence[str]) -> list[str]:
    """--traffic values: a capture or builtin trace as it is; a spec file (.toml) gives its traffic's traces."""
    from idsbench.spec import load_spec

    out: list[str] = []
    for ref in refs:
        if ref.endswith(".toml"):
            spec = load_spec(ref)
            out += [r if r.startswith("builtin:") else str(spec.resolve_path(r)) for r in spec.traffic.trace_refs()]
        else:
            out.append(ref)
    return out


def check_traces(refs: Sequence[str], cache_dir: Path) -> list[tuple[str, str, Path]]:
    """(label, reference, path) per trace; InputError for one that is missing or does not read."""
    taken: set[str] = set()
    out = []
    for ref in expand_traffic(refs):
        path = resolve_trace(ref, cache_dir)
        info = read_info(path, cache_dir=cache_dir)
        if info.packets == 0:
            raise InputError(f"trace {ref} ({path}) holds no packets.", fix="give a capture with packets.")
        out.append((trace_label(ref, taken), ref if ref.startswith("builtin:") else str(path.resolve()), path))
    return out


def _side_doc(ident: sides.Identity) -> SideDoc:
    return SideDoc(kind=ident.kind, id=ident.id, flags=ident.flags, name=ident.name, engine=ident.engine,
                   version=ident.version, build_s=ident.build_s, make_s=ident.make_s, ccache=ident.ccache or None)


def _ci_list(ci: tuple[float, float] | None) -> list[float] | None:
    return [round(ci[0], 6), round(ci[1], 6)] if ci else None


@dataclass
class GateRun:
    """What a gate run leaves: the document (gate.json) and where its campaigns are."""

    doc: GateDoc
    campaigns: list[Path]


def build_side(side: sides.Side, log: Log) -> sides.Identity:
    """Build (or find) the side's engine and read its identity; EnvironmentMissing naming the build log
    when the build fails."""
    from idsbench.sensors import registry

    engine = registry.engine(side.engine)
    t0 = time.monotonic()
    engine.require()
    info = engine.build_info()
    ident = sides.identity(side, info)
    log(f"gate: {side.ref.label} {side.ref.text}: {ident.kind} {ident.short()} (Suricata {ident.version}) ready "
        f"in {time.monotonic() - t0:.0f} s" + (f"; built in {ident.build_s} s (make {ident.make_s} s"
                                                  f"{', ccache ' + ident.ccache if ident.ccache else ''})"
                                                  if ident.build_s is not None else ""))
    return ident


def probe_rates(base_engine: str, traces: list[tuple[str, str, Path]], out: Path, options: GateOptions,
                log: Log, stream: TextIO, noise: HostNoise) -> dict[str, float]:
    """The load per trace: given (--rate), or PROBE_CPU_SHARE of a CPU at the base's probed cost — probed at
    PROBE_PPS, then again at the load that gave until it settles (plan.REFINE_STEPS, plan.settled)."""
    if options.rate_pps is not None:
        return {label: float(options.rate_pps) for label, _, _ in traces}
    cost = _probe_costs(probe_spec(base_engine, [ref for _, ref, _ in traces], options), out, options, stream, noise)
    rates = {label: rate_for(cost.get(ref)) for label, ref, _ in traces}
    for label, ref, _ in traces:
        c = cost.get(ref)
        log(f"gate: load for {label}: {rates[label]:,.0f} pps (base {c:.2f} µs/packet at {PROBE_PPS:,.0f} pps)" if c
            else f"gate: load for {label}: {rates[label]:,.0f} pps (the probe measured no cost: the lowest load)")
    probed = {label: PROBE_PPS for label in rates}
    for step in range(1, REFINE_STEPS + 1):
        for label, ref, _ in traces:
            if cost.get(ref) is None or settled(probed[label], rates[label]):
                continue
            at = rates[label]
            spec = probe_spec(base_engine, [ref], options, rate_pps=at)
            c = _probe_costs(spec, out.with_name(f"{out.name}-{label}-{step}"), options, stream, noise).get(ref)
            if c is None:  # the sample at this load failed: keep the load the last good probe gave
                log(f"gate: load for {label}: {at:,.0f} pps kept (the probe at it measured no cost)")
                probed[label] = at
                continue
            probed[label], rates[label] = at, rate_for(c)
            log(f"gate: load for {label}: {rates[label]:,.0f} pps (base {c:.2f} µs/packet at {at:,.0f} pps)")
    return rates


def _probe_costs(spec: Spec, out: Path, options: GateOptions, stream: TextIO, noise: HostNoise) -> dict[str, float | None]:
    """Run one probe campaign; the base's CPU per packet per trace reference (ok samples only)."""
    run_campaign(spec, out, progress=Progress(len(spec.traffic.trace_refs()), stream=stream, live=False),
                 state_dir=options.state_dir, cache_dir=options.cache_dir, name_prefix=options.name_prefix,
                 noise=noise.probe)
    noise.keep(out)
    cost: dict[str, float | None] = {}
    for s in load_campaign(out).samples:
        if s.status == "ok" and s.summary.cost is not None:
            cost[s.summary.trace.ref] = s.summary.cost.us_per_pkt
    return cost


def run_gate(base_text: str, head_text: str, out: Path, options: GateOptions, *, log: Log | None = None,
             stream: TextIO = sys.stderr) -> GateRun:
    """The whole gate (module doc); an IdsbenchError on bad input or a failure, before any verdict."""
    say: Log = log or (lambda line: print(line, file=stream, flush=True))
    options.check()
    options = _with_dirs(options)
    out = out.resolve()
    if (out / GATE_FILE).exists() or (out / CAMPAIGNS_DIR).exists():
        raise SpecError(f"{out} already holds a gate run.", fix="give another --out directory.")
    base_ref, head_ref = sides.parse_side("BASE", base_text), sides.parse_side("HEAD", head_text)
    assert options.cache_dir is not None
    traces = check_traces(options.traffic, options.cache_dir)
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="idsbench-gate-"))
    try:
        base, head = sides.prepare(base_ref, work), sides.prepare(head_ref, work)
        sides.check_distinct(base, head)
        base_id, head_id = build_side(base, say), build_side(head, say)
        offline = _offline_pass(base, head, traces, out / "offline", options, say) if options.offline else {}
        measuring = time.monotonic()  # the budget covers the measurement: the probe and the rounds
        noise = HostNoise()
        rates = probe_rates(base.engine, traces, out / CAMPAIGNS_DIR / "probe", options, say, stream, noise)
        run = _measure(base, head, base_id, head_id, traces, rates, offline, out, options, measuring, say, stream,
                       noise)
        run.doc = run.doc.model_copy(update={"wall_s": round(time.monotonic() - started, 1)})
        return run
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _with_dirs(options: GateOptions) -> GateOptions:
    from dataclasses import replace

    return replace(options, state_dir=options.state_dir or settings.state_dir(),
                   cache_dir=options.cache_dir or settings.cache_dir())


def _offline_pass(base: sides.Side, head: sides.Side, traces: list[tuple[str, str, Path]], out: Path,
                  options: GateOptions, log: Log) -> dict[str, tuple[OfflineRead, OfflineRead]]:
    from idsbench.sensors import registry
    from idsbench.sensors.suricata import Suricata

    reads: dict[str, tuple[OfflineRead, OfflineRead]] = {}
    engines = {}
    for side in (base, head):
        engine = registry.engine(side.engine)
        if not isinstance(engine, Suricata):
            raise SpecError(f"{side.ref.label} {side.engine} is not a Suricata engine.", fix=sides.FIX_SIDE)
        engines[side.ref.label] = (engine, engine.resolve_rules(list(options.rules)))
    for label, _, path in traces:
        pair = []
        for side in (base, head):
            engine, rules = engines[side.ref.label]
            pair.append(read_offline(engine, path, rules, out / f"{side.ref.label.lower()}-{label}"))
        reads[label] = (pair[0], pair[1])
        diff = diffs.alerts_diff(label, pair[0].alerts, pair[1].alerts)
        log(f"gate: offline {label}: base {sum(pair[0].alerts.values())} alerts, head "
            f"{sum(pair[1].alerts.values())}; {len(diff)} signature(s) differ")
    return reads


def _measure(base: sides.Side, head: sides.Side, base_id: sides.Identity, head_id: sides.Identity,
             traces: list[tuple[str, str, Path]], rates: dict[str, float],
             offline: dict[str, tuple[OfflineRead, OfflineRead]], out: Path, options: GateOptions,
             started: float, log: Log, stream: TextIO, noise: HostNoise) -> GateRun:
    camp = out / CAMPAIGNS_DIR
    heads = {label: Arm("head", label, ref, camp / f"head-{label}", [base.engine, head.engine], rates[label])
             for label, ref, _ in traces}
    aas = {label: Arm("aa", label, ref, camp / f"aa-{label}", [base.engine], rates[label])
           for label, ref, _ in traces}
    judged: dict[str, Judgement] = {label: judge([], options.threshold_pct, min_samples=options.min_samples)
                                    for label in heads}
    aa_j = judge([], options.threshold_pct, min_samples=options.min_samples)
    rounds, round_s = 0, None
    aa_used: list[str] = []
    while True:
        decision = next_round(judged, rounds, min_rounds=options.min_rounds, max_rounds=options.max_rounds,
                              elapsed_s=time.monotonic() - started, budget_s=options.budget_s, round_s=round_s,
                              decide_at_pct=options.decide_at_pct)
        if not decision.go:
            log(f"gate: stopped after {rounds} round(s): {decision.reason}")
            break
        t0 = time.monotonic()
        aa_label = list(heads)[rounds % len(heads)]
        log(f"gate: round {rounds + 1}: {', '.join(decision.traces)} + A/A on {aa_label} ({decision.reason})")
        for label in decision.traces:
            _run_round(heads[label], options, log, stream, noise)
        _run_round(aas[aa_label], options, log, stream, noise)
        if aa_label not in aa_used:
            aa_used.append(aa_label)
        rounds += 1
        for label in decision.traces:
            ratios, _ = _ratios(load_campaign(heads[label].out))
            judged[label] = judge(ratios, options.threshold_pct, min_samples=options.min_samples)
        aa_ratios = [r for lab in aa_used for r in _ratios(load_campaign(aas[lab].out))[0]]
        aa_j = judge(aa_ratios, options.threshold_pct, min_samples=options.min_samples)
        round_s = time.monotonic() - t0
        for label in decision.traces:
            j = judged[label]
            log(f"gate:   {label}: {_show(j)}")
        log(f"gate:   A/A: {_show(aa_j)}; round took {round_s:.0f} s")
    return _conclude(base_id, head_id, heads, aas, aa_used, judged, aa_j, offline, out, options, rounds,
                     time.monotonic() - started)


def _show(j: Judgement) -> str:
    if j.effect_pct is None:
        return f"{j.verdict} ({j.reason})"
    ci = j.ci_pct
    ci_text = f" [{ci[0]:+.2f}%, {ci[1]:+.2f}%]" if ci else ""
    return f"{j.effect_pct:+.2f}%{ci_text}, n={j.samples}: {j.verdict}"


def _conclude(base_id: sides.Identity, head_id: sides.Identity, heads: dict[str, Arm], aas: dict[str, Arm],
              aa_used: list[str], judged: dict[str, Judgement], aa_j: Judgement,
              offline: dict[str, tuple[OfflineRead, OfflineRead]], out: Path, options: GateOptions, rounds: int,
              wall_s: float) -> GateRun:
    verdict, reason = overall(list(judged.values()), aa_j)
    alerts: list[AlertDoc] = []
    events: list[EventDoc] = []
    for label, (b, h) in offline.items():
        alerts += [AlertDoc(sid=d.sid, base=d.base, head=d.head, trace=d.trace) for d in diffs.alerts_diff(label, b.alerts, h.alerts)]
        events += [EventDoc(event_type=d.event_type, base=d.base, head=d.head, trace=d.trace)
                   for d in diffs.events_diff(label, b.events, h.events)]
    aa_pairs = []
    for label in aa_used:
        s = _side_samples(load_campaign(aas[label].out))
        aa_pairs += list(zip(s.counters["a"], s.counters["b"], strict=False))
    spreads = diffs.aa_spreads(aa_pairs)
    counters: list[CounterDoc] = []
    resources: list[ResourceDoc] = []
    traces: list[TraceDoc] = []
    campaigns = []
    notes = list(options.extra_notes)
    for label, arm in heads.items():
        if not (arm.out / CAMPAIGN_FILE).is_file():
            continue
        campaign = load_campaign(arm.out)
        campaigns.append(arm.out)
        s = _side_samples(campaign)
        counters += [CounterDoc(counter=d.counter, base=d.base, head=d.head, ratio=d.ratio, trace=d.trace,
                                aa_spread=round(d.aa_spread, 6))
                     for d in diffs.counters_diff(label, s.counters["a"], s.counters["b"], spreads)]
        for metric, values in (("rule_load_s", s.ready_s), ("peak_rss_bytes", s.rss_peak)):
            d = diffs.resource_diff(label, metric, values["a"], values["b"])
            resources.append(ResourceDoc(metric=metric, base=d.base, head=d.head, ratio=d.ratio, trace=label))
        j = judged[label]
        _, exact = _ratios(campaign)
        traces.append(TraceDoc(trace=label, ratio=j.ratio, ratio_ci=_ci_list(j.ratio_ci), ci_level=round(j.ci_level, 4),
                               verdict=j.verdict, samples=j.samples, samples_needed=j.samples_needed,
                               effect_pct=None if j.effect_pct is None else round(j.effect_pct, 4), reason=j.reason,
                               rate_pps=arm.rate_pps, exact=exact))
        if arm.failures:
            notes.append(f"{label}: {len(arm.failures)} sample(s) not ok ({'; '.join(arm.failures[:3])}): "
                         "lost packets at this load say to give a lower --rate")
    campaigns += [aas[label].out for label in aa_used]
    alert_changed = bool(alerts)
    status = exit_status(verdict, alert_changed, allow_alert_changes=options.allow_alert_changes)
    if not options.offline:
        notes.append("alerts and event types were not compared (no offline pass)")
    doc = GateDoc(
        verdict=verdict, exit_status=status, reason=reason, threshold_pct=options.threshold_pct,
        noise_floor_pct=None if aa_j.half_width_pct is None else round(aa_j.half_width_pct, 4),
        base=_side_doc(base_id), head=_side_doc(head_id), traces=traces, alerts_diff=alerts, counters_diff=counters,
        events_diff=events, resources=resources,
        aa=AADoc(ratio=aa_j.ratio, ratio_ci=_ci_list(aa_j.ratio_ci), ci_level=round(aa_j.ci_level, 4),
                 verdict=aa_j.verdict, samples=aa_j.samples),
        rounds=rounds, wall_s=round(wall_s, 1), measure_s=round(wall_s, 1), budget_s=options.budget_s,
        allow_alert_changes=options.allow_alert_changes,
        campaigns=[str(p.relative_to(out)) for p in campaigns], notes=notes)
    return GateRun(doc, campaigns)
