"""Load what Snort 3 can of a rule file: convert it, let `snort -T` reject the rest, report the share.

One rule Snort cannot parse stops Snort altogether, so a rule file is made loadable in rounds: convert
(snort_rules), run the config test, comment out every line Snort named (snort_log.rejected_lines),
and again, until the test passes. The config test is passed in (`ConfigTest`: rules file -> the
log of `snort -T` with the run's config), so this module runs nothing itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from idsbench.errors import InputError
from idsbench.sensors.snort import log as snort_log
from idsbench.sensors.snort.rules import EventFilter, active_rule_count, comment_out, convert_rules

ConfigTest = Callable[[Path], str]
MAX_ROUNDS = 6


@dataclass(frozen=True)
class RuleLoad:
    """What of `source` Snort loads: `path` is the loadable file (one line per source line)."""

    source: Path
    path: Path
    rules: int  # active rules in the source
    converted: int  # rules the converter could express in Snort 3
    loaded: int  # rules Snort accepted
    event_filters: tuple[EventFilter, ...]
    not_converted: dict[str, int]  # converter's reasons, counted
    rejected: dict[str, int]  # Snort's own reasons (its messages, numbers kept), counted
    rounds: int

    @property
    def share_loaded(self) -> float:
        return self.loaded / self.rules if self.rules else 0.0


def make_loadable(source: Path, out: Path, config_test: ConfigTest, *, convert: bool = True) -> RuleLoad:
    """Write the loadable version of `source` to `out`. `convert=False` takes the rules as they are
    (a Snort-flavoured file). InputError when Snort still fails without naming a rule line."""
    try:
        text = source.read_text(errors="replace")
    except OSError as exc:
        raise InputError(f"Cannot read the rule file {source}: {exc}.", fix="check the path in sensor.rules.") from exc
    rules = active_rule_count(text)
    filters: tuple[EventFilter, ...] = ()
    reasons: dict[str, int] = {}
    if convert:
        conversion = convert_rules(text.splitlines())
        text, filters, reasons = conversion.text, conversion.event_filters, conversion.reasons
    converted = active_rule_count(text)
    out.write_text(text)
    rejected: Counter[str] = Counter()
    for round_no in range(1, MAX_ROUNDS + 1):
        log = config_test(out)
        if snort_log.config_validated(log):
            return RuleLoad(source, out, rules, converted, active_rule_count(out.read_text()), filters, reasons,
                            dict(rejected), round_no)
        bad = snort_log.rejected_lines(log).get(str(out), set())
        if not bad:
            lines = "; ".join(snort_log.errors(log)[:5]) or "no error lines"
            raise InputError(f"Snort rejects the configuration for {source} without naming a rule: {lines}",
                             fix="run the same `snort -T` by hand; check the Lua overrides and rule variables.")
        for err in snort_log.rule_errors(log):
            if err.file == str(out):
                rejected[err.reason] += 1
        out.write_text(comment_out(out.read_text(), bad, "rejected by snort -T"))
    raise InputError(f"Snort still rejects rules of {source} after {MAX_ROUNDS} rounds of removing them.",
                     fix="look at the last `snort -T` output; report it as an idsbench bug.")
