"""Runs a campaign: preflight, then every pending sample in plan order, one shutdown path for all exits.

SIGINT and SIGTERM both become KeyboardInterrupt in the main thread, so the teardown stack of the
running sample unwinds the same way as on an error. Completed samples are already on disk.
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from idsbench.run.context import default_cache_dir
from idsbench.run.preflight import prepare_campaign
from idsbench.run.progress import Progress
from idsbench.run.sample import run_sample
from idsbench.spec import Spec
from idsbench.teardown import state_dir_from_env


@dataclass
class CampaignResult:
    out_dir: Path
    ran: int
    skipped: int
    failed: list[str]
    warnings: list[str]


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    def _raise(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_campaign(spec: Spec, out_dir: Path, *, resume: bool = False, progress: Progress | None = None,
                 state_dir: Path | None = None, cache_dir: Path | None = None,
                 name_prefix: str | None = None) -> CampaignResult:
    """Run every pending sample of `spec` into `out_dir`. `name_prefix` starts every namespace
    name (default $IDSBENCH_PREFIX or "ib"), so tests can tell their resources apart."""
    with sigterm_as_interrupt():
        ctx, cases = prepare_campaign(
            spec, out_dir, resume=resume, state_dir=state_dir or state_dir_from_env(),
            cache_dir=cache_dir or default_cache_dir(),
        )
        ctx.name_prefix = name_prefix or os.environ.get("IDSBENCH_PREFIX", "ib")
        total = sum(len(c.samples) for c in cases)
        progress = progress or Progress(total)
        result = CampaignResult(out_dir, 0, 0, [], [])
        with progress:
            for case in cases:
                for sample in case.samples:
                    if ctx.layout.is_complete(case.case_id, sample.index):
                        progress.skip(sample.sample_id)
                        result.skipped += 1
                        continue
                    progress.sample_started(sample.sample_id)
                    outcome = run_sample(ctx, case, sample.index, phase=progress.phase)
                    status = outcome.summary["status"]
                    progress.sample_done(sample.sample_id, status, outcome.warnings)
                    result.ran += 1
                    if status != "ok":
                        result.failed.append(f"{sample.sample_id}: {status}")
                    result.warnings.extend(f"{sample.sample_id}: {w}" for w in outcome.warnings)
        return result
