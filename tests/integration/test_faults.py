"""Faults survived, with the real programs: a sensor or a replayer killed mid-replay, a full results
disk, two campaigns at once, accounting under overload repeated, cleanup that touches only what
idsbench recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from idsbench.infra import cgroups
from idsbench.proc import ProcessResource, Supervisor
from idsbench.run.campaign import run_campaign
from idsbench.run.progress import Progress
from idsbench.run.replay import ReplayOutcome, ReplayPlan, TrafficSender
from idsbench.run.sample import SampleDeps
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")
SMTP = "sv_smtp-data-rejected.pcap"  # 199 packets


def _spec(pcaps: Path, **over: object) -> dict[str, object]:
    doc: dict[str, object] = {"name": "faults", "samples": 3,
                              "traffic": {"traces": [str(pcaps / SMTP)], "replayers": [2], "rate": {"pps": 400}}}
    doc.update(over)
    return doc


class KillDuringReplay(TrafficSender):
    """The real sender; in the first sample, `victim(sup, plan)` names a PID to SIGKILL
    0.3 s into the replay (the sensor, or one replayer)."""

    def __init__(self, victim):
        self.victim, self.fired = victim, False

    def replay(self, sup: Supervisor, plan: ReplayPlan) -> ReplayOutcome:
        if not self.fired:
            self.fired = True
            threading.Timer(0.3, lambda: os.kill(self.victim(sup, plan), signal.SIGKILL)).start()
        return super().replay(sup, plan)


def _sensor_pid(sup: Supervisor, plan: ReplayPlan) -> int:
    return int((plan.out_dir / "suricata.pid").read_text())


def _replayer_pid(process: str):
    def find(sup: Supervisor, plan: ReplayPlan) -> int:
        (res,) = [r for r in sup.teardown.resources() if isinstance(r, ProcessResource) and r.name == process]
        return res.pid
    return find


@pytest.mark.parametrize("sender,victim,reason", [
    ("tcpreplay", _sensor_pid, "suricata was killed by SIGKILL during the run"),
    ("tcpreplay", _replayer_pid("tcpreplay-1"), "replayer 1: tcpreplay was killed by SIGKILL"),
    ("native", _replayer_pid("ibreplay"), ": ibreplay was killed by SIGKILL")])
def test_a_process_killed_mid_replay_fails_only_its_sample(tmp_path, state_dir, cache_dir, pcaps, sender, victim,
                                                           reason):
    out = tmp_path / "c"
    spec = spec_from_dict(_spec(pcaps, traffic={"traces": [str(pcaps / SMTP)], "replayers": [2],
                                                "rate": {"pps": 400}, "sender": sender}))
    deps = SampleDeps(sender=KillDuringReplay(victim))
    result = run_campaign(spec, out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX, deps=deps)
    samples = sorted(load_campaign(out).samples, key=lambda s: s.index)
    assert [s.status for s in samples] == ["failed", "ok", "ok"], [(s.status, s.summary.reason) for s in samples]
    assert reason in (samples[0].summary.reason or "")
    assert len(result.failed) == 1
    for s in samples[1:]:  # the rest of the campaign is exact
        c = s.summary.sensor.counters
        assert (c.dropped_pkts, c.decoded_pkts) == (0, 2 * 199)
    # --resume runs the failed sample again, and only it
    again = run_campaign(spec, out, resume=True, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    assert (again.ran, again.skipped) == (1, 2)
    assert [s.status for s in load_campaign(out).samples] == ["ok", "ok", "ok"]


def test_overload_closes_its_accounting_every_time(tmp_path, state_dir, cache_dir):
    """0.2 CPU at topspeed over several loops (the case of issue 9: 6 loops of 87,472 packets): drops
    at the capture point, and every sample's counters add up (captured == decoded + dropped +
    unprocessed), the wire's too."""
    out = tmp_path / "c"
    packets = 87_472
    run_campaign(spec_from_dict({"name": "overload", "samples": 3,
                                 "traffic": {"traces": [f"builtin:mixed?packets={packets}"], "replayers": [1],
                                             "rate": "topspeed", "loops": 6},
                                 "setup": {"cpus": 0.2}}),
                 out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    samples = load_campaign(out).samples
    assert len(samples) == 3
    for s in samples:
        c, w = s.summary.sensor.counters, s.summary.wire
        assert s.status == "ok", (s.summary.reason, s.summary.warnings)
        assert c.dropped_pkts > 0
        assert c.captured_pkts == c.decoded_pkts + c.dropped_pkts + c.unprocessed_pkts
        assert w is not None and w.sender_tx_pkts == s.summary.replay.sent_pkts == 6 * packets
        # every packet sent is somewhere: captured, or dropped by the kernel before the socket
        assert w.sensor_rx_pkts - w.softnet_dropped <= c.captured_pkts <= w.sensor_rx_pkts


class FillDiskAfterFirst(Progress):
    """Fills the results filesystem once the first sample is complete."""

    def __init__(self, total: int, filler: Path):
        super().__init__(total, live=False)
        self.filler = filler

    def sample_done(self, sample_id: str, status: str, warnings: list[str]) -> None:
        super().sample_done(sample_id, status, warnings)
        if not self.filler.exists():
            with open(self.filler, "wb", buffering=0) as fh:  # unbuffered: close() has nothing left to flush
                try:
                    while True:
                        fh.write(b"\0" * 65536)
                except OSError:
                    pass


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "full"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_results_disk_is_one_clear_error_and_keeps_completed_samples(small_tmpfs, state_dir, cache_dir, pcaps):
    from idsbench.errors import EnvironmentMissing

    out = small_tmpfs / "c"
    spec = spec_from_dict(_spec(pcaps))
    with pytest.raises(EnvironmentMissing) as exc:
        run_campaign(spec, out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX,
                     progress=FillDiskAfterFirst(3, small_tmpfs / "filler"))
    assert "No space left" in str(exc.value) and str(out) in str(exc.value) and "--resume" in str(exc.value)
    (done,) = load_campaign(out).samples
    assert done.status == "ok" and done.summary.sensor.counters.decoded_pkts == 2 * 199
    assert not list(state_dir.glob("*.json"))  # the interrupted sample's resources are gone


def test_two_campaigns_at_once_both_complete_exactly(tmp_path, state_dir, cache_dir, pcaps):
    env = {**os.environ, "IDSBENCH_STATE_DIR": str(state_dir), "IDSBENCH_CACHE": str(cache_dir),
           "IDSBENCH_PREFIX": TEST_PREFIX}
    procs = []
    for name in ("a", "b"):
        spec = tmp_path / f"{name}.toml"
        spec.write_text(f'name = "{name}"\nsamples = 2\n[traffic]\ntraces = ["{pcaps / SMTP}"]\nreplayers = [2]\n'
                        'rate = { pps = 400 }\n')
        procs.append(subprocess.Popen([sys.executable, "-m", "idsbench.cli.main", "run", str(spec), "--out",
                                       str(tmp_path / name), "--no-report"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    for name in ("a", "b"):
        for s in load_campaign(tmp_path / name).samples:
            c = s.summary.sensor.counters
            assert s.status == "ok" and (c.dropped_pkts, c.decoded_pkts) == (0, 2 * 199)


def test_cleanup_removes_only_what_idsbench_recorded(tmp_path, state_dir, cache_dir, pcaps):
    """A run killed with SIGKILL: `cleanup` removes its namespaces, links and cgroups; look-alikes
    that idsbench did not create (same prefix, same parent cgroup) survive."""
    decoy_ns = f"{TEST_PREFIX}decoy{os.getpid() % 1000}-sen"
    decoy_cg = cgroups.create(f"{TEST_PREFIX}-decoy-{os.getpid()}")
    subprocess.run(["ip", "netns", "add", decoy_ns], check=True)
    run = None
    try:
        subprocess.run(["ip", "-n", decoy_ns, "link", "add", "ibrx0", "type", "veth", "peer", "name", "ibtx0"],
                       check=True)
        run = _killed_run(tmp_path, state_dir, cache_dir, pcaps)
        _check_cleanup(state_dir, cache_dir, decoy_ns, decoy_cg)
    finally:
        if run is not None and run.poll() is None:
            run.kill()
        subprocess.run(["ip", "netns", "delete", decoy_ns], check=False)
        decoy_cg.remove()


def _env(state_dir: Path, cache_dir: Path) -> dict[str, str]:
    return {**os.environ, "IDSBENCH_STATE_DIR": str(state_dir), "IDSBENCH_CACHE": str(cache_dir),
            "IDSBENCH_PREFIX": TEST_PREFIX}


def _killed_run(tmp_path: Path, state_dir: Path, cache_dir: Path, pcaps: Path) -> subprocess.Popen[str]:
    """`idsbench run`, killed with SIGKILL mid-replay."""
    spec = tmp_path / "k.toml"
    spec.write_text(f'name = "k"\nsamples = 1\n[traffic]\ntraces = ["{pcaps / SMTP}"]\nreplayers = [1]\n'
                    'rate = { pps = 20 }\n')
    run = subprocess.Popen([sys.executable, "-m", "idsbench.cli.main", "run", str(spec), "--out", str(tmp_path / "k")],
                           env=_env(state_dir, cache_dir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((tmp_path / "k").glob("cases/*/s0/replay-*")):
        time.sleep(0.2)
    os.kill(run.pid, signal.SIGKILL)
    run.wait(10)
    return run


def _check_cleanup(state_dir: Path, cache_dir: Path, decoy_ns: str, decoy_cg: cgroups.Cgroup) -> None:
    (state,) = state_dir.glob("*.json")
    recorded = json.loads(state.read_text())["resources"]
    assert {r["kind"] for r in recorded} >= {"netns", "cgroup", "process"}
    done = subprocess.run([sys.executable, "-m", "idsbench.cli.main", "cleanup"], env=_env(state_dir, cache_dir),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    ours = [r["name"] for r in recorded if r["kind"] == "netns"]
    assert ours and not any(n in names for n in ours)
    assert decoy_ns in names  # not recorded: untouched, with its look-alike link
    assert "ibrx0" in subprocess.run(["ip", "-n", decoy_ns, "link"], capture_output=True, text=True).stdout
    assert all(p.is_dir() for p in decoy_cg.paths)
    assert not [p for r in recorded if r["kind"] == "cgroup" for p in r["paths"] if Path(p).exists()]
