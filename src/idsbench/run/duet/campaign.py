"""A `mode = "duet"` campaign: the same preflight as any campaign, then each pair's samples, one
duet sample at a time (run/duet/sample.py). `--resume` keeps a duet sample whose pair record exists and
both of whose sides have a measured verdict; any other runs again, both sides together."""

from __future__ import annotations

from pathlib import Path

from idsbench import settings
from idsbench.errors import SpecError
from idsbench.plan import DuetPair, duet_pairs
from idsbench.run.campaign import CampaignResult, disk_error, signals_as_interrupt
from idsbench.run.context import CampaignContext
from idsbench.run.duet.place import place
from idsbench.run.duet.sample import DuetSampleRun
from idsbench.run.duet.session import DuetDeps
from idsbench.run.preflight import prepare_campaign
from idsbench.run.progress import Progress
from idsbench.spec import Spec
from idsbench.store.layout import DUET_FILE


def is_done(ctx: CampaignContext, pair: DuetPair, index: int) -> bool:
    return ((ctx.layout.duet_sample_dir(pair.pair_id, index) / DUET_FILE).is_file()
            and all(ctx.layout.is_done(c.case_id, index) for c in pair.sides))


def run_duet_campaign(spec: Spec, out_dir: Path, *, resume: bool = False, progress: Progress | None = None,
                      state_dir: Path | None = None, cache_dir: Path | None = None, name_prefix: str | None = None,
                      deps: DuetDeps | None = None, require_quiet: bool = False) -> CampaignResult:
    """Run every pending duet sample of `spec` into `out_dir` (this machine only)."""
    if spec.mode != "duet":
        raise SpecError("run_duet_campaign runs mode = \"duet\" specs.", fix="call run.campaign.run_campaign.")
    deps = deps or DuetDeps()
    with signals_as_interrupt():
        ctx, cases = prepare_campaign(spec, out_dir, resume=resume, state_dir=state_dir or settings.state_dir(),
                                      cache_dir=cache_dir or settings.cache_dir(), require_quiet=require_quiet)
        ctx.name_prefix = name_prefix or settings.name_prefix()
        pairs = duet_pairs(cases)
        progress = progress or Progress(len(pairs) * ctx.settings.samples)
        result = CampaignResult(out_dir, 0, 0, warnings=[f"host: {w}" for w in ctx.warnings])
        where = place(deps.sample.available_cpus(), cases[0].cpus, sensor_cpuset=ctx.settings.setup.cpuset,
                      kind=deps.placement)
        notes = [f"duet placement: {where.describe()}", *([f"duet: {where.note}"] if where.note else [])]
        with progress:
            for line in [*(f"warning: {w}" for w in ctx.warnings), *notes]:
                progress.note(line)
            for pair in pairs:
                for index in range(ctx.settings.samples):
                    sample_id = f"{pair.pair_id}/s{index}"
                    if is_done(ctx, pair, index):
                        progress.skip(sample_id)
                        result.skipped += 1
                        continue
                    progress.sample_started(sample_id)
                    try:
                        outcome = DuetSampleRun(ctx, pair, index, deps, phase=progress.phase).run()
                    except OSError as exc:
                        raise disk_error(exc, out_dir) from exc
                    status = outcome.record.status
                    progress.sample_done(sample_id, status, outcome.warnings)
                    result.ran += 1
                    if status != "ok":
                        result.failed.append(f"{sample_id}: {status} ({outcome.record.reason})")
                    result.warnings.extend(f"{sample_id}: {w}" for w in outcome.warnings)
        result.warnings.extend(n for n in notes if n.startswith("duet: "))
        return result
