"""Runs a campaign: preflight, then every pending sample in plan order, one shutdown path for all exits.

SIGINT and SIGTERM both become KeyboardInterrupt in the main thread, so the teardown stack of the
running sample unwinds the same way as on an error. Completed samples are already on disk.
"""

from __future__ import annotations

import errno
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from idsbench import settings
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.probemodel import NoiseProbe
from idsbench.run.order import samples_in_order
from idsbench.run.preflight import prepare_campaign
from idsbench.run.progress import Progress
from idsbench.run.sample import SampleDeps, SampleRun
from idsbench.spec import Spec
from idsbench.store.reader import read_campaign_doc


@dataclass
class CampaignResult:
    out_dir: Path
    ran: int
    skipped: int
    failed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGINT raise KeyboardInterrupt while a campaign runs, so both take the one
    teardown path. SIGINT explicitly too: a process started with SIGINT ignored (a background job
    of a non-interactive shell) would otherwise never hear `kill -INT`."""
    def _raise(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {sig: signal.signal(sig, _raise) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_campaign(spec: Spec, out_dir: Path, *, resume: bool = False, progress: Progress | None = None,
                 state_dir: Path | None = None, cache_dir: Path | None = None,
                 name_prefix: str | None = None, deps: SampleDeps | None = None, require_quiet: bool = False,
                 noise: NoiseProbe | None = None) -> CampaignResult:
    """Run every pending sample of `spec` into `out_dir`. `name_prefix` starts every namespace
    name (default $IDSBENCH_PREFIX or "ib"), so tests can tell their resources apart. On
    --resume, samples that are missing or not `ok` are run again; ok ones are kept. `noise`: the host's
    quietness probed by the caller moments before (run/hostprobe.quietness), reused.
    This machine only: a spec with [hosts] runs through `idsbench.dispatch.run_campaign`, which
    hands it to `idsbench.hosts.campaign` (the runner sits below the hosts package)."""
    if spec.hosts is not None:
        raise SpecError("a spec with [hosts] runs on its hosts, not through the local runner.",
                        fix="call idsbench.dispatch.run_campaign (what `idsbench run` does).")
    if spec.mode == "duet":
        raise SpecError("a mode = \"duet\" spec runs its pairs side by side (run.duet.campaign).",
                        fix="call idsbench.dispatch.run_campaign (what `idsbench run` does).")
    with signals_as_interrupt():
        ctx, cases = prepare_campaign(spec, out_dir, resume=resume, state_dir=state_dir or settings.state_dir(),
                                      cache_dir=cache_dir or settings.cache_dir(), require_quiet=require_quiet,
                                      noise=noise)
        ctx.name_prefix = name_prefix or settings.name_prefix()
        total = sum(len(c.samples) for c in cases)
        progress = progress or Progress(total)
        result = CampaignResult(out_dir, 0, 0, warnings=[f"host: {w}" for w in ctx.warnings])
        with progress:
            for warning in ctx.warnings:
                progress.note(f"warning: {warning}")
            for case, sample in samples_in_order(cases, read_campaign_doc(ctx.layout.root).run_order):
                if ctx.layout.is_done(case.case_id, sample.index):
                    progress.skip(sample.sample_id)
                    result.skipped += 1
                    continue
                progress.sample_started(sample.sample_id)
                try:
                    outcome = SampleRun(ctx, case, sample.index, deps, phase=progress.phase).run()
                except OSError as exc:
                    raise disk_error(exc, out_dir) from exc
                status = outcome.summary.status
                progress.sample_done(sample.sample_id, status, outcome.warnings)
                result.ran += 1
                if status != "ok":
                    result.failed.append(f"{sample.sample_id}: {status} ({outcome.summary.reason})")
                result.warnings.extend(f"{sample.sample_id}: {w}" for w in outcome.warnings)
        return result


def disk_error(exc: OSError, out_dir: Path) -> Exception:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
        return EnvironmentMissing(
            f"Cannot write the results to {out_dir}: {exc.strerror} ({exc.filename or out_dir}). The samples "
            "completed before are intact; the interrupted one left no summary and everything it created "
            "was removed.",
            fix=f"free space on the filesystem holding {out_dir} (or choose another --out), then "
                "continue with `idsbench run SPEC --out DIR --resume`.")
    return exc
