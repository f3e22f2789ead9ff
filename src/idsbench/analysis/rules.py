"""What each rule costs (docs/profiling.md, "Rule profiling"): per case and rule, the medians over the
ok samples of the profiler's figures (`idsbench results DIR --rules`, the report's "Costliest rules"),
and the cost per rule file / ET category.

`share` is a rule's part of all rule time in a sample (median over the ok samples). The time columns keep
the profiler's unit (`unit`: "ticks" for Suricata's rdtsc ticks, "us" for Snort's microseconds); the
contract keeps their names (`ticks_total`, `ticks_avg`, `ticks_max`). `ticks_max` is None where the
profiler reports no maximum (Snort 3): missing, never 0.

`time_share` is the rule time as a fraction of the sensor's own CPU time in the sample: the CPU seconds of
its cgroup from replay start to the end of its drain, idle use taken out (`summary.cost.cpu_s`, the figure
behind `sensor_us_per_pkt`). Microseconds convert directly; ticks need the time-stamp counter's rate
measured on the host (`tsc_hz`: campaign.json `environment.<engine>.tsc_hz`, else probe.json `tsc.hz`) and
are None without it — a rate is never assumed. Both profilers time a rule with a clock that keeps running
when the thread is preempted, and Snort adds the time of an option-tree node shared by several rules to
each of them, so a share is an upper bound; on a host crowded enough to preempt the sensor it can
exceed what the CPU time allows.

Rules are ranked by `ticks_net`: the rule time with the profiler's own clock taken out (per sample,
ticks_total − checks × one read of the build's clock at the TSC rate, at least 0; median over the ok
samples). Suricata brackets each check with that read, so each interval holds about one. Upstream's read is
cpuid;rdtsc;cpuid (probe.json `timers.cpuid_rdtsc_ns`): where cpuid traps (a VM: 7-35 µs a read) the clock is
most of the raw figure and ranking by raw ticks follows the checks; idsbench's builds read lfence;rdtsc;lfence
(scripts/patches, `timers.lfence_rdtsc_ns`, ~50 ns), which no hypervisor traps (measured:
docs/profiling.md, "Rule profiling"). Where the clock's cost is not
known (no probe figure, no TSC rate, Snort's µs from a steady clock) `ticks_net` is None and the rank is by
`ticks_total`; `RuleRow.ranked_by` says which.

ET Open ships as one concatenated file here, so the cost "per rule file" is given per ET category
(`emerging-policy` for messages `ET POLICY ...`: the upstream file the rule belongs to) beside the file
the rule was read from.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from idsbench.sensors.ruleprofile import RuleInfo, catalog
from idsbench.store.campaigndoc import rule_load_key
from idsbench.store.reader import Campaign, SampleRecord, read_probe_doc, rule_profile
from idsbench.store.rule_profile import RuleCost

TOP_RULES = 20
US = 1e-6


@dataclass(frozen=True)
class RuleRow:
    """One case and rule: the contract's row of `results --rules`."""

    case: str
    engine: str
    gid: int
    sid: int
    msg: str
    file: str
    category: str
    hints: tuple[str, ...]
    checks: float
    matches: float | None  # None: a sample's profiler gave no count (store.rule_profile.RuleCost)
    ticks_total: float
    ticks_avg: float
    ticks_max: float | None  # None: the profiler reports no maximum (Snort 3)
    share: float
    samples: int
    unit: str = "ticks"
    time_share: float | None = None  # of the sensor's CPU time; None: no CPU time or no TSC rate
    ticks_net: float | None = None   # ticks_total without the profiler's clock (None: its cost unknown)

    @property
    def ranked_by(self) -> str:
        """The figure the rows are ordered by: "ticks_net" where the clock's cost is known, else "ticks_total"."""
        return "ticks_total" if self.ticks_net is None else "ticks_net"

    def as_dict(self) -> dict[str, object]:
        return {"case": self.case, "engine": self.engine, "gid": self.gid, "sid": self.sid, "msg": self.msg,
                "file": self.file, "category": self.category, "hints": list(self.hints), "checks": self.checks,
                "matches": self.matches, "ticks_total": self.ticks_total, "ticks_avg": self.ticks_avg,
                "ticks_max": self.ticks_max, "share": round(self.share, 6), "unit": self.unit,
                "time_share": None if self.time_share is None else round(self.time_share, 8),
                "ticks_net": None if self.ticks_net is None else round(self.ticks_net, 3),
                "ranked_by": self.ranked_by, "samples": self.samples}


@dataclass(frozen=True)
class GroupCost:
    """A rule file's or category's part of the rule time in a case (medians over ok samples)."""

    case: str
    kind: str  # "file" or "category"
    name: str
    rules: int  # rules of the group the profiler saw
    ticks_total: float
    share: float
    unit: str = "ticks"
    time_share: float | None = None
    checks: float = 0.0
    # The profiler's clock outside the timed intervals: Suricata reads it before and after each check;
    # about one read falls inside the rule's ticks, the other outside, uncounted. As a share of the
    # sensor's CPU time (checks × one read, `profiler_clock_ns`, / CPU); None: not known.
    untimed_clock_share: float | None = None

    @property
    def removal_saving(self) -> float | None:
        """The share of the sensor's CPU that removing the group should save on the profiling build itself:
        its rules' time plus the clock reads no interval counted (a ruleset axis measures the same)."""
        if self.time_share is None:
            return None
        return self.time_share + (self.untimed_clock_share or 0.0)


TIMER_WARN_SHARE = 0.1  # warn when the profiler's clock is a tenth of the rule time or more
CLOCK_DOMINATES_SHARE = 0.5  # from here the raw rule times follow the checks more than the rules' cost


@dataclass(frozen=True)
class RuleTime:
    """All rules of a case together against the sensor's CPU time (medians over the profiled ok samples)."""

    case: str
    engine: str
    unit: str
    rule_time_s: float | None     # None: ticks without a TSC rate
    sensor_cpu_s: float | None    # None: no sample recorded the sensor's CPU time
    time_share: float | None
    samples: int
    tsc_hz: float | None = None   # the rate ticks were converted with
    why_none: str | None = None   # why time_share is None
    # The profiler's own clock inside the rule time: checks × one read of the build's clock
    # (`profiler_clock_ns`; Suricata brackets each check with two, and each interval holds about one). Large
    # where upstream's cpuid read traps (a VM): then the rule times mostly count the profiler. None: not known.
    timer_s: float | None = None
    timer_ns_per_check: float | None = None

    @property
    def timer_share(self) -> float | None:
        """The part of the rule time that is the profiler's own clock (estimate)."""
        if self.timer_s is None or not self.rule_time_s:
            return None
        return min(1.0, self.timer_s / self.rule_time_s)

    def timer_warning(self) -> str | None:
        """A sentence when the profiler's clock is a tenth of the rule time or more, else None."""
        share = self.timer_share
        if share is None or self.timer_ns_per_check is None or share < TIMER_WARN_SHARE:
            return None
        ns = self.timer_ns_per_check
        read = f"{ns / 1e3:,.1f} µs" if ns >= 1000 else f"{ns:.0f} ns"
        text = (f"about {share:.0%} of the rule time is the profiler's own clock ({read} per rule check on this "
                "host); the rules are ranked net of it")
        if share >= CLOCK_DOMINATES_SHARE:  # upstream's cpuid clock where it traps (a VM)
            text += ("; the raw times rank rules by their checks more than by their cost, and a ruleset axis on "
                     "a plain build (or idsbench's lfence-clock build) measures what the rules cost")
        return text


def profiled_samples(campaign: Campaign, case_id: str) -> list[tuple[SampleRecord, list[RuleCost]]]:
    out = []
    for s in campaign.samples_of(case_id):
        if s.status != "ok":
            continue
        costs = rule_profile(s)
        if costs:
            out.append((s, costs))
    return out


def rule_catalog(campaign: Campaign) -> dict[int, RuleInfo]:
    """sid -> RuleInfo over every rule file of the campaign (a sid in several files: the first file's)."""
    return _catalog_of(tuple(Path(r.path) for r in campaign.doc.inputs.rules or ()))


def case_rule_catalog(campaign: Campaign, case_id: str) -> dict[int, RuleInfo]:
    """sid -> RuleInfo as the case loaded its rules: from its own ruleset's files (`inputs.rule_load`), so a
    sid two rulesets share is named by the file this case ran; the campaign's other files name the rest
    (and every sid where the case's files are not recorded)."""
    params = campaign.case(case_id).params
    load = campaign.doc.inputs.rule_load.get(rule_load_key(params.engine, params.rules))
    whole = rule_catalog(campaign)
    if load is None:
        return whole
    own = tuple(Path(s.source) if Path(s.source).is_file() else Path(s.path) for s in load.sets if s.path or s.source)
    return {**whole, **_catalog_of(own)}


_CATALOGS: dict[tuple[tuple[str, int, int], ...], dict[int, RuleInfo]] = {}


def _catalog_of(files: tuple[Path, ...]) -> dict[int, RuleInfo]:
    """`catalog(files)`, read once per process while the files are unchanged (ET Open: ~45k lines)."""
    key = tuple((str(f), *_stamp(f)) for f in files)
    if key not in _CATALOGS:
        _CATALOGS[key] = catalog(files)
    return _CATALOGS[key]


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def tsc_hz(campaign: Campaign, engine: str) -> float | None:
    """The TSC rate the campaign measured: campaign.json `environment.<engine>.tsc_hz` (a profiling
    Suricata records it), else the campaign's probe.json `tsc.hz`; None when neither holds one."""
    build = campaign.doc.environment.engines.get(engine)
    if build is not None and _number(build.tsc_hz) is not None:
        return _number(build.tsc_hz)
    probe = read_probe_doc(campaign.root) or {}
    tsc = probe.get("tsc")
    return _number(tsc.get("hz")) if isinstance(tsc, dict) else None


def seconds_per_unit(unit: str, rate_hz: float | None) -> float | None:
    """Seconds in one unit of the profile's time columns: µs directly, ticks through the TSC rate."""
    if unit == "us":
        return US
    return 1.0 / rate_hz if unit == "ticks" and rate_hz else None


def sensor_cpu_s(sample: SampleRecord) -> float | None:
    """The sensor's CPU seconds for its packets in the sample (summary.cost.cpu_s), None when not measured."""
    cost = sample.summary.cost
    return cost.cpu_s if cost is not None and cost.cpu_s > 0 else None


def _unit(profiled: list[tuple[SampleRecord, list[RuleCost]]]) -> str:
    units = {c.unit for _, costs in profiled for c in costs}
    if len(units) > 1:
        raise ValueError(f"the samples' rule profiles mix units ({', '.join(sorted(units))})")
    return units.pop() if units else "ticks"


def _med(values: list[float], n: int) -> float:
    """Median over n samples, a sample where the rule did not appear counting 0."""
    return float(median([*values, *([0.0] * (n - len(values)))])) if n else 0.0


def _cpu_factors(campaign: Campaign, engine: str, profiled: list[tuple[SampleRecord, list[RuleCost]]],
                 unit: str) -> list[float | None]:
    """Per profiled sample: what turns its time units into a fraction of its sensor CPU time (None: unknown)."""
    spu = seconds_per_unit(unit, tsc_hz(campaign, engine) if unit == "ticks" else None)
    out: list[float | None] = []
    for sample, _ in profiled:
        cpu = sensor_cpu_s(sample)
        out.append(spu / cpu if spu is not None and cpu is not None else None)
    return out


def _time_share(per_sample: dict[int, float], factors: list[float | None]) -> float | None:
    """Median over the samples whose CPU time is known of (time × factor); a sample without the key counts 0."""
    shares = [per_sample.get(i, 0.0) * f for i, f in enumerate(factors) if f is not None]
    return float(median(shares)) if shares else None


def clock_ticks_per_check(campaign: Campaign, engine: str, unit: str) -> float | None:
    """The profiler's own clock inside one check's interval, in the profile's unit: one read of the engine's
    clock (`profiler_clock_ns`) at the campaign's TSC rate; None for µs (Snort: a steady clock, no trap) or
    when either figure is missing."""
    if unit != "ticks":
        return None
    read_ns, rate = profiler_clock_ns(campaign, engine), tsc_hz(campaign, engine)
    return read_ns * 1e-9 * rate if read_ns is not None and rate is not None else None


def net_ticks(cost: RuleCost, clock_ticks: float) -> float:
    """One sample's rule time without the profiler's clock (checks × one read), at least 0."""
    return max(0.0, cost.ticks_total - cost.checks * clock_ticks)


def case_rules(campaign: Campaign, case_id: str, info: dict[int, RuleInfo] | None = None) -> list[RuleRow]:
    """One row per rule the profiler saw in the case's ok samples, costliest first: by median ticks_net where
    the profiler's clock cost is known, else by median ticks_total."""
    profiled = profiled_samples(campaign, case_id)
    if not profiled:
        return []
    info = case_rule_catalog(campaign, case_id) if info is None else info
    engine = campaign.case(case_id).params.engine
    unit = _unit(profiled)
    clock = clock_ticks_per_check(campaign, engine, unit)
    factors = _cpu_factors(campaign, engine, profiled, unit)
    per_rule: dict[tuple[int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    maxima: dict[tuple[int, int], list[float | None]] = defaultdict(list)
    totals: dict[tuple[int, int], dict[int, float]] = defaultdict(dict)
    uncounted: set[tuple[int, int]] = set()
    for i, (_, costs) in enumerate(profiled):
        total = sum(c.ticks_total for c in costs) or 1
        for c in costs:
            key = (c.gid, c.sid)
            row = per_rule[key]
            row["checks"].append(c.checks)
            if c.matches is None:
                uncounted.add(key)
            else:
                row["matches"].append(c.matches)
            row["ticks_total"].append(c.ticks_total)
            if clock is not None:
                row["ticks_net"].append(net_ticks(c, clock))
            row["ticks_avg"].append(c.ticks_avg)
            row["share"].append(c.ticks_total / total)
            maxima[key].append(None if c.ticks_max is None else float(c.ticks_max))
            totals[key][i] = float(c.ticks_total)
    n = len(profiled)
    rows = []
    for (gid, sid), values in per_rule.items():
        known = info.get(sid) if gid == 1 else None  # the catalog names text rules (gid 1)
        measured = [v for v in maxima[(gid, sid)] if v is not None]
        rows.append(RuleRow(
            case=case_id, engine=engine, gid=gid, sid=sid, msg=known.msg if known else "",
            file=known.file if known else "", category=known.category if known else "",
            hints=known.hints if known else (), checks=_med(values["checks"], n),
            matches=None if (gid, sid) in uncounted else _med(values["matches"], n),
            ticks_total=_med(values["ticks_total"], n), ticks_avg=_med(values["ticks_avg"], n),
            ticks_max=_med(measured, n) if measured else None,
            share=_med(values["share"], n), samples=len(values["checks"]), unit=unit,
            time_share=_time_share(totals[(gid, sid)], factors),
            ticks_net=_med(values["ticks_net"], n) if clock is not None else None))
    return sorted(rows, key=lambda r: (-(r.ticks_total if r.ticks_net is None else r.ticks_net), -r.ticks_total,
                                       r.sid, r.gid))


def rule_rows(campaign: Campaign) -> list[RuleRow]:
    """Every profiled case's rules (`idsbench results DIR --rules`)."""
    return [row for c in campaign.cases for row in case_rules(campaign, c.case_id)]


def case_rule_time(campaign: Campaign, case_id: str) -> RuleTime | None:
    """All rule time of the case against the sensor's CPU time; None when the case has no rule profile."""
    profiled = profiled_samples(campaign, case_id)
    if not profiled:
        return None
    engine = campaign.case(case_id).params.engine
    unit = _unit(profiled)
    rate = tsc_hz(campaign, engine) if unit == "ticks" else None
    spu = seconds_per_unit(unit, rate)
    factors = _cpu_factors(campaign, engine, profiled, unit)
    totals = {i: float(sum(c.ticks_total for c in costs)) for i, (_, costs) in enumerate(profiled)}
    cpus = [c for c in (sensor_cpu_s(s) for s, _ in profiled) if c is not None]
    why = None
    if spu is None:
        why = "no TSC rate recorded for this campaign (its ticks cannot become seconds)"
    elif not cpus:
        why = "no sample recorded the sensor's CPU time (summary.cost)"
    timer_ns = profiler_clock_ns(campaign, engine) if unit == "ticks" else None
    checks = float(median(sum(c.checks for c in costs) for _, costs in profiled))
    return RuleTime(case=case_id, engine=engine, unit=unit,
                    rule_time_s=float(median(totals.values())) * spu if spu is not None else None,
                    sensor_cpu_s=float(median(cpus)) if cpus else None, time_share=_time_share(totals, factors),
                    samples=len(profiled), tsc_hz=rate, why_none=why,
                    timer_s=checks * timer_ns * 1e-9 if timer_ns is not None else None, timer_ns_per_check=timer_ns)


# probe.json `timers` key of each profiler clock read (buildstamp.SuricataBuild.profiler_clock)
CLOCK_TIMER_KEYS = {"cpuid-rdtsc-cpuid": "cpuid_rdtsc_ns", "lfence-rdtsc": "lfence_rdtsc_ns"}


def profiler_clock_ns(campaign: Campaign, engine: str) -> float | None:
    """What one read of the engine's profiling clock cost on the campaign's host: the probe's figure for the
    build's read (upstream cpuid;rdtsc;cpuid, which traps in a VM, or our builds' lfence;rdtsc;lfence);
    None when the probe did not measure it."""
    build = campaign.doc.environment.engines.get(engine)
    clock = build.profiler_clock if build is not None else "cpuid-rdtsc-cpuid"
    timers = (read_probe_doc(campaign.root) or {}).get("timers")
    return _number(timers.get(CLOCK_TIMER_KEYS.get(clock, "cpuid_rdtsc_ns"))) if isinstance(timers, dict) else None


def group_costs(campaign: Campaign, case_id: str, kind: str,
                info: dict[int, RuleInfo] | None = None) -> list[GroupCost]:
    """The case's rule time per rule file (kind "file") or ET category ("category"), medians over the
    ok samples, costliest first."""
    profiled = profiled_samples(campaign, case_id)
    if not profiled:
        return []
    info = case_rule_catalog(campaign, case_id) if info is None else info
    unit = _unit(profiled)
    factors = _cpu_factors(campaign, campaign.case(case_id).params.engine, profiled, unit)
    ticks: dict[str, list[float]] = defaultdict(list)
    shares: dict[str, list[float]] = defaultdict(list)
    per_sample: dict[str, dict[int, float]] = defaultdict(dict)
    members: dict[str, set[tuple[int, int]]] = defaultdict(set)
    checks: dict[str, list[float]] = defaultdict(list)
    untimed: dict[str, list[float]] = defaultdict(list)
    read_ns = profiler_clock_ns(campaign, campaign.case(case_id).params.engine) if unit == "ticks" else None
    for i, (sample, costs) in enumerate(profiled):
        total = sum(c.ticks_total for c in costs) or 1
        sums: dict[str, float] = defaultdict(float)
        counts: dict[str, float] = defaultdict(float)
        for c in costs:
            known = info.get(c.sid) if c.gid == 1 else None
            name = (known.file if kind == "file" else known.category) if known else \
                ("(unknown sid)" if c.gid == 1 else f"(gid {c.gid}: built-in)")
            sums[name] += c.ticks_total
            counts[name] += c.checks
            members[name].add((c.gid, c.sid))
        cpu = sensor_cpu_s(sample)
        for name, value in sums.items():
            ticks[name].append(value)
            shares[name].append(value / total)
            per_sample[name][i] = value
            checks[name].append(counts[name])
            if read_ns is not None and cpu is not None:
                untimed[name].append(counts[name] * read_ns * 1e-9 / cpu)
    n = len(profiled)
    out = [GroupCost(case_id, kind, name, len(members[name]), _med(ticks[name], n), _med(shares[name], n),
                     unit=unit, time_share=_time_share(per_sample[name], factors), checks=_med(checks[name], n),
                     untimed_clock_share=_med(untimed[name], n) if untimed[name] else None)
           for name in ticks]
    return sorted(out, key=lambda g: (-g.ticks_total, g.name))


def top_sids(costs: list[RuleCost], n: int, clock_ticks: float | None = None) -> list[int]:
    """The n costliest sids of one sample: by raw ticks, or with `clock_ticks` (clock_ticks_per_check) by
    ticks without the profiler's clock."""
    if clock_ticks is None:
        return [c.sid for c in sorted(costs, key=lambda c: (-c.ticks_total, c.sid))[:n]]
    return [c.sid for c in sorted(costs, key=lambda c: (-net_ticks(c, clock_ticks), -c.ticks_total, c.sid))[:n]]
