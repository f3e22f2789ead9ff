"""Real hosts, for real: a lab of podman hosts running sshd, provisioned by Ansible, driven over SSH.

One lab (2 pairs) for the module: `idsbench lab up`, `hosts provision`, then campaigns on its
inventory. The code path is the remote one: every trace, rule and artifact is copied over SSH
(the lab hosts have their own root filesystems); only the checks of "nothing left running" look
into the containers with `podman exec`. The last test takes the lab down and checks nothing of it
remains. The lab image is cached under the idsbench cache (a fresh machine builds it once: ~3 min).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from idsbench.analysis import case_table
from idsbench.cli.main import main as cli
from idsbench.dispatch import run_campaign
from idsbench.errors import EnvironmentMissing
from idsbench.hosts import hostkeys
from idsbench.hosts.hostkeys import HostKeyError
from idsbench.hosts.inventory import load_inventory
from idsbench.hosts.link import HostLink
from idsbench.hosts.protocol import HostLost
from idsbench.spec import load_spec
from idsbench.store.layout import HOSTS_FILE, PROBES_DIR
from idsbench.store.reader import load_campaign
from idsbench.teardown import TeardownStack
from tests.integration.conftest import unavailable

from .conftest import TEST_PREFIX

LAB = f"{TEST_PREFIX}lab"
TRACE = "builtin:mixed?packets=3000&rate_pps=1500"   # 2 s per replay, 3000 packets per copy
PROGRAMS = ("podman", "runc", "ssh", "ssh-keygen", "ssh-keyscan", "debootstrap", "ip", "ethtool")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """`idsbench lab up --pairs 2` + `idsbench hosts provision`; down at the end (asserted empty)."""
    if os.geteuid() != 0:
        unavailable("the lab needs root (namespaces, podman)")
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        unavailable(f"the lab needs {', '.join(missing)} (make setup)")
    try:
        import ansible_runner  # noqa: F401
    except ImportError:
        unavailable("ansible-runner is not installed (pip install -e '.[hosts]')")
    base = tmp_path_factory.mktemp("lab")
    state = base / "state"
    old = os.environ.get("IDSBENCH_STATE_DIR")
    os.environ["IDSBENCH_STATE_DIR"] = str(state)
    inventory = base / "inventory.yml"
    try:
        assert cli(["lab", "up", "--pairs", "2", "--inventory", str(inventory), "--name", LAB]) == 0
        assert cli(["hosts", "provision", "--inventory", str(inventory)]) == 0
        yield {"inventory": inventory, "state": state, "base": base}
    finally:
        if (state / "labs" / f"{LAB}.json").exists():
            cli(["lab", "down", "--name", LAB])
        if old is None:
            os.environ.pop("IDSBENCH_STATE_DIR", None)
        else:
            os.environ["IDSBENCH_STATE_DIR"] = old


def _record():
    from idsbench.lab import lab as lab_mod

    return lab_mod.load(LAB)


def _spec(path: Path, inventory: Path, *, samples: int, rates: list[str], known_hosts: Path | None = None) -> Path:
    lines = [f'name = "{path.stem}"', f"samples = {samples}", "[traffic]", f'traces = ["{TRACE}"]',
             "replayers = [1, 2]", f"rate = [{', '.join(rates)}]", "[sensor]", 'rules = ["builtin:markers"]',
             "[timing]", "settle_s = 0.5", "[hosts]", f'inventory = "{inventory}"']
    if known_hosts is not None:
        lines.append(f'known_hosts = "{known_hosts}"')
    path.write_text("\n".join(lines) + "\n")
    return path


def _processes(container: str) -> list[str]:
    out = subprocess.run(["podman", "exec", container, "ps", "-e", "-o", "comm="], capture_output=True, text=True,
                         timeout=60).stdout.split()
    return [p for p in out if p not in ("sshd", "ps")]


def _nothing_running_on_hosts() -> None:
    for host in _record().hosts:
        assert _processes(host.container) == [], f"{host.name} still runs {_processes(host.container)}"


def _assert_exact(campaign_dir: Path, expect_pairs: set[str]) -> None:
    campaign = load_campaign(campaign_dir)
    seen = set()
    for s in campaign.samples:
        summary = s.summary
        assert summary.status == "ok", (s.case_id, s.index, summary.status, summary.reason)
        c = summary.sensor.counters
        expected = summary.case.replayers * summary.trace.packets
        assert c.dropped_pkts == 0 and c.decoded_pkts == expected, (s.case_id, c)
        assert summary.replay is not None and summary.replay.sent_pkts == expected
        assert summary.wire is not None and summary.wire.sender_tx_pkts == expected == summary.wire.sensor_rx_pkts
        assert summary.detection is not None
        assert summary.detection.marker_alerts == summary.detection.expected_marker_alerts
        seen.add(summary.pair)
        # artifacts are here, and are what the hosts wrote (sha256 recorded when fetched)
        hosts_doc = json.loads((s.path / HOSTS_FILE).read_text())
        assert hosts_doc["pair"] == summary.pair
        artifacts = hosts_doc["artifacts_sha256"]
        replay_reports = [n for n in artifacts if n.startswith("replay-")]  # the sender's own report(s)
        assert replay_reports, artifacts
        for name in ("eve.json", "suricata.log", "monitor.csv", "counters.csv", "sender-monitor.csv", *replay_reports):
            assert name in artifacts, name
            assert hashlib.sha256((s.path / name).read_bytes()).hexdigest() == artifacts[name]
        assert abs(hosts_doc["hosts"]["sensor"]["clock_offset_s"]) < 1.0
    assert seen == expect_pairs
    for row in case_table(campaign):
        assert row.to_row()["pair"] in expect_pairs
    for host in _record().hosts:
        probe = json.loads((campaign_dir / PROBES_DIR / f"{host.name}.json").read_text())
        assert probe["hostname"] == host.name and "eth1" in probe["interfaces"]


def test_hosts_check_after_provision(lab, capsys):
    assert cli(["hosts", "check", "--inventory", str(lab["inventory"])]) == 0
    out = capsys.readouterr().out
    assert "MISS" not in out and "4 host(s) ready" in out


def test_campaign_on_two_pairs_is_exact(lab, tmp_path, cache_dir):
    spec = load_spec(_spec(tmp_path / "twopairs.toml", lab["inventory"], samples=1, rates=['"recorded"']))
    out = tmp_path / "out"
    result = run_campaign(spec, out, state_dir=tmp_path / "st", cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    assert result.ran == 2 and not result.failed, result.failed
    _assert_exact(out, {"p1-sender/p1-sensor", "p2-sender/p2-sensor"})
    _nothing_running_on_hosts()
    assert not list((tmp_path / "st").glob("*.json"))  # the controller's ssh processes are gone too


def test_host_killed_mid_campaign_then_resume(lab, tmp_path, cache_dir):
    spec_file = _spec(tmp_path / "kill.toml", lab["inventory"], samples=2, rates=['"recorded"', "{ pps = 1000 }"])
    out = tmp_path / "out"
    record = _record()
    victim = "p2-sensor"
    env = {**os.environ, "IDSBENCH_STATE_DIR": str(tmp_path / "st"), "IDSBENCH_CACHE": str(cache_dir),
           "IDSBENCH_PREFIX": TEST_PREFIX}
    run = subprocess.Popen([sys.executable, "-m", "idsbench.cli.main", "run", str(spec_file), "--out", str(out),
                            "--no-report"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # kill the pair-2 sensor host (its container's init, by PID) once its first sample is done
        deadline = time.monotonic() + 180
        p2_done: list[Path] = []
        while time.monotonic() < deadline and not p2_done and run.poll() is None:
            p2_done = [p for p in out.glob("cases/*/s*/summary.json") if "p2-sender/p2-sensor" in p.read_text()]
            time.sleep(0.2)
        assert p2_done, "pair 2 finished no sample"
        while not any(p.lower().startswith("suricata") for p in _processes(record.host(victim).container)):
            assert run.poll() is None and time.monotonic() < deadline, "pair 2 started no next sample"
            time.sleep(0.2)  # until its next sample's sensor runs
        os.kill(_pid(record, victim), signal.SIGKILL)
        output, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, output  # some samples failed
    campaign = load_campaign(out)
    by_pair: dict[str, list[str]] = {}
    for s in campaign.samples:
        by_pair.setdefault(str(s.summary.pair), []).append(s.summary.status)
        if s.summary.status != "ok":
            assert victim in str(s.summary.reason), s.summary.reason
    assert by_pair["p1-sender/p1-sensor"] == ["ok"] * 4          # the other pair finished
    failed = by_pair["p2-sender/p2-sensor"].count("failed")
    assert failed >= 1 and len(by_pair["p2-sender/p2-sensor"]) == 4  # the dead host's samples failed
    assert output.count("failed:") == failed
    for host in ("p1-sender", "p1-sensor", "p2-sender"):
        assert _processes(record.host(host).container) == []       # nothing left running on any host
    assert not list((tmp_path / "st").glob("*.json"))

    from idsbench.lab import lab as lab_mod

    lab_mod.restart_host(record, victim)
    again = run_campaign(load_spec(spec_file), out, resume=True, state_dir=tmp_path / "st", cache_dir=cache_dir,
                         name_prefix=TEST_PREFIX)
    assert not again.failed and again.ran == failed and again.skipped == 8 - failed
    _assert_exact(out, {"p1-sender/p1-sensor", "p2-sender/p2-sensor"})
    _nothing_running_on_hosts()


def _pid(record, host: str) -> int:
    from idsbench.lab import lab as lab_mod

    pid = lab_mod.container_pid(record, host)
    assert pid > 0
    return pid


def test_unknown_host_key_runs_nothing_until_trusted(lab, tmp_path, cache_dir, capsys):
    known = tmp_path / "known_hosts"  # empty: no lab key in it
    spec_file = _spec(tmp_path / "keys.toml", lab["inventory"], samples=1, rates=['"recorded"'], known_hosts=known)
    out = tmp_path / "out"
    with pytest.raises(HostKeyError) as err:
        run_campaign(load_spec(spec_file), out, state_dir=tmp_path / "st", cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    message = str(err.value)
    assert "unknown host key" in message and "SHA256:" in message and "hosts trust" in message
    for host in ("p1-sender", "p1-sensor", "p2-sender", "p2-sensor"):
        assert host in message
    assert not out.exists()  # nothing was run, nothing written
    # ssh itself refuses the unknown key too (the scan is only the early, readable check)
    inv = load_inventory(lab["inventory"])
    stack = TeardownStack(state_dir=tmp_path / "st")
    with stack, pytest.raises((HostLost, EnvironmentMissing)):
        HostLink(inv.host("p1-sensor"), known, stack, tmp_path / "agent.log").open()
    assert "Host key verification failed" in (tmp_path / "agent.log").read_text()
    # `hosts trust` shows the fingerprints and records them; then the keys are known
    assert cli(["hosts", "trust", "--spec", str(spec_file), "--yes"]) == 0
    shown = capsys.readouterr().out
    assert shown.count("SHA256:") >= 8 and "recorded p2-sensor" in shown
    hostkeys.require_known(list(inv.hosts), known)
    result = run_campaign(load_spec(spec_file), out, state_dir=tmp_path / "st", cache_dir=cache_dir,
                          name_prefix=TEST_PREFIX)
    assert result.ran == 2 and not result.failed


def test_sudo_with_a_password(lab, tmp_path, monkeypatch, capsys):
    """A host whose login user needs a password for sudo: check says so, the agent becomes root with
    the password, a wrong or missing one is a clear error, the password is never logged."""
    sensor = _record().host("p1-sensor")
    setup = ("useradd -m bench && echo bench:benchpw | chpasswd && mkdir -p ~bench/.ssh && "
             "cp /etc/ssh/idsbench/authorized_keys ~bench/.ssh/ && chown -R bench: ~bench/.ssh && "
             "echo 'bench ALL=(ALL) ALL' > /etc/sudoers.d/bench && chmod 440 /etc/sudoers.d/bench")
    # (test setup only: a user account as an admin would create it)
    subprocess.run(["podman", "exec", sensor.container, "sh", "-c", setup], check=True, timeout=60)
    try:
        inv = load_inventory(lab["inventory"])
        host = inv.host("p1-sensor").model_copy(update={"user": "bench", "become": "sudo"})
        from idsbench.hosts.check import check_hosts

        items = {i.what: i for i in check_hosts([host], inv.known_hosts)}  # type: ignore[arg-type]
        assert items["ssh login"].ok and "bench@" in items["ssh login"].detail
        assert "asks for a password" in items["root"].detail
        monkeypatch.setattr("idsbench.hosts.link.READY_TIMEOUT_S", 5.0)
        stack = TeardownStack(state_dir=tmp_path / "st")
        with stack:
            link = HostLink(host, inv.known_hosts, stack, tmp_path / "good.log", become_password="benchpw").open()
            assert link.hello.uid == 0 and link.hello.suricata
            link.close()
            with pytest.raises(HostLost, match="did sudo accept the become password"):
                HostLink(host, inv.known_hosts, stack, tmp_path / "bad.log", become_password="wrong").open()
            with pytest.raises(HostLost, match="a password is required"):
                HostLink(host, inv.known_hosts, stack, tmp_path / "none.log").open()
        assert not list((tmp_path / "st").glob("*.json"))
        assert not any("benchpw" in p.read_text() for p in tmp_path.glob("*.log"))
    finally:
        subprocess.run(["podman", "exec", sensor.container, "sh", "-c",
                        "rm -f /etc/sudoers.d/bench; userdel -r bench"], timeout=60)
    assert _processes(sensor.container) == []


def test_lab_down_leaves_nothing(lab):
    record = _record()
    assert cli(["lab", "down", "--name", LAB]) == 0
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not [n for n in namespaces.split() if n.startswith(f"{LAB}-")]
    containers = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True).stdout
    assert not [c for c in containers.split() if c.startswith(f"{LAB}-")]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"{LAB}-c" not in links
    addresses = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    assert record.controller not in addresses and record.subnet not in routes
    assert not Path(record.inventory).exists() and not Path(record.known_hosts).exists()
    assert not (lab["state"] / "labs" / f"{LAB}.json").exists()
    assert not list(lab["state"].glob("*.json"))
