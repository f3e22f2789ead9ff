"""Human formatting of numbers and medians with their confidence intervals."""

from __future__ import annotations

from typing import Any

from idsbench.metrics import MIB, columns
from idsbench.store.schema import CaseResult

__all__ = ["COLUMNS", "MIB", "load_label", "median_and_ci", "number", "value_and_ci", "with_ci"]


def number(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    v = float(value)
    if v.is_integer():
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def median_and_ci(row: CaseResult, key: str, scale: float = 1.0, digits: int = 1) -> tuple[str, str]:
    """('median', '[lo–hi]') of a case's metric `key`."""
    return value_and_ci(row.medians.get(key), row.cis.get(key), scale, digits)


def value_and_ci(value: float | None, ci: tuple[float, float] | None, scale: float = 1.0,
                 digits: int = 1) -> tuple[str, str]:
    """('value', '[lo–hi]') with one number format for all three; '' when the CI shows as a point."""
    if value is None:
        return "–", ""
    ci = ci or (value, value)
    scaled = [float(v) / scale for v in (value, *ci)]
    if all(v.is_integer() for v in scaled):
        text = [f"{int(v):,}" for v in scaled]
    else:
        text = [f"{v:,.{digits}f}" for v in scaled]
    return text[0], ("" if text[1] == text[2] else f"[{text[1]}–{text[2]}]")


def with_ci(row: CaseResult, key: str, scale: float = 1.0, digits: int = 1) -> str:
    """'median [lo–hi]' (the CI is omitted when it shows as a single point)."""
    value, ci = median_and_ci(row, key, scale, digits)
    return f"{value} {ci}" if ci else value


# Columns of the human tables: (title, key, scale, digits), from the metric registry (idsbench.metrics).
COLUMNS: tuple[tuple[str, str, float, int], ...] = columns(
    "stable_after_s", "sent_pkts", "dropped_pkts", "drop_ratio", "decoded_pkts", "decoded_bytes", "alerts",
    "sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct")


def load_label(row: CaseResult) -> str:
    return f"{row.params.replayers}X"


def count_text(value: object) -> str:
    """A count as the tables print it; '–' where there is none (e.g. a profiler's match figure that is no count)."""
    return f"{value:,.0f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "–"
