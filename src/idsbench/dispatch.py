"""Runs a campaign where its spec says: on this machine (`run.campaign`) or, for a spec with
`[hosts]`, on the inventory's sender/sensor pairs (`hosts.campaign`); a `mode = "duet"` spec runs
its pairs side by side (`run.duet.campaign`). It sits above both, so the
runner never imports the hosts package (which builds on the runner)."""

from __future__ import annotations

from pathlib import Path

from idsbench.probemodel import NoiseProbe
from idsbench.run.campaign import CampaignResult
from idsbench.run.campaign import run_campaign as run_here
from idsbench.run.progress import Progress
from idsbench.run.session import SampleDeps
from idsbench.spec import Spec


def run_campaign(spec: Spec, out_dir: Path, *, resume: bool = False, progress: Progress | None = None,
                 state_dir: Path | None = None, cache_dir: Path | None = None, name_prefix: str | None = None,
                 deps: SampleDeps | None = None, become_password: str | None = None,
                 require_quiet: bool = False, noise: NoiseProbe | None = None) -> CampaignResult:
    """`run.campaign.run_campaign` for a local spec (`deps`: its injectable parts), else the hosts
    campaign (`become_password`: the hosts' sudo password). `require_quiet`: refuse a noisy host
    (the local runner's noise probe; hosts campaigns do not probe noise yet); `noise`: the local
    runner's noise probe taken moments before by the caller, reused (a gate's rounds)."""
    if spec.hosts is not None:
        from idsbench.hosts.campaign import run_hosts_campaign  # ssh, agents: only for a spec with [hosts]

        return run_hosts_campaign(spec, out_dir, resume=resume, progress=progress, state_dir=state_dir,
                                  cache_dir=cache_dir, name_prefix=name_prefix, become_password=become_password)
    if spec.mode == "duet":
        from idsbench.run.duet.campaign import run_duet_campaign
        from idsbench.run.duet.session import DuetDeps

        return run_duet_campaign(spec, out_dir, resume=resume, progress=progress, state_dir=state_dir,
                                 cache_dir=cache_dir, name_prefix=name_prefix,
                                 deps=DuetDeps(sample=deps) if deps else None, require_quiet=require_quiet,
                                 noise=noise)
    return run_here(spec, out_dir, resume=resume, progress=progress, state_dir=state_dir, cache_dir=cache_dir,
                    name_prefix=name_prefix, deps=deps, require_quiet=require_quiet, noise=noise)
