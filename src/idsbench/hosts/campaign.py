"""A campaign on hosts: preflight over SSH, then the cases spread over the pairs, run in parallel.

    run_hosts_campaign(spec, out_dir, resume=…)   (idsbench.dispatch.run_campaign for a spec with [hosts])

Preflight (nothing runs on any host before all of it passed): every host key known; the traces
resolved here; every host connected (one agent each), running this very idsbench build as root,
with the programs and interface of its role; sensors' engines equal across pairs, rules uploaded
and the config tested there; traces uploaded to the senders (kept by sha256); each host's probe
stored in `probes/<host>.json`. Cases go to pairs round robin in plan order (a resumed case stays
on the pair its samples ran on); each pair runs its samples in order, in its own thread.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from idsbench import settings
from idsbench.campaign_settings import CampaignSettings, campaign_settings
from idsbench.errors import EnvironmentMissing, IdsbenchError
from idsbench.hosts import hostkeys
from idsbench.hosts.assign import assign, check_pooling
from idsbench.hosts.digest import digest
from idsbench.hosts.inventory import HostEntry, Inventory, Pair, load_inventory
from idsbench.hosts.link import HostLink
from idsbench.hosts.pairrun import PairRunner, SampleResult
from idsbench.hosts.prepare import CampaignUploads, check_hello, check_hosts_spec, store_probe
from idsbench.hosts.protocol import Empty, Hello
from idsbench.plan import Case, plan
from idsbench.run.campaign import CampaignResult, disk_error, signals_as_interrupt
from idsbench.run.order import decide_order, samples_in_order
from idsbench.run.preflight import check_frames, check_resume, resolve_traces
from idsbench.run.progress import Progress
from idsbench.spec import Spec
from idsbench.store.campaigndoc import (
    CampaignDoc,
    EngineBuild,
    Environment,
    Inputs,
    RuleFileInput,
    TraceInput,
)
from idsbench.store.environment import fingerprint
from idsbench.store.layout import CampaignDir
from idsbench.store.reader import read_campaign_doc
from idsbench.store.schema import PlannedCase, RunOrderRecord, TraceRecord
from idsbench.store.writers import write_campaign_doc
from idsbench.teardown import TeardownStack


@dataclass
class HostsResult:
    ran: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def hosts_inventory(spec: Spec) -> Inventory:
    assert spec.hosts is not None
    if spec.hosts.inventory:
        return load_inventory(spec.resolve_path(spec.hosts.inventory))
    return Inventory(hosts=tuple(spec.hosts.host), source="the spec's [hosts]")


def known_hosts_file(spec: Spec, inv: Inventory) -> Path:
    assert spec.hosts is not None
    if spec.hosts.known_hosts:
        return spec.resolve_path(spec.hosts.known_hosts)
    return inv.known_hosts or hostkeys.default_known_hosts()


def run_on_hosts(spec: Spec, out_dir: Path, *, resume: bool = False, progress: Progress | None = None,
                 state_dir: Path | None = None, cache_dir: Path | None = None, name_prefix: str | None = None,
                 become_password: str | None = None) -> HostsResult:
    check_hosts_spec(spec)  # every axis and section the hosts runner cannot run: a SpecError before anything
    cases, resolved = plan(spec), campaign_settings(spec)
    inv = hosts_inventory(spec)
    pairs = inv.pairs()
    known = known_hosts_file(spec, inv)
    hostkeys.require_known([h for p in pairs for h in (p.sender, p.sensor)], known)
    layout = CampaignDir(out_dir)
    spec_doc: dict[str, object] = spec.model_dump(mode="json")
    check_resume(layout, out_dir, spec_doc, resume, [c.case_id for c in cases])
    order = decide_order(resolved.order, cases, read_campaign_doc(out_dir) if layout.campaign_file.exists() else None)
    cache = cache_dir or settings.cache_dir()
    traces = resolve_traces(resolved, cases, cache)
    check_frames(resolved, cases, traces, local_wire=False)
    assert spec.hosts is not None
    assignment, moves = assign(cases, pairs, layout)
    uploads = CampaignUploads(spec, traces, cases, key=uuid.uuid4().hex[:12],
                              name_prefix=name_prefix or settings.name_prefix())
    total = sum(len(c.samples) for c in cases)
    progress = progress or Progress(total)
    result = HostsResult()
    # One teardown stack per pair: each is used by its pair's thread only (the stack is not thread-safe).
    stacks = {p.name: TeardownStack(state_dir=state_dir or settings.state_dir()) for p in pairs}
    runners = {p.name: _runner(p, layout, resolved.name, traces, stacks[p.name], uploads, known, become_password, cases,
                               assignment) for p in pairs}
    try:
        hellos, warnings = _prepare(runners, layout, resume)
        result.warnings += warnings
        check_pooling(moves, layout, spec.hosts.pool_pairs)
        if not layout.campaign_file.exists():
            write_campaign_doc(layout.root, _campaign_doc(spec, cases, traces, pairs, hellos, uploads, assignment,
                                                          order))
        with progress:
            _run_pairs(runners, cases, assignment, layout, order, progress, result, resolved)
    finally:
        for runner in runners.values():
            runner.stopping.set()
        for runner in runners.values():
            runner.close()
        for stack in stacks.values():
            stack.close()
    return result


def run_hosts_campaign(spec: Spec, out_dir: Path, *, resume: bool = False, progress: Progress | None = None,
                       state_dir: Path | None = None, cache_dir: Path | None = None, name_prefix: str | None = None,
                       become_password: str | None = None) -> CampaignResult:
    """`run_on_hosts` with the local runner's signal handling and result (SIGTERM/SIGINT unwind the
    same way; a full disk is named as such)."""
    with signals_as_interrupt():
        try:
            done = run_on_hosts(spec, out_dir, resume=resume, progress=progress, state_dir=state_dir,
                                cache_dir=cache_dir, name_prefix=name_prefix, become_password=become_password)
        except OSError as exc:
            raise disk_error(exc, out_dir) from exc
    return CampaignResult(out_dir, done.ran, done.skipped, done.failed, done.warnings)


def _runner(pair: Pair, layout: CampaignDir, campaign: str, traces: dict[str, TraceRecord], stack: TeardownStack,
            uploads: CampaignUploads,
            known: Path, become_password: str | None, cases: list[Case], assignment: dict[str, Pair]) -> PairRunner:
    mine = tuple(c.case_id for c in cases if assignment[c.case_id].name == pair.name)

    def opener(host: HostEntry) -> HostLink:
        link = HostLink(host, known, stack, layout.root / "hosts" / f"{host.name}.agent.log",
                        become_password=become_password).open()
        try:
            check_hello(host, link.hello, digest())
            uploads.open_on(link, host, pair, mine)
        except BaseException:
            link.close()
            raise
        return link

    return PairRunner(pair=pair, layout=layout, campaign=campaign, traces=traces, stack=stack, opener=opener)


def _prepare(runners: dict[str, PairRunner], layout: CampaignDir,
             resume: bool) -> tuple[dict[str, Hello], list[str]]:
    """Connect every pair in parallel (and test the sensor config there); one error names them all."""
    warnings: list[str] = []

    def one(runner: PairRunner) -> dict[str, Hello]:
        runner.connect()
        runner.links["sensor"].call("config_test", Empty(), Empty, timeout=900)
        out = {}
        for role, link in runner.links.items():
            host = runner.pair.sensor if role == "sensor" else runner.pair.sender
            changed = store_probe(link, host, layout, resume)
            if changed:
                warnings.append(changed)
            out[host.name] = link.hello
        return out

    errors: list[str] = []
    hellos: dict[str, Hello] = {}
    with ThreadPoolExecutor(max_workers=len(runners)) as pool:
        futures = {name: pool.submit(one, r) for name, r in runners.items()}
        for name, fut in futures.items():
            try:
                hellos.update(fut.result())
            except IdsbenchError as exc:
                errors.append(f"pair {name}: {exc.message}" + (f" ({exc.fix})" if exc.fix else ""))
    if errors:
        raise EnvironmentMissing("The hosts are not ready, nothing was run. " + " | ".join(errors),
                                 fix="`idsbench hosts check --inventory FILE` shows what each host lacks; "
                                     "`idsbench hosts provision --inventory FILE` installs it.")
    sensors = {h: d.suricata for h, d in hellos.items() if d.role == "sensor"}
    if len(set(sensors.values())) > 1:
        raise EnvironmentMissing(f"The sensor hosts run different Suricata versions ({sensors}): their results are "
                                 "not comparable.", fix="install the same version on every sensor host.")
    return hellos, warnings


def _run_pairs(runners: dict[str, PairRunner], cases: list[Case], assignment: dict[str, Pair], layout: CampaignDir,
               order: RunOrderRecord, progress: Progress, result: HostsResult, resolved: CampaignSettings) -> None:
    lock = threading.Lock()
    timeout_s = resolved.sensor.ready_timeout_s + sum(resolved.timing.model_dump().values())
    crashed: list[BaseException] = []

    def work(runner: PairRunner) -> None:
        runner.on_phase = lambda p: _locked(lock, progress.phase, f"{runner.pair.name}: {p}")
        try:
            for case, sample in samples_in_order(cases, order):
                if assignment[case.case_id].name != runner.pair.name:
                    continue
                if runner.stopping.is_set():
                    return
                if layout.is_done(case.case_id, sample.index):
                    with lock:
                        progress.skip(sample.sample_id)
                        result.skipped += 1
                    continue
                _locked(lock, progress.sample_started, f"{sample.sample_id} on {runner.pair.label}")
                outcome = runner.run_sample(case, sample.index, timeout_s)
                with lock:
                    _record(outcome, progress, result)
        except KeyboardInterrupt:
            return
        except BaseException as exc:  # reported by the main thread once the other pairs finished
            crashed.append(exc)

    threads = [threading.Thread(target=work, args=(r,), name=f"pair-{n}") for n, r in runners.items()]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(0.2)
    except KeyboardInterrupt:
        for runner in runners.values():
            runner.stopping.set()
            runner.close()  # agents see their stdin close and tear down what they started
        for t in threads:
            t.join(30)
        raise
    if crashed:
        raise crashed[0]


def _locked(lock: threading.Lock, fn: Callable[[str], None], text: str) -> None:
    with lock:
        fn(text)


def _record(outcome: SampleResult, progress: Progress, result: HostsResult) -> None:
    progress.sample_done(outcome.sample_id, outcome.status, outcome.warnings)
    result.ran += 1
    if outcome.status != "ok":
        result.failed.append(f"{outcome.sample_id}: {outcome.status} ({outcome.reason})")
    result.warnings.extend(f"{outcome.sample_id}: {w}" for w in outcome.warnings)


def _campaign_doc(spec: Spec, cases: list[Case], traces: dict[str, TraceRecord], pairs: list[Pair],
                  hellos: dict[str, Hello], uploads: CampaignUploads, assignment: dict[str, Pair],
                  order: RunOrderRecord | None = None) -> CampaignDoc:
    first = next(iter(uploads.engines_seen.values()), {})
    env = Environment(**fingerprint().model_dump(), controller=True,
                      engines={name: EngineBuild.model_validate(info.build_info) for name, info in first.items()},
                      hosts={h: d.environment() for h, d in hellos.items()}, pairs={p.name: p.label for p in pairs})
    return CampaignDoc(
        created_unix=time.time(), spec=spec, environment=env,
        inputs=Inputs(traces={ref: TraceInput.model_validate(t.model_dump()) for ref, t in traces.items()},
                      rules=tuple(RuleFileInput.model_validate(r) for r in uploads.rule_inputs),
                      rules_on_hosts={h: {name: info.model_dump(mode="json") for name, info in engines.items()}
                                      for h, engines in uploads.engines_seen.items()},
                      assignment={case_id: p.label for case_id, p in assignment.items()}),
        cases=tuple(PlannedCase.model_validate({"case_id": c.case_id, **c.params(), "samples": len(c.samples)})
                    for c in cases),
        order=order,
    )
