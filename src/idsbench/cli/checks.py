"""Checks of the subcommands' flags, made before any campaign is read or anything printed (issue 41 item 5):
each names the flag, the value and the fix, and suggests the name meant."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from idsbench.errors import SpecError


def _near(name: str, known: Iterable[str]) -> str:
    found = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {found[0]}?)" if found else ""


def metric_names(flag: str, names: Iterable[str]) -> None:
    """Every name a metric of the results (idsbench.metrics, the case metrics)."""
    from idsbench.metrics import REGISTRY
    from idsbench.store.schema import CASE_METRICS

    known = set(REGISTRY) | set(CASE_METRICS)
    for name in names:
        if name not in known:
            raise SpecError(f"{flag} {name}: no metric of the results has that name{_near(name, known)}.",
                            fix="name a metric of `idsbench results --format json`, e.g. sensor_us_per_pkt, "
                                "sensor_cpu_pct, drop_ratio, alert_recall, ndr_pps.")


def positive(flag: str, value: float, example: str) -> None:
    if not value > 0:
        raise SpecError(f"{flag} {value:g} is not a positive number.", fix=f"give e.g. {flag} {example}.")


def setup_kind(flag: str, name: str) -> None:
    """A setup kind idsbench knows (setups.registry)."""
    from idsbench.setups import registry

    if name not in registry.names():
        raise SpecError(f"{flag} {name}: no setup kind has that name{_near(name, registry.names())}.",
                        fix=f"give one of {', '.join(registry.names())}.")
