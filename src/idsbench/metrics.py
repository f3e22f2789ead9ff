"""The one metric registry: name, unit, display scale and precision, and which way is better, for
every case metric (`CaseResult.medians`, search results, later analyses), and the one number format
(`number`, `Metric.show`/`show_ci`/`with_ci`). Every table (`report/table.py`: results, compare, trend,
A/B, builds/rulesets, engines, the report), the gate and `trend` format and judge metrics through it.

A leaf module: it imports nothing from idsbench, so every stage may use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["lower", "higher", "neutral"]
MIB = 1024 * 1024


@dataclass(frozen=True)
class Metric:
    key: str
    title: str                 # the column title of the human tables (unit included)
    unit: str                  # the unit of the displayed value
    scale: float = 1.0         # displayed value = stored value / scale (drop_ratio 0.01 -> %, bytes -> MiB)
    digits: int = 1            # decimals of the displayed value
    better: Direction = "neutral"

    @property
    def direction_text(self) -> str:
        return {"lower": "lower is better", "higher": "higher is better", "neutral": "neutral"}[self.better]

    def judge(self, verdict: str) -> str | None:
        """'better'/'worse' for a verdict 'higher'/'lower' of this metric; None when neutral or not a change."""
        if self.better == "neutral" or verdict not in ("higher", "lower"):
            return None
        return "better" if verdict == self.better else "worse"

    def show(self, value: float | None) -> str:
        """The value as every table prints it: `number(value / scale, digits)` ('–' when absent)."""
        return number(None if value is None else float(value) / self.scale, self.digits)

    def show_ci(self, ci: tuple[float, float] | None) -> str:
        """'[lo–hi]' in the value's format; '' when absent or when both ends print alike."""
        if not ci:
            return ""
        lo, hi = self.show(ci[0]), self.show(ci[1])
        return "" if lo == hi else f"[{lo}–{hi}]"

    def with_ci(self, value: float | None, ci: tuple[float, float] | None) -> str:
        """'value [lo–hi]' (the CI left out as in `show_ci`)."""
        text, ci_text = self.show(value), self.show_ci(ci) if value is not None else ""
        return f"{text} {ci_text}" if ci_text else text


def number(value: float | None, digits: int = 1) -> str:
    """THE number format of every human output (text tables, compare, trend, gate lines, the HTML report):
    rounded to `digits` decimals, always that many (a column reads alike: 40.0 beside 40.5, never 40),
    thousands grouped with ','; a rounded zero carries no sign; None and NaN are '–'. Metrics call it with
    their own scale and digits (`Metric.show`); other figures (a share, a percentage of change) with theirs."""
    if value is None or value != value:
        return "–"
    text = f"{float(value):,.{max(digits, 0)}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def _m(key: str, title: str, unit: str, scale: float = 1.0, digits: int = 1, better: Direction = "neutral") -> Metric:
    return Metric(key, title, unit, scale, digits, better)


_PKTS = "packets"
REGISTRY: dict[str, Metric] = {m.key: m for m in (
    _m("trace_pkts", "trace pkts", _PKTS, digits=0),
    _m("sent_pkts", "sent pkts", _PKTS, digits=0),
    _m("captured_pkts", "captured pkts", _PKTS, digits=0),
    _m("dropped_pkts", "dropped pkts", _PKTS, digits=0, better="lower"),
    _m("decoded_pkts", "decoded pkts", _PKTS, digits=0, better="higher"),
    _m("decoded_bytes", "decoded MiB", "MiB", MIB, 1, "higher"),
    _m("decode_ratio", "decoded %", "%", 0.01, 2, "higher"),
    _m("alerts", "alerts", "alerts", digits=0),
    _m("drop_ratio", "drop %", "%", 0.01, 3, "lower"),
    _m("sensor_cpu_pct", "sensor CPU %", "% of a core", digits=1, better="lower"),
    _m("sensor_rss_peak_bytes", "sensor RSS peak MiB", "MiB", MIB, 1, "lower"),
    _m("host_cpu_pct", "host CPU %", "% of all CPUs", digits=1, better="lower"),
    _m("flows", "flows", "flows", digits=0),
    _m("stable_after_s", "time to stable (s)", "s", digits=1, better="lower"),
    _m("sender_pps", "sender pps", "pps", digits=0),
    _m("sender_rate_ratio", "sender rate ratio", "ratio", digits=3),
    _m("sender_lateness_p99_ms", "sender lateness p99 ms", "ms", digits=2, better="lower"),
    _m("sender_cpu_pct", "sender CPU %", "% of a core", digits=1),
    _m("sensor_host_cpu_pct", "sensor host CPU %", "% of all CPUs", digits=1, better="lower"),
    _m("loss_sender_pkts", "lost by sender pkts", _PKTS, digits=0, better="lower"),
    _m("loss_wire_pkts", "lost on wire pkts", _PKTS, digits=0, better="lower"),
    _m("loss_nic_pkts", "lost at NIC pkts", _PKTS, digits=0, better="lower"),
    _m("loss_softnet_pkts", "lost in softnet pkts", _PKTS, digits=0, better="lower"),
    _m("loss_capture_pkts", "lost at capture pkts", _PKTS, digits=0, better="lower"),
    _m("unprocessed_pkts", "unprocessed pkts", _PKTS, digits=0, better="lower"),
    _m("unaccounted_pkts", "unaccounted pkts", _PKTS, digits=0, better="lower"),
    _m("bypassed_pkts", "bypassed pkts", _PKTS, digits=0),  # dropped by design (idsbench.bypass): no better side
    _m("alert_recall", "alert recall", "share", digits=3, better="higher"),
    _m("alerts_extra", "extra alerts", "alerts", digits=0),
    # the sensor's cost per packet (issue 20): CPU time, and instructions/cycles where the PMU is visible
    _m("sensor_us_per_pkt", "sensor µs/pkt", "µs/packet", digits=2, better="lower"),
    # … with the sensor's idle housekeeping over the span taken out (issue 41: short traces)
    _m("sensor_us_per_pkt_net", "sensor µs/pkt net of idle", "µs/packet", digits=2, better="lower"),
    _m("sensor_instr_per_pkt", "sensor instr/pkt", "instructions/packet", digits=0, better="lower"),
    _m("sensor_cycles_per_pkt", "sensor cycles/pkt", "cycles/packet", digits=0, better="lower"),
    _m("ndr_sensor_us_per_pkt", "sensor µs/pkt near NDR", "µs/packet", digits=2, better="lower"),
    # the host-speed witness (issue 42 item 7): how fast the sensor's CPUs ran (1.0 = the campaign's median),
    # and CPU per packet at that median speed (sensor_us_per_pkt x host_speed)
    _m("host_speed", "host speed (median = 1)", "relative speed", digits=3),
    _m("sensor_us_per_pkt_norm", "sensor µs/pkt at median host speed", "µs/packet", digits=2, better="lower"),
    # a VM's host-side memory (issue 31): qemu's resident and its locked/pinned memory (VFIO pins all RAM)
    _m("host_mem_bytes", "VM host memory MiB", "MiB", MIB, 1, "lower"),
    _m("host_mem_locked_bytes", "VM host locked MiB", "MiB", MIB, 1, "lower"),
    # a sample's fixed cost: wall time beyond the replay (issue 23)
    _m("overhead_s", "overhead (s)", "s", digits=2, better="lower"),
    # searches
    _m("ndr_pps", "NDR pps", "pps", digits=0, better="higher"),
    _m("pdr_pps", "PDR pps", "pps", digits=0, better="higher"),
    _m("ndr_mbps", "NDR Mbit/s", "Mbit/s", digits=1, better="higher"),
    _m("min_cpus", "min CPUs", "CPUs", digits=2, better="lower"),
    _m("ndr_replayers", "NDR replayers", "replayers", digits=0, better="higher"),
    # engines side by side
    _m("alerts_common_rules", "alerts on common rules", "alerts", digits=0),
    _m("rules_loaded_share", "rules loaded %", "%", 0.01, 1, "higher"),
)}


# What `idsbench trend` follows by default: NDR/PDR, CPU per packet (and the sensor's CPU), drops,
# alerts, recall, memory.
TREND_METRICS = ("ndr_pps", "pdr_pps", "sensor_us_per_pkt", "sensor_cpu_pct", "drop_ratio", "alerts", "alert_recall",
                 "sensor_rss_peak_bytes")


def metric(key: str) -> Metric:
    """The registered metric, or a neutral one named after the key (never an error: later analyses
    may add metrics this registry does not know yet)."""
    return REGISTRY.get(key) or Metric(key, key.replace("_", " "), "")


SEARCH_METRICS = {"pps": "ndr_pps", "cpus": "min_cpus", "replayers": "ndr_replayers"}


def search_metric(unit: str) -> Metric:
    """The metric a search's result is in, by the search's unit (pps, cpus, replayers)."""
    return metric(SEARCH_METRICS.get(unit, unit))
