"""Trends: one case over many campaigns, its changes found and explained (`idsbench trend`).

A series is one case (same case id) with one series key (store.casekey: trace, load, setup, limits,
host — the sensor's build, rules and config may change along it). Per metric its points are the
campaigns' medians with their CIs, in time order. Changes:
1. `jumpavg.classify` (FD.io CSIT's minimum-description-length grouping) splits the points, each
   given as its per-sample values, into segments of one level;
2. every boundary is then judged with the comparison's effect-size rules (analysis.effect) on the
   pooled samples of the segments on both sides: only "higher"/"lower" (CI excludes 0 and the effect
   reaches --min-effect) is a change; otherwise the two segments are merged. A change inside the noise
   or below the smallest relevant effect is never reported.
A change is a regression when the metric moved the way the registry calls worse (idsbench.metrics;
a neutral metric going down, as jumpavg names it), else a progression. `what_changed` lists the
differences between the last campaign before and the first after: build/version, rule files and
sids, config and sensor.set, host probe.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from idsbench.analysis.effect import DEFAULT_MIN_EFFECT_PCT, Effect, effect
from idsbench.analysis.stats import median, median_ci
from idsbench.analysis.values import ci_of, median_of, sample_values
from idsbench.metrics import TREND_METRICS, metric
from idsbench.store.campaigndoc import Inputs, RuleLoadInput, split_rule_load_key
from idsbench.store.casekey import SOFTWARE_PARTS, CampaignFacts, KeyedCase

__all__ = ["TREND_METRICS", "Change", "Segment", "TrendPoint", "TrendSeries", "build_series", "regression_failures",
           "segment_series", "what_changed"]



@dataclass(frozen=True)
class TrendPoint:
    campaign: str
    time: float | None                 # campaign creation, unix seconds
    value: float
    ci: tuple[float, float] | None
    samples: tuple[float, ...]
    software: dict[str, str]           # build, rules, config of this campaign (the key's software parts)


@dataclass(frozen=True)
class Segment:
    start: int                         # index of its first point
    end: int                           # one past its last point
    median: float | None
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class Change:
    at: str                            # the campaign where the new segment starts
    index: int
    kind: Literal["regression", "progression"]
    size_pct: float | None
    size_ci: tuple[float, float] | None
    before: Segment
    after: Segment
    what_changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrendSeries:
    key: dict[str, str]
    series_id: str
    metric: str
    points: tuple[TrendPoint, ...]
    segments: tuple[Segment, ...]
    changes: tuple[Change, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:  # Any: the `trend --format json` object (docs/trend.schema.json)
        m = metric(self.metric)
        return {
            "key": self.key, "series_id": self.series_id, "metric": self.metric, "unit": m.unit,
            "better": m.better,
            "points": [{"campaign": p.campaign, "time": _iso(p.time), "value": p.value,
                        "ci": list(p.ci) if p.ci else None, "samples": len(p.samples), "software": p.software}
                       for p in self.points],
            "segments": [{"start": self.points[s.start].campaign, "end": self.points[s.end - 1].campaign,
                          "points": s.end - s.start, "median": s.median, "ci": list(s.ci) if s.ci else None}
                         for s in self.segments],
            "changes": [{"at": c.at, "kind": c.kind, "size_pct": c.size_pct,
                         "size_ci": list(c.size_ci) if c.size_ci else None,
                         "before": c.before.median, "after": c.after.median, "what_changed": list(c.what_changed)}
                        for c in self.changes],
        }


def _iso(t: float | None) -> str | None:
    return None if t is None else dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")


def _values(r: KeyedCase, key: str) -> tuple[float, ...]:
    return tuple(float(v) for v in sample_values(r.result, key) if v is not None)


def _point(r: KeyedCase, key: str) -> TrendPoint | None:
    samples = _values(r, key)
    value = median_of(r.result, key)
    if value is None:
        value = median(list(samples))
    if value is None:
        return None
    software = {k: v for k, v in r.key.fields().items() if k in SOFTWARE_PARTS}
    return TrendPoint(r.campaign_id, r.created_unix, value, ci_of(r.result, key), samples or (value,), software)


def _pooled(points: Sequence[TrendPoint]) -> list[float]:
    return [v for p in points for v in p.samples]


def _segment(points: Sequence[TrendPoint], start: int, end: int) -> Segment:
    values = [p.value for p in points[start:end]]
    pooled = _pooled(points[start:end])
    return Segment(start, end, median(values), median_ci(pooled) if len(pooled) > 1 else None)


PRUNE_BITS = 30.0  # a candidate grouping this many bits longer than the best is dropped (see group_sizes)


def group_sizes(runs: Sequence[Sequence[float]], prune_bits: float | None = PRUNE_BITS) -> list[int]:
    """Sizes of jumpavg's groups of `runs` (each a point's samples), in order.

    `prune_bits=None` is `jumpavg.classify` itself, which keeps one candidate grouping per possible
    start of the last group: O(n²) (5 s for 500 points here). With `prune_bits`, a candidate whose
    description is longer than the best one's by more than that is dropped, as PELT prunes change
    points (starting a new group costs far fewer bits, so it cannot win back): 0.25 s for 500 points,
    the same groups as classify on every series of tests/unit/test_trend.py."""
    import jumpavg  # CSIT's library: imported when a trend is asked for

    if prune_bits is None:
        return [len(g) for g in jumpavg.classify([list(r) for r in runs])]
    values = [jumpavg.AvgStdevStats.for_runs(list(r)) if len(r) > 1 else float(r[0]) for r in runs]
    max_value = max(v for r in runs for v in r)
    unit = max_value / (2.0 ** 13 - 1.0)  # classify's default resolution: 12 significant bits per sample
    record = jumpavg.BitCountingGroupList(max_value=max_value, unit=unit)
    candidates: list[Any] = []
    for value in values:
        fresh = record.copy_fast().append_group_of_runs([value])
        record = fresh
        for glist in candidates:
            glist.append_run_to_to_last_group(value)
            if glist.bits < record.bits:
                record = glist
        candidates.append(fresh)
        limit = record.bits + prune_bits
        candidates = [g for g in candidates if g.bits <= limit]
    return [len(g) for g in record]


def _jumpavg_bounds(points: Sequence[TrendPoint]) -> list[int]:
    """Start indexes of jumpavg's groups (always begins with 0)."""
    runs = [list(p.samples) for p in points]
    if len(points) < 2 or len({v for r in runs for v in r}) < 2 or max(v for r in runs for v in r) <= 0:
        return [0]
    starts, at = [], 0
    for size in group_sizes(runs):
        starts.append(at)
        at += size
    return starts


def segment_series(points: Sequence[TrendPoint], min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT
                   ) -> list[tuple[int, int, Effect | None]]:
    """[(start, end, effect vs the segment before)]: jumpavg's groups, merged where the effect-size
    rules find no change. A group the rules cannot tell from the segment before (`inconclusive`: too few
    samples for the level, however large the step) joins the neighbour whose median is nearer: a lone
    first point after a step is part of the new level, not of the old one."""
    starts = _jumpavg_bounds(points) + [len(points)]
    groups = list(zip(starts[:-1], starts[1:]))
    merged: list[tuple[int, int, Effect | None]] = [(groups[0][0], groups[0][1], None)]
    pending: int | None = None  # the start of an undecided group carried into the next one
    for i, (start, end) in enumerate(groups[1:], start=1):
        start = start if pending is None else pending
        pending = None
        prev_start, prev_end, prev_effect = merged[-1]
        e = effect(_pooled(points[prev_start:prev_end]), _pooled(points[start:end]), min_effect_pct=min_effect_pct)
        if e.verdict in ("higher", "lower"):
            merged.append((start, end, e))
        elif e.verdict == "inconclusive" and i + 1 < len(groups) and _nearer_next(points, (prev_start, prev_end),
                                                                                   (start, end), groups[i + 1]):
            pending = start
        else:
            merged[-1] = (prev_start, end, prev_effect)
    return merged


def _nearer_next(points: Sequence[TrendPoint], before: tuple[int, int], group: tuple[int, int],
                 after: tuple[int, int]) -> bool:
    """True when `group`'s median is nearer the next group's than the segment's before it."""
    def mid(span: tuple[int, int]) -> float:
        return median([p.value for p in points[span[0]:span[1]]]) or 0.0

    m = mid(group)
    return abs(mid(after) - m) < abs(m - mid(before))


def _kind(key: str, e: Effect) -> Literal["regression", "progression"]:
    better = metric(key).better
    if better == "neutral":
        return "regression" if e.verdict == "lower" else "progression"
    return "progression" if e.verdict == better else "regression"


Explain = Callable[[str, str], list[str]]


def build_series(cases: Iterable[KeyedCase], metrics: Sequence[str] = TREND_METRICS, *,
                 min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT, explain: Explain | None = None) -> list[TrendSeries]:
    """One TrendSeries per (series key, case) and metric with a value; `explain(campaign_before,
    campaign_after)` lists what changed at a change."""
    groups: dict[tuple[str, str], list[KeyedCase]] = {}
    for c in cases:
        groups.setdefault((c.key.series_id, c.result.case), []).append(c)
    out = []
    for (series_id, case), members in groups.items():
        members.sort(key=lambda c: (c.created_unix if c.created_unix is not None else float("inf"), c.campaign_id))
        key = {**members[-1].key.series_fields, "case": case}
        for name in metrics:
            points = [p for p in (_point(c, name) for c in members) if p is not None]
            if not points:
                continue
            segs = segment_series(points, min_effect_pct)
            segments = tuple(_segment(points, s, e) for s, e, _ in segs)
            changes = []
            for i, (start, _end, eff) in enumerate(segs[1:], start=1):
                assert eff is not None
                what = explain(points[start - 1].campaign, points[start].campaign) if explain else []
                changes.append(Change(points[start].campaign, start, _kind(name, eff), eff.effect_pct, eff.effect_ci,
                                      segments[i - 1], segments[i], tuple(what)))
            out.append(TrendSeries(key, f"{series_id}/{case}", name, tuple(points), segments, tuple(changes)))
    return out


def regression_failures(series: Sequence[TrendSeries], min_effect_pct: float) -> list[str]:
    """The gate of `trend --fail-on-regression`: one line per series whose newest segment began with a
    regression (the metric, both segments' medians with CIs, the change with its CI, the threshold)."""
    out = []
    for s in series:
        if not s.changes or s.changes[-1].after.end != len(s.points) or s.changes[-1].kind != "regression":
            continue
        c = s.changes[-1]
        m = metric(s.metric)
        size = f"{c.size_pct:+.1f}%" if c.size_pct is not None else "from 0"
        ci = f" [{c.size_ci[0]:+.1f}%, {c.size_ci[1]:+.1f}%] (95% CI)" if c.size_ci else ""
        out.append(f"FAIL {s.metric} ({s.key.get('case')}): before {segment_text(s.metric, c.before)} → since {c.at} "
                   f"{segment_text(s.metric, c.after)}: "
                   f"regression {size}{ci}, threshold ±{min_effect_pct:g}% ({m.direction_text})")
    return out


def segment_text(key: str, seg: Segment) -> str:
    """'median [lo–hi] unit' of a segment, as the tables print the metric."""
    m = metric(key)
    return f"{m.with_ci(seg.median, seg.ci)} {m.unit}".rstrip()


# ---- what changed between two campaigns -------------------------------------------------------

def _name(path: str) -> str:
    return Path(path).name or path


def _rule_files(inputs: Inputs) -> dict[str, str]:
    return {f.path: f.sha256 for f in inputs.rules or () if f.path}


def _engine_loads(inputs: Inputs, engine: str) -> list[RuleLoadInput]:
    """What `engine` loaded of each ruleset (its one set, or every named one: `engine ruleset` keys)."""
    return [load for key, load in inputs.rule_load.items() if split_rule_load_key(key)[0] == engine]


def _rule_counts(inputs: Inputs, engine: str) -> dict[str, int]:
    out: dict[str, int] = {}
    seen: set[str] = set()  # a file in two rulesets counts once
    for s in (s for load in _engine_loads(inputs, engine) for s in load.sets):
        if s.source and s.source not in seen:
            seen.add(s.source)
            out[_name(s.source)] = out.get(_name(s.source), 0) + s.rules
    return out


def _sids(inputs: Inputs, engine: str) -> set[int] | None:
    loads = _engine_loads(inputs, engine)
    return {sid for load in loads for sid in load.sids} if loads else None


def what_changed(a: CampaignFacts, b: CampaignFacts, engine: str) -> list[str]:
    """Differences from campaign a to campaign b that can move a sensor's figures."""
    out: list[str] = []
    ba, bb = a.environment.engines.get(engine), b.environment.engines.get(engine)
    ra, rb = ba.record() if ba else {}, bb.record() if bb else {}
    va, vb = ra.get("version"), rb.get("version")
    if va != vb:
        out.append(f"{engine} version: {va or 'unknown'} → {vb or 'unknown'}")
    elif ra != rb:
        keys = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
        out.append(f"{engine} build changed (same version {va}): {', '.join(keys)}")
    if a.environment.idsbench != b.environment.idsbench:
        out.append(f"idsbench: {a.environment.idsbench} → {b.environment.idsbench}")
    fa, fb = _rule_files(a.inputs), _rule_files(b.inputs)
    ca, cb = _rule_counts(a.inputs, engine), _rule_counts(b.inputs, engine)
    for path in sorted(set(fb) - set(fa)):
        n = cb.get(_name(path))
        out.append(f"rule file added: {_name(path)}" + (f" ({n} rules)" if n is not None else "") + f" [{path}]")
    for path in sorted(set(fa) - set(fb)):
        n = ca.get(_name(path))
        out.append(f"rule file removed: {_name(path)}" + (f" ({n} rules)" if n is not None else "") + f" [{path}]")
    for path in sorted(p for p in set(fa) & set(fb) if fa[p] != fb[p]):
        na, nb = ca.get(_name(path)), cb.get(_name(path))
        counts = f" ({na} → {nb} rules)" if na is not None and nb is not None and na != nb else ""
        out.append(f"rule file changed: {_name(path)}{counts}")
    sa, sb = _sids(a.inputs, engine), _sids(b.inputs, engine)
    if sa is not None and sb is not None and sa != sb:
        out.append(f"rules loaded: +{len(sb - sa)} sids, -{len(sa - sb)} sids ({len(sa)} → {len(sb)})")
    conf_a, conf_b = a.inputs.configs, b.inputs.configs
    if conf_a != conf_b:
        for name in sorted(set(conf_a) | set(conf_b)):
            if conf_a.get(name) != conf_b.get(name):
                out.append(f"sensor.config {name}: " + ("added" if name not in conf_a else "removed" if name not in conf_b
                                                        else "overlay changed"))
    unread = [f.spec_problem for f in (a, b) if f.spec_problem]
    if unread:
        out.append(f"sensor.set: not compared ({unread[0]})")
    else:
        oa, ob = a.spec.sensor.set, b.spec.sensor.set
        for k in sorted(set(oa) | set(ob)):
            if oa.get(k) != ob.get(k):
                out.append(f"sensor.set.{k}: {oa.get(k, '(unset)')} → {ob.get(k, '(unset)')}")
    out.extend(_host_diff(a, b))
    return out or ["nothing idsbench records differs (build, rules, config, host): the host's noise, or a cause "
                   "outside what it records"]


def _host_diff(a: CampaignFacts, b: CampaignFacts) -> list[str]:
    from idsbench.probe.diff import diff

    if a.probe and b.probe:
        return [f"host: {d}" for d in diff(a.probe, b.probe)]
    keys = ("hostname", "kernel", "os", "cpu_model", "cpus", "tcpreplay")
    ea, eb = a.environment.model_dump(include=set(keys)), b.environment.model_dump(include=set(keys))
    return [f"host: {k}: {ea[k]} → {eb[k]}" for k in keys if ea[k] != eb[k]]


def explainer(facts: dict[str, CampaignFacts], engine_of: Callable[[str], str]) -> Explain:
    """`explain(before, after)` over campaign facts at hand (engine_of: the engine of the series)."""
    def explain(before: str, after: str) -> list[str]:
        if before not in facts or after not in facts:
            return ["not compared: campaign facts missing"]
        return what_changed(facts[before], facts[after], engine_of(after))
    return explain
