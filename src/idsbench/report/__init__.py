"""Report: figures (SVG + PNG), tables (CSV + JSON) and one self-contained report.html."""

from __future__ import annotations

from pathlib import Path


def write_report(campaign_dir: Path | str, *, baseline: str = "baremetal", cv_threshold: float = 0.10) -> Path:
    """See `idsbench.report.html.write_report` (imported on use: matplotlib is slow to load)."""
    from idsbench.report.html import write_report as _write

    return _write(campaign_dir, baseline=baseline, cv_threshold=cv_threshold)


__all__ = ["write_report"]
