"""The gate's campaigns: options, and the specs of its arms (pure).

Per trace one duet campaign base against head (`sensor.engine = [base, head]`: the side axis) and one A/A
campaign (base against base: `sensor.engine = [base]`); the load probe is one single-mode campaign of the
base over every trace at a low rate. Every campaign is planned with the most samples a gate can take
(`max_rounds` × `round_samples`) and run a round at a time (run.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from idsbench.errors import SpecError
from idsbench.spec import Spec, spec_from_dict

DEFAULT_THRESHOLD_PCT = 2.0
DEFAULT_BUDGET_S = 900.0
# Each sample's replay: the A/A spread falls as each side spends more CPU time a sample (docs/duet.md: ±4% at
# 0.4 CPU-s, ±0.8% at 2.1); 8 s at 0.3 CPU is ~2.4 CPU-s a side. At 5 s and 0.19-0.26 CPU a side (the loads
# bounded at 20,000 pps) the gate's noise floor was ±3.6% after 5 rounds of 3 traces.
DEFAULT_DURATION_S = 8.0
ROUND_SAMPLES = 2            # a round: one sample with a in slot 0, one swapped (the duet swaps by index)
MAX_ROUNDS = 12
PROBE_PPS = 1000.0
PROBE_DURATION_S = 2.0
# the load a side is given: this share of one CPU at its probed cost per packet (each duet side gets half
# of the sensor CPU under the two-CPU placement: 0.3 CPU leaves it 40% headroom), within the bounds below
PROBE_CPU_SHARE = 0.3
MIN_RATE_PPS = 200.0
MAX_RATE_PPS = 30_000.0  # 0.3 CPU at 10 µs a packet (the bundled rules on most captures here)
# A sensor's cost per packet at PROBE_PPS includes its housekeeping spread over few packets: measured with the
# bundled rules on tcpreplay_test, 26 µs at 1,000 pps, 9.5-10 µs at the 11,470 pps that gave, where each side
# then used 0.11 CPU, not 0.3 (and the A/A arm's samples spread ±9%). So the probe is taken again at the load
# it gave (REFINE_STEPS times at most, while the load moves by more than REFINE_WITHIN). The cost only falls
# as the load rises (the same housekeeping over more packets), so the load a refined probe gives errs low.
REFINE_STEPS = 1
REFINE_WITHIN = 0.2
ENGINE_SET = {"af-packet.0.threads": 1}


@dataclass(frozen=True)
class GateOptions:
    traffic: tuple[str, ...] = ("builtin:mixed",)
    rules: tuple[str, ...] = ("builtin:events",)
    threshold_pct: float = DEFAULT_THRESHOLD_PCT
    budget_s: float = DEFAULT_BUDGET_S
    rate_pps: float | None = None           # None: probed
    duration_s: float = DEFAULT_DURATION_S  # each sample's replay
    min_samples: int = 6
    max_rounds: int = MAX_ROUNDS
    allow_alert_changes: bool = False
    offline: bool = True                    # the offline pass (alerts, event types); bisect steps skip it
    setup: str = "baremetal"
    ready_timeout_s: float = 300.0
    name_prefix: str | None = None
    state_dir: Path | None = None
    cache_dir: Path | None = None
    extra_notes: tuple[str, ...] = field(default=())
    decide_at_pct: float | None = None      # bisect steps: a trace also settles once its CI is clear of this

    def check(self) -> None:
        if not self.threshold_pct > 0:
            raise SpecError(f"--threshold {self.threshold_pct:g}: the threshold must be above 0%.",
                            fix="e.g. --threshold 2 (a change within ±2% is 'same').")
        if not self.budget_s > 0:
            raise SpecError(f"--budget-s {self.budget_s:g} must be above 0.", fix="e.g. --budget-s 900.")
        if self.rate_pps is not None and not self.rate_pps > 0:
            raise SpecError(f"--rate {self.rate_pps:g} must be above 0 packets per second.", fix="e.g. --rate 5000.")
        if not self.traffic:
            raise SpecError("no traffic to measure.", fix="give --traffic PCAP (one or more).")

    @property
    def planned_samples(self) -> int:
        return self.max_rounds * ROUND_SAMPLES

    @property
    def min_rounds(self) -> int:
        return -(-self.min_samples // ROUND_SAMPLES)


def trace_label(ref: str, taken: set[str]) -> str:
    """A short, unique, file-name-safe label of a trace reference."""
    stem = ref.removeprefix("builtin:")
    stem = Path(stem).name
    for suffix in (".pcapng", ".pcap", ".cap"):
        stem = stem.removesuffix(suffix)
    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-") or "trace"
    base, k = label, 2
    while label in taken:
        label, k = f"{base}-{k}", k + 1
    taken.add(label)
    return label


def arm_spec(name: str, engines: list[str], trace: str, rate_pps: float, options: GateOptions) -> Spec:
    """A duet spec: `engines` = [base, head] (the side axis) or [base] (A/A)."""
    return spec_from_dict({
        "name": name, "mode": "duet", "samples": options.planned_samples, "timing": {"settle_s": 0.3},
        "traffic": {"traces": [trace], "rate": {"pps": round(rate_pps, 1)}, "duration_s": options.duration_s},
        "setup": {"kinds": [options.setup]},
        "sensor": {"engine": engines, "rules": list(options.rules), "ground_truth": False,
                   "ready_timeout_s": options.ready_timeout_s, "set": dict(ENGINE_SET)},
    })


def probe_spec(base: str, traces: list[str], options: GateOptions, rate_pps: float = PROBE_PPS) -> Spec:
    """One sample of the base per trace at `rate_pps` (first a low rate): its CPU per packet sets the load."""
    return spec_from_dict({
        "name": "gate-probe", "samples": 1, "timing": {"settle_s": 0.3},
        "traffic": {"traces": traces, "rate": {"pps": round(rate_pps, 1)}, "duration_s": PROBE_DURATION_S},
        "setup": {"kinds": [options.setup]},
        "sensor": {"engine": [base], "rules": list(options.rules), "ground_truth": False,
                   "ready_timeout_s": options.ready_timeout_s, "set": dict(ENGINE_SET)},
    })


def rate_for(us_per_pkt: float | None) -> float:
    """The load for a side whose probed cost is `us_per_pkt` (PROBE_CPU_SHARE of a CPU, bounded)."""
    if us_per_pkt is None or us_per_pkt <= 0:
        return MIN_RATE_PPS
    return max(MIN_RATE_PPS, min(MAX_RATE_PPS, round(PROBE_CPU_SHARE * 1e6 / us_per_pkt, -1)))


def settled(previous_pps: float, rate_pps: float) -> bool:
    """Whether a load refined from a probe at `previous_pps` is close enough to it (REFINE_WITHIN) that
    probing again at `rate_pps` would not move it."""
    return abs(rate_pps / previous_pps - 1) <= REFINE_WITHIN
