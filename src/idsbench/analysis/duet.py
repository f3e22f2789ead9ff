"""Duet results: the paired cost ratio b/a per sample, its CI over samples (and the spread over
seconds within each sample), the position asymmetry the swaps cancel, and the verdict.

- Per sample: each side's CPU µs per packet = what its isolation cost the host over the common span
  (replay start → both drained, run/duet/session.py: its cgroup, and its setup's host processes outside
  it, `DuetSideRecord.cost_s`) / the packets it decoded; the ratio = b / a. Only samples whose two sides
  are both `ok` count. Beside it, per sample: the loss difference b − a in percentage points, the memory
  ratio b/a (each cgroup's peak) and the host's softirq time over the span per packet sent — what neither
  side is charged for (`duet_unattributed_us_per_pkt`, run/duet/hostcost.py).
- The pair: the median of the per-sample ratios and its order-statistic CI (a one-sample problem:
  [x(k), x(n+1-k)], `stats.median_ci`; with 6 samples min..max at 96.9%, `ci_level`).
- Verdict (`ratio_effect`), the rules of `compare` (analysis/effect.py) on the ratio's CI, with
  m = min_effect_pct: `same` when the CI lies within 1 ± m%; `higher`/`lower` when it excludes 1 and
  the median is at least m% off; else `inconclusive` with the samples that would settle it (the CI's
  half-width shrinking as 1/√n). No verdict while the CI's coverage is below the level asked (95%: 6
  samples; with 2 it is min..max at 50%): `inconclusive`, at least `effect.samples_for(level)` samples.
  With `[duet] precision` asked and the CI's half-width wider than it, a `same` or `inconclusive` is
  `inconclusive` with the samples the precision needs; a side labelled `emulated` (a VM under TCG) makes
  the verdict `emulated`: its figures are shown, never judged.
- Per second: the pair's monitor reads both cgroups' CPU and both capture interfaces each interval;
  a second's ratio = (b's CPU / b's packets received) / (a's CPU / a's packets), over the replay.
- Position effect (slot 1 / slot 0 cost): with r₀ the median ratio of unswapped samples (a in slot 0)
  and r₁ of swapped ones, √(r₀ / r₁): the method's asymmetry, which the swaps cancel in the ratio; an
  A/A duet measures it directly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import JsonValue

from idsbench.analysis.effect import DEFAULT_MIN_EFFECT_PCT, LEVEL, MAX_SAMPLES_NEEDED, Effect, judged, samples_for
from idsbench.analysis.stats import ci_coverage, median, median_ci
from idsbench.spec.duet import axis_field
from idsbench.store.casefigures import Row
from idsbench.store.duet import DuetSampleRecord, DuetSideRecord, duet_samples, pair_monitor
from idsbench.store.reader import Campaign
from idsbench.store.schema import CaseResult, SearchResult, ToleranceResult

MIN_SECOND_S = 0.5        # monitor intervals shorter than this are left out of the per-second ratios
MIN_SECOND_SHARE = 0.5    # … and those whose packets are below half the median interval's (replay edges)


def ratio_effect(ratios: Sequence[float | None], *, min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT,
                 level: float = 0.95) -> Effect:
    """The verdict on paired ratios b/a (one per sample): effect = median − 1 (%), its CI from the
    order-statistic CI of the median."""
    vals = [float(r) for r in ratios if r is not None and math.isfinite(r) and r > 0]
    if not vals:
        return Effect(None, None, "n/a", level=level, min_effect_pct=min_effect_pct)
    mid = median(vals)
    assert mid is not None
    point = (mid - 1.0) * 100.0
    if len(vals) < 2:
        return Effect(point, None, "inconclusive", samples_for(level), level=ci_coverage(len(vals), level),
                      min_effect_pct=min_effect_pct)
    lo, hi = median_ci(vals, level) or (mid, mid)
    ci = ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0)
    m = min_effect_pct
    target = m - abs(point) if abs(point) < m else abs(point)
    half = (ci[1] - ci[0]) / 2
    need = MAX_SAMPLES_NEEDED if target <= 0 else math.ceil(len(vals) * (half / target) ** 2)
    needed = int(min(MAX_SAMPLES_NEEDED, max(need, len(vals) + 1)))
    # the order-statistic CI's own coverage (min..max of 2 samples: 50%): no verdict below the level asked
    return judged(point, ci, None, ci_coverage(len(vals), level), level, m, needed)


def per_second_ratios(rows: Sequence[dict[str, float | None]], start_unix: float, end_unix: float) -> list[float]:
    """Each monitor interval's ratio b/a of CPU per packet received, for intervals ending inside the
    replay [start, end] (monitor rows `t_unix`, `<side>_sensor_cpu_pct`, `<side>_sensor_rx_pkts`)."""
    steps = []
    for prev, cur in zip(rows, rows[1:]):
        t0, t1 = prev.get("t_unix"), cur.get("t_unix")
        if t0 is None or t1 is None or not start_unix < t1 <= end_unix + 0.05 or t1 - t0 < MIN_SECOND_S:
            continue
        pkts = {s: _delta(prev, cur, f"{s}_sensor_rx_pkts") for s in ("a", "b")}
        cpu = {s: cur.get(f"{s}_sensor_cpu_pct") for s in ("a", "b")}
        if any(v is None or v <= 0 for v in (*pkts.values(), *cpu.values())):
            continue
        steps.append((min(p for p in pkts.values() if p is not None),
                      (cpu["b"] or 0.0) / (pkts["b"] or 1) / ((cpu["a"] or 0.0) / (pkts["a"] or 1))))
    typical = median([p for p, _ in steps])
    return [r for p, r in steps if typical is None or p >= MIN_SECOND_SHARE * typical]


def _delta(prev: dict[str, float | None], cur: dict[str, float | None], key: str) -> float | None:
    a, b = prev.get(key), cur.get(key)
    return None if a is None or b is None else b - a


@dataclass(frozen=True)
class DuetSampleFigures:
    index: int
    swapped: bool
    status: str                       # ok when both sides are ok (and counted by the reader)
    exact: bool                       # both sides exact: no loss, decoded = sent
    a_us_per_pkt: float | None
    b_us_per_pkt: float | None
    ratio: float | None               # b / a
    seconds: tuple[float, ...]        # the per-second ratios over the replay
    second_median: float | None
    second_ci: tuple[float, float] | None
    a_loss_pct: float | None = None   # each side's loss (% of the packets sent)
    b_loss_pct: float | None = None
    a_mem_bytes: int | None = None    # each side's peak memory
    b_mem_bytes: int | None = None
    unattributed_us_per_pkt: float | None = None  # softirq time of every CPU over the span / packets sent

    @property
    def loss_diff_pp(self) -> float | None:
        return None if self.a_loss_pct is None or self.b_loss_pct is None else self.b_loss_pct - self.a_loss_pct

    @property
    def mem_ratio(self) -> float | None:
        return self.b_mem_bytes / self.a_mem_bytes if self.a_mem_bytes and self.b_mem_bytes else None


@dataclass(frozen=True)
class DuetSearchFigures:
    """A duet search's pair figures (search/duet.py): each side's NDR (median over repeats) and
    conditional throughput with its CI, and the NDR ratio b/a — per repeat (both sides' NDRs come from
    the same repeat's shared trials), their median and CI: the order-statistic CI over repeats with 2 or
    more (`ci_kind` "repeats", its level), else the range the one search's relevant bounds allow
    ([b lower / a upper, b upper / a lower], `ci_kind` "bounds", no level)."""

    a_ndr_pps: float | None
    b_ndr_pps: float | None
    ratios: tuple[float | None, ...]
    ratio: float | None
    ratio_ci: tuple[float, float] | None
    ci_level: float | None
    ci_kind: str | None
    a_conditional_pps: float | None
    b_conditional_pps: float | None
    a_conditional_ci: tuple[float, float] | None
    b_conditional_ci: tuple[float, float] | None
    conditional_ratio: float | None


def _ndr_goal(result: SearchResult, repeat: int | None = None) -> ToleranceResult | None:
    results = result.results if repeat is None else result.repeats[repeat].results
    return next((r for r in results if r.tolerance == 0), None)


def search_figures(a: SearchResult | None, b: SearchResult | None) -> DuetSearchFigures | None:
    """The pair's search figures from both sides' search results (None: the pair was not searched)."""
    if a is None or b is None or a.axis == "cpus":
        return None
    n = min(len(a.repeats), len(b.repeats))
    ratios = tuple(rb / ra if ra and rb else None
                   for ra, rb in ((a.repeats[k].ndr_pps, b.repeats[k].ndr_pps) for k in range(n)))
    known = [r for r in ratios if r is not None]
    ga, gb = _ndr_goal(a), _ndr_goal(b)
    ratio = median(known) if known and len(known) == len(ratios) else None
    ci: tuple[float, float] | None = None
    level: float | None = None
    kind: str | None = None
    if ratio is not None and len(known) >= 2:
        ci, level, kind = median_ci(known), ci_coverage(len(known)), "repeats"
    elif ratio is not None and ga and gb and None not in (ga.relevant_lower, ga.relevant_upper, gb.relevant_lower,
                                                          gb.relevant_upper):
        lo_a, hi_a = sorted((float(ga.relevant_lower or 0), float(ga.relevant_upper or 0)))
        lo_b, hi_b = sorted((float(gb.relevant_lower or 0), float(gb.relevant_upper or 0)))
        if lo_a > 0 and hi_a > 0:
            ci, kind = (lo_b / hi_a, hi_b / lo_a), "bounds"

    def conditional(r: SearchResult) -> list[float | None]:
        return [g.conditional_pps if (g := _ndr_goal(r, k)) else None for k in range(len(r.repeats))]

    ca, cb = conditional(a), conditional(b)
    mid_a = ga.conditional_pps if ga else None
    mid_b = gb.conditional_pps if gb else None
    return DuetSearchFigures(
        a_ndr_pps=ga.value_pps if ga else None, b_ndr_pps=gb.value_pps if gb else None, ratios=ratios, ratio=ratio,
        ratio_ci=ci, ci_level=level, ci_kind=kind, a_conditional_pps=mid_a, b_conditional_pps=mid_b,
        a_conditional_ci=median_ci(ca) if len(ca) >= 2 and None not in ca else None,
        b_conditional_ci=median_ci(cb) if len(cb) >= 2 and None not in cb else None,
        conditional_ratio=mid_b / mid_a if mid_a and mid_b else None)


@dataclass(frozen=True)
class DuetResult:
    pair_id: str
    axis: str | None                  # the side axis that differs; None: A/A
    a_case: str
    b_case: str
    a_value: str | None               # the axis's value on each side
    b_value: str | None
    samples: tuple[DuetSampleFigures, ...]
    ratio: float | None               # median of the per-sample ratios
    ratio_ci: tuple[float, float] | None
    ci_level: float
    effect: Effect
    position: float | None            # slot 1 / slot 0 cost (the method's asymmetry)
    placement: str
    mirror: str
    search: DuetSearchFigures | None = None   # a duet search's pair figures (its verification is sample s0)
    ref: str | None = None            # side a's value of the side axis: the reference
    cell: dict[str, JsonValue] = field(default_factory=dict)  # the matrix's other axes' values
    labels: tuple[str, ...] = ()      # either side's setup labels ("emulated": never judged)
    precision: float | None = None    # [duet] precision asked (relative CI half-width)
    replay_s: float | None = None     # each sample's replay length (a precision plan's), None: the spec's

    def _ok(self) -> list[DuetSampleFigures]:
        return [s for s in self.samples if s.ratio is not None]

    @property
    def loss_diffs(self) -> list[float]:
        return [d for s in self._ok() if (d := s.loss_diff_pp) is not None]

    @property
    def loss_diff_pp(self) -> float | None:
        return median(self.loss_diffs)

    @property
    def loss_diff_ci(self) -> tuple[float, float] | None:
        return median_ci(self.loss_diffs) if len(self.loss_diffs) >= 2 else None

    @property
    def mem_ratio(self) -> float | None:
        return median([s.mem_ratio for s in self._ok()])

    @property
    def unattributed_us_per_pkt(self) -> float | None:
        return median([s.unattributed_us_per_pkt for s in self._ok()])

    def side_median(self, key: str) -> float | None:
        """The median over ok samples of a per-sample absolute figure (`a_us_per_pkt`, `b_loss_pct` …)."""
        return median([getattr(s, key) for s in self._ok()])

    @property
    def half_width(self) -> float | None:
        """The ratio CI's relative half-width (the wider side)."""
        if self.ratio is None or self.ratio_ci is None or self.ratio <= 0:
            return None
        return max(self.ratio - self.ratio_ci[0], self.ratio_ci[1] - self.ratio) / self.ratio

    @property
    def emulated(self) -> bool:
        return "emulated" in self.labels

    @property
    def verdict(self) -> str:
        """The pair's verdict: the effect's, `emulated` for an emulated side, `inconclusive` while the
        precision asked is not reached (unless the CI already excludes 1)."""
        if self.emulated:
            return "emulated"
        v = self.effect.verdict if self.effect.verdict != "n/a" else "inconclusive"
        if self.precision is not None and v in ("same", "inconclusive") and not self.precise:
            return "inconclusive"
        return v

    @property
    def precise(self) -> bool:
        hw = self.half_width
        return self.precision is not None and hw is not None and hw <= self.precision

    @property
    def samples_needed(self) -> int | None:
        """The samples that would settle an inconclusive pair (at its samples' length)."""
        hw = self.half_width
        if self.precision is not None and hw is not None and not self.precise and self.verdict == "inconclusive":
            return math.ceil(self.n * (hw / self.precision) ** 2)
        return self.effect.samples_needed

    @property
    def n(self) -> int:
        return sum(1 for s in self.samples if s.ratio is not None)

    @property
    def exact(self) -> int:
        return sum(1 for s in self.samples if s.exact)

    @property
    def seconds(self) -> list[float]:
        return [r for s in self.samples for r in s.seconds]


def _us(cpu_s: float | None, pkts: int) -> float | None:
    return cpu_s / pkts * 1e6 if cpu_s is not None and cpu_s > 0 and pkts > 0 else None


def _loss_pct(side: DuetSideRecord | None) -> float | None:
    return side.lost_pkts / side.sent_pkts * 100.0 if side is not None and side.sent_pkts > 0 else None


def sample_figures(campaign: Campaign, rec: DuetSampleRecord) -> DuetSampleFigures:
    a, b = rec.side("a"), rec.side("b")
    ok_samples = {(s.case_id, s.index) for s in campaign.samples if s.status == "ok"}
    both_ok = a is not None and b is not None and all((s.case_id, rec.sample) in ok_samples for s in (a, b))
    us_a = _us(a.cost_s, a.processed_pkts) if a else None
    us_b = _us(b.cost_s, b.processed_pkts) if b else None
    sent = a.sent_pkts if a else 0
    unattributed = sum(rec.softirq_s) / sent * 1e6 if rec.softirq_s is not None and sent > 0 else None
    ratio = us_b / us_a if both_ok and us_a and us_b else None
    seconds: list[float] = []
    if both_ok and rec.span_start_unix is not None:
        end = _replay_end(campaign, a.case_id if a else "", rec.sample) or rec.span_end_unix or rec.span_start_unix
        seconds = per_second_ratios(pair_monitor(campaign.root, rec.pair_id, rec.sample), rec.span_start_unix, end)
    return DuetSampleFigures(
        index=rec.sample, swapped=rec.swapped, status="ok" if both_ok else (rec.status if rec.status != "ok" else "incomplete"),
        exact=both_ok and bool(a and b and a.exact and b.exact), a_us_per_pkt=us_a, b_us_per_pkt=us_b, ratio=ratio,
        seconds=tuple(seconds), second_median=median(seconds), second_ci=median_ci(seconds),
        a_loss_pct=_loss_pct(a), b_loss_pct=_loss_pct(b), a_mem_bytes=a.mem_peak_bytes if a else None,
        b_mem_bytes=b.mem_peak_bytes if b else None, unattributed_us_per_pkt=unattributed)


def _replay_end(campaign: Campaign, case_id: str, index: int) -> float | None:
    for s in campaign.samples:
        if s.case_id == case_id and s.index == index and s.summary.replay is not None:
            return s.summary.replay.end_unix
    return None


def position_effect(samples: Sequence[DuetSampleFigures]) -> float | None:
    """√(median ratio unswapped / median ratio swapped): slot 1's cost over slot 0's."""
    r0 = median([s.ratio for s in samples if not s.swapped])
    r1 = median([s.ratio for s in samples if s.swapped])
    return math.sqrt(r0 / r1) if r0 and r1 else None


def duet_results(campaign: Campaign, *, min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT,
                 level: float = LEVEL) -> list[DuetResult]:
    """Every duet pair of the campaign (none for a single-mode campaign)."""
    out = []
    for pair_id, records in duet_samples(campaign.root).items():
        if not records:
            continue
        first = records[0]
        a, b = first.side("a"), first.side("b")
        if a is None or b is None:
            continue
        figures = tuple(sample_figures(campaign, r) for r in records)
        ratios = [f.ratio for f in figures if f.ratio is not None]
        side_field = axis_field(first.axis)
        values = [_param(campaign, c, side_field) for c in (a.case_id, b.case_id)]
        labels = tuple(dict.fromkeys(label for r in records for s in r.sides for label in s.labels))
        out.append(DuetResult(
            pair_id=pair_id, axis=first.axis, a_case=a.case_id, b_case=b.case_id, a_value=values[0],
            b_value=values[1], samples=figures, ratio=median(ratios), ratio_ci=median_ci(ratios, level),
            ci_level=ci_coverage(len(ratios), level) if ratios else 0.0,
            effect=ratio_effect(ratios, min_effect_pct=min_effect_pct, level=level), position=position_effect(figures),
            placement=first.placement, mirror=first.mirror,
            search=search_figures(campaign.searches.get(a.case_id), campaign.searches.get(b.case_id)),
            ref=first.ref if first.ref is not None else values[0], cell=dict(first.cell), labels=labels,
            precision=campaign.doc.spec.duet.precision, replay_s=first.replay_s))
    return out


def _param(campaign: Campaign, case_id: str, field: str | None) -> str | None:
    if field is None:
        return None
    try:
        return str(getattr(campaign.case(case_id).params, field))
    except KeyError:
        return None


def _round(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(x, digits)


def pair_row(r: DuetResult) -> Row:
    """The results contract's pair row (`idsbench results --format json`): built only where a pair
    leaves as JSON or CSV; analysis and the text outputs read the `DuetResult`."""
    e = r.effect
    seconds = sorted(r.seconds)
    spread: list[JsonValue] | None = None
    ratios: list[JsonValue] = [_round(s.ratio) for s in r.samples]
    if len(seconds) >= 2:
        spread = [_round(seconds[int(0.05 * (len(seconds) - 1))]), _round(seconds[math.ceil(0.95 * (len(seconds) - 1))])]
    return {
        "case": r.pair_id, "duet_pair": r.pair_id, "duet_axis": r.axis, "duet_ref": r.ref, "duet_cell": dict(r.cell),
        "duet_ratio": _round(r.ratio), "duet_ratio_ci": [_round(r.ratio_ci[0]), _round(r.ratio_ci[1])] if r.ratio_ci else None,
        "duet_verdict": r.verdict,
        "duet_ratio_ci_level": round(r.ci_level, 4), "ci_level": round(r.ci_level, 4),
        "duet_effect_pct": _round(e.effect_pct, 4),
        "duet_min_effect_pct": e.min_effect_pct, "duet_samples_needed": r.samples_needed,
        "duet_loss_diff_pp": _round(r.loss_diff_pp, 4), "duet_loss_diff_ci": _pair(r.loss_diff_ci, 4),
        "duet_mem_ratio": _round(r.mem_ratio), "duet_unattributed_us_per_pkt": _round(r.unattributed_us_per_pkt, 4),
        "duet_a_us_per_pkt": _round(r.side_median("a_us_per_pkt"), 4),
        "duet_b_us_per_pkt": _round(r.side_median("b_us_per_pkt"), 4),
        "duet_a_loss_pct": _round(r.side_median("a_loss_pct"), 4), "duet_b_loss_pct": _round(r.side_median("b_loss_pct"), 4),
        "duet_a_mem_bytes": _int(r.side_median("a_mem_bytes")), "duet_b_mem_bytes": _int(r.side_median("b_mem_bytes")),
        "duet_labels": list(r.labels), "duet_precision": r.precision,
        "duet_precision_met": r.precise if r.precision is not None else None, "duet_replay_s": r.replay_s,
        "duet_samples": r.n, "duet_samples_exact": r.exact, "duet_a": r.a_case, "duet_b": r.b_case,
        "duet_a_value": r.a_value, "duet_b_value": r.b_value, "duet_position_ratio": _round(r.position),
        "duet_seconds": len(seconds), "duet_seconds_ratio_p5_p95": spread,
        "duet_ratios": ratios, "duet_placement": r.placement, "duet_mirror": r.mirror,
        "status": "ok" if r.n else "no sample with both sides ok",
        **(search_row(r.search) if r.search is not None else {}),
    }


def _int(x: float | None) -> int | None:
    return None if x is None else round(x)


def _pair(ci: tuple[float, float] | None, digits: int = 6) -> list[JsonValue] | None:
    return [_round(ci[0], digits), _round(ci[1], digits)] if ci else None


def search_row(f: DuetSearchFigures) -> Row:
    """A duet search's keys of the pair row (the contract: `duet_ndr_ratio`, `duet_ndr_ratio_ci`)."""
    ratios: list[JsonValue] = [_round(x) for x in f.ratios]
    return {
        "duet_ndr_ratio": _round(f.ratio), "duet_ndr_ratio_ci": _pair(f.ratio_ci),
        "duet_ndr_ratio_ci_level": _round(f.ci_level, 4), "duet_ndr_ratio_ci_kind": f.ci_kind,
        "duet_ndr_ratios": ratios, "duet_a_ndr_pps": _round(f.a_ndr_pps, 3), "duet_b_ndr_pps": _round(f.b_ndr_pps, 3),
        "duet_a_conditional_pps": _round(f.a_conditional_pps, 3), "duet_b_conditional_pps": _round(f.b_conditional_pps, 3),
        "duet_a_conditional_pps_ci": _pair(f.a_conditional_ci, 3), "duet_b_conditional_pps_ci": _pair(f.b_conditional_ci, 3),
        "duet_conditional_ratio": _round(f.conditional_ratio),
    }


def with_duet(campaign: Campaign, rows: Sequence[CaseResult], *,
              min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT) -> tuple[list[CaseResult], list[DuetResult]]:
    """The case rows with `duet_side`/`duet_pair` on each side's row, and every duet pair (its row:
    `pair_row`)."""
    results = duet_results(campaign, min_effect_pct=min_effect_pct)
    side_of = {case: (side, r.pair_id) for r in results for side, case in (("a", r.a_case), ("b", r.b_case))}
    out = [row.model_copy(update={"duet_side": side_of[row.case][0], "duet_pair": side_of[row.case][1]})
           if row.case in side_of else row for row in rows]
    return out, results
