"""Suite-wide: strict mode (CI) turns every skip into a failure, and the run ends with its counts.

Under `CI=true` or `IDSBENCH_STRICT=1` a test that cannot run — no root, a program or input
missing — FAILS with the reason it would have skipped for: a missing install step must never
turn the real-program suite into green skips.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from idsbench.settings import strict


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and strict() and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in strict mode (CI=true or IDSBENCH_STRICT=1), which counts as a failure: {reason}"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    stats = terminalreporter.stats
    counts = {k: len([r for r in stats.get(k, []) if getattr(r, "when", "call") in ("call", "setup")])
              for k in ("passed", "failed", "skipped")}
    counts["error"] = len(stats.get("error", []))
    mode = "strict" if strict() else "not strict (set IDSBENCH_STRICT=1 or CI=true to fail on skips)"
    terminalreporter.write_line(
        f"idsbench test counts: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
        f"{counts['skipped']} skipped — {mode}")
