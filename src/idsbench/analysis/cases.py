"""Per-case summary: medians over a case's `ok` samples of the per-sample figures, with CIs of the
median at the coverage the sample count actually reaches, verdict counts and warnings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property

from idsbench.analysis.engines import case_engine_figures
from idsbench.analysis.hostside import host_side_fields
from idsbench.analysis.sample import METRICS, SampleFigures, median_witness_rate, sample_figures
from idsbench.analysis.search import search_fields
from idsbench.analysis.stats import ci_coverage, cv, median, median_ci
from idsbench.errors import IdsbenchError
from idsbench.probe.noise import NOISY_LABEL, noise_exceeds
from idsbench.store.reader import Campaign, CaseInfo, SampleRecord, read_probe
from idsbench.store.schema import PHASES, CaseResult, GroundTruth, SampleStamp, SearchResult, phase_seconds

# Metrics whose spread across samples is checked (counts that are fixed by the plan are not).
CV_CHECKED = ("sent_pkts", "decoded_pkts", "dropped_pkts", "drop_ratio", "sensor_cpu_pct",
              "sensor_rss_peak_bytes", "host_cpu_pct", "stable_after_s")
DEFAULT_CV_THRESHOLD = 0.10
MIN_DROP_RATIO_FOR_CV = 0.001  # below 0.1% drops, relative spread of drops is noise
REQUESTED_LEVEL = 0.95
REASON_CHARS = 320  # a failed sample's reason in a case's warning (the sample's summary keeps it whole)


@dataclass(frozen=True)
class CaseSamples:
    """A case, the `ok` samples its medians are taken over, and the others by verdict."""

    info: CaseInfo
    used: tuple[SampleRecord, ...]
    failed: tuple[SampleRecord, ...]
    incomplete: int
    settle_s: float
    truth: GroundTruth | None = None
    search: SearchResult | None = None
    noisy: bool = False   # the host was noisier than the precision asked when the campaign started
    witness_rate: float | None = None  # the campaign's median host-speed witness rate (host_speed = 1.0)

    @cached_property
    def figures(self) -> list[SampleFigures]:
        return [sample_figures(s, self.settle_s, self.truth, self.witness_rate) for s in self.used]

    @cached_property
    def failed_figures(self) -> list[SampleFigures]:
        """The not-ok samples' figures (samples table only: medians never take them)."""
        return [sample_figures(s, self.settle_s, self.truth, self.witness_rate) for s in self.failed]

    def column(self, metric: str) -> list[float | None]:
        return [f.get(metric) for f in self.figures]


def case_samples(campaign: Campaign) -> list[CaseSamples]:
    out = []
    settle = campaign.doc.settle_s
    noisy = host_was_noisy(campaign)
    rate = median_witness_rate(s.summary for s in campaign.samples)
    for info in campaign.cases:
        complete = campaign.samples_of(info.case_id)
        ok = tuple(s for s in complete if s.status == "ok")
        failed = tuple(s for s in complete if s.status != "ok")
        out.append(CaseSamples(info, ok, failed, len(campaign.incomplete_of(info.case_id)), settle,
                               campaign.truths.get(info.case_id), campaign.searches.get(info.case_id), noisy, rate))
    return out


def host_was_noisy(campaign: Campaign) -> bool:
    """The stored host probe's quietness figures exceed the campaign's precision (`search.precision`)."""
    try:
        probe = read_probe(campaign.root)
    except IdsbenchError:  # none stored (older campaigns) or unreadable: no claim either way
        return False
    return bool(noise_exceeds(probe.noise, campaign.doc.spec.search.precision))


def case_table(campaign: Campaign, groups: list[CaseSamples] | None = None, *,
               cv_threshold: float = DEFAULT_CV_THRESHOLD, level: float = REQUESTED_LEVEL) -> list[CaseResult]:
    """One CaseResult per case (docs/results.md, "Analysis"); `groups`: its case_samples, if at hand."""
    return [with_engine_figures(campaign, cs, case_result(cs, cv_threshold, level), level)
            for cs in (case_samples(campaign) if groups is None else groups)]


def with_engine_figures(campaign: Campaign, cs: CaseSamples, result: CaseResult,
                        level: float = REQUESTED_LEVEL) -> CaseResult:
    """`result` plus its engine's rule share and alerts on the rules every engine loaded (`engines`), for the
    ruleset the case ran with."""
    params = cs.info.params
    return result.model_copy(update={"engines": case_engine_figures(campaign.doc, params.engine, cs.used, level,
                                                                    ruleset=params.rules)})


def case_result(cs: CaseSamples, cv_threshold: float = DEFAULT_CV_THRESHOLD,
                level: float = REQUESTED_LEVEL) -> CaseResult:
    counts = Counter(s.status for s in (*cs.used, *cs.failed))
    if cs.incomplete:
        counts["incomplete"] += cs.incomplete
    failures = sorted({s.status for s in cs.failed})
    if cs.used:
        status = "ok"
    elif failures:
        status = ",".join(failures)
    else:
        status = "incomplete"
    return CaseResult(
        case=cs.info.case_id, params=cs.info.params, samples=len(cs.used),
        medians={m: median(cs.column(m)) for m in METRICS},
        cis={m: median_ci(cs.column(m), level) for m in METRICS},
        values={m: tuple(cs.column(m)) for m in METRICS},
        value_samples=tuple(SampleStamp(index=s.index, start_unix=s.start_unix or s.summary.started_unix)
                            for s in cs.used),
        ci_level=ci_coverage(len(cs.used), level) if cs.used else 0.0,
        status=status, status_counts=dict(sorted(counts.items())),
        labels=tuple(sorted({lab for s in cs.used for lab in s.summary.labels} | ({NOISY_LABEL} if cs.noisy else set()))),
        samples_failed=len(cs.failed), samples_incomplete=cs.incomplete,
        warnings=tuple(_warnings(cs, cv_threshold)),
        pairs=tuple(sorted({s.summary.pair for s in (cs.used or cs.failed) if s.summary.pair})),
        degraded_sensor=degraded_medians(cs), phases=phase_medians(cs), search=search_fields(cs.search),
        engine_version=engine_version(cs), alerts_by_sid=alert_medians(cs), sensor_threads=sensor_threads(cs),
        recall_excluded_sids=dict(cs.truth.excluded_sids) if cs.truth is not None else {},
        host_side=host_side_fields(cs.used), **capture_fields(cs),
    )


def capture_fields(cs: CaseSamples) -> dict[str, object]:
    """`capture`, `capture_options` (as the first sample that recorded them ran) and `capture_drops`: per
    drop point of the method, its median over the ok samples (idsbench.capture); `bypass` and its
    `bypass_settings` as the first sample that recorded one ran (idsbench.bypass)."""
    sensors = [s.summary.sensor for s in (*cs.used, *cs.failed)]
    byp = next((s for s in sensors if s.bypass is not None), None)
    bypass = {"bypass": byp.bypass, "bypass_settings": dict(byp.bypass_settings)} if byp is not None else {}
    recorded = [s for s in sensors if s.capture]
    if not recorded:
        return {"capture": cs.info.params.capture, **bypass}
    names = sorted({k for s in cs.used for k in s.summary.sensor.capture_drops})
    drops = {n: median([s.summary.sensor.capture_drops.get(n, 0) for s in cs.used]) for n in names}
    return {"capture": recorded[0].capture, "capture_options": dict(recorded[0].capture_options),
            "capture_drops": drops, **bypass}


def phase_medians(cs: CaseSamples) -> dict[str, float]:
    """`phases`: per phase of the sample timeline (store.schema.PHASES), its median seconds over the ok
    samples that recorded one (summaries before schema 3 have none: {})."""
    timed = [phase_seconds(s.summary.phases) for s in cs.used if s.summary.phases]
    out: dict[str, float] = {}
    for name in PHASES:
        value = median([t.get(name, 0.0) for t in timed])
        if value is not None:
            out[name] = round(value, 3)
    return out


def sensor_threads(cs: CaseSamples) -> int | None:
    """The worker threads the case's sensor ran: what it reported (its log), else what it was asked
    (`placement.sensor_workers`); the most common over the ok samples (else over all). None: unknown
    (samples from before sensor.threads, an engine that did not say)."""
    counts = Counter(s.summary.sensor.threads or (s.summary.placement.sensor_workers if s.summary.placement else None)
                     for s in (cs.used or cs.failed))
    counts.pop(None, None)
    return counts.most_common(1)[0][0] if counts else None


def engine_version(cs: CaseSamples) -> str | None:
    """What the case's sensor binary reported as its version (`engine_version`; `engine` is the spec's name)."""
    return next((s.summary.sensor.version for s in (*cs.used, *cs.failed) if s.summary.sensor.version), None)


def degraded_medians(cs: CaseSamples) -> dict[str, float | None]:
    """`degraded_sensor`: per degraded counter (memcaps, emergency modes, gaps), its median over the
    ok samples (a sample without it counts 0)."""
    names = sorted({k for s in cs.used for k in s.summary.sensor.degraded})
    return {n: median([s.summary.sensor.degraded.get(n, 0) for s in cs.used]) for n in names}


def alert_medians(cs: CaseSamples) -> dict[int, float]:
    """`alerts_by_sid`: per signature, the median of its alerts over the ok samples (a sample that did not
    raise it counts 0)."""
    sids = sorted({sid for s in cs.used for sid in s.summary.sensor.alerts_by_sid})
    out: dict[int, float] = {}
    for sid in sids:
        value = median([s.summary.sensor.alerts_by_sid.get(sid, 0) for s in cs.used])
        if value is not None:
            out[sid] = value
    return out


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _warnings(cs: CaseSamples, threshold: float) -> list[str]:
    case_id = cs.info.case_id
    out: list[str] = []
    if cs.failed:
        reasons = "; ".join(sorted({_clip(f"{s.status}: {s.summary.reason or 'no reason recorded'}", REASON_CHARS)
                                    for s in cs.failed}))
        out.append(f"case {case_id}: {len(cs.failed)} sample(s) not ok ({reasons}); medians use the ok "
                   "samples only.")
    if not cs.used:
        out.append(f"case {case_id} has no ok sample; its medians are empty. Fix the cause above and "
                   "re-run it (delete its sample directories, then `idsbench run SPEC --out DIR --resume`).")
        return out
    if cs.incomplete:
        out.append(f"case {case_id}: {cs.incomplete} sample(s) incomplete; complete them with --resume.")
    asked = {s.summary.placement.sensor_workers for s in cs.used if s.summary.placement}
    ran = {t for t in (s.summary.sensor.threads for s in cs.used) if t is not None}
    if len(asked) == 1 and None not in asked and ran and ran != asked:
        out.append(f"case {case_id}: the sensor ran {', '.join(map(str, sorted(ran)))} worker thread(s), "
                   f"{asked.pop()} were asked (an engine setting in sensor.set or the config overlay names "
                   "its threads?)")
    if cs.truth is not None and cs.truth.excluded_sids:
        whys = sorted(set(cs.truth.excluded_sids.values()))
        out.append(f"case {case_id}: alert_recall leaves out sid(s) {', '.join(map(str, cs.truth.excluded_sids))}, "
                   f"which only the offline ground truth can fire ({'; '.join(whys)})")
    noisy = []
    drops = median(cs.column("drop_ratio")) or 0.0
    for key in CV_CHECKED:
        if key in ("dropped_pkts", "drop_ratio") and drops < MIN_DROP_RATIO_FOR_CV:
            continue
        spread = cv(cs.column(key))
        if spread is not None and spread > threshold:
            noisy.append(f"{key} (CV {spread:.0%})")
    if noisy:
        n = len(cs.used)
        out.append(f"case {case_id}: its {n} samples disagree on {', '.join(noisy)} (threshold "
                   f"{threshold:.0%}); run more samples (e.g. samples = {max(2 * n, 10)} in the spec) "
                   "or find what disturbs the host.")
    for s in cs.used:
        out.extend(f"{case_id}/s{s.index}: {w}" for w in s.summary.warnings)
    return out
