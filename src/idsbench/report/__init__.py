"""Report: figures (SVG + PNG), tables (CSV + JSON) and one self-contained report.html."""

from idsbench.report.html import write_report

__all__ = ["write_report"]
