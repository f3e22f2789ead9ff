"""Bad inputs fail before any sample; SIGKILL mid-sample leaves nothing after cleanup; resume completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import TEST_PREFIX, prefixed_namespaces

pytestmark = pytest.mark.usefixtures("need_root")


def _idsbench(*args, env, timeout=300, **kw):
    return subprocess.run([sys.executable, "-m", "idsbench.cli.main", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture
def env(state_dir, cache_dir):
    return {**os.environ, "IDSBENCH_STATE_DIR": str(state_dir), "IDSBENCH_CACHE": str(cache_dir),
            "IDSBENCH_PREFIX": TEST_PREFIX}


def _write_spec(path: Path, traces, *, replayers=(1,), samples=1, pps=500, rules=None) -> Path:
    lines = [f'name = "{path.stem}"', f"samples = {samples}", "[traffic]",
             f"traces = {json.dumps([str(t) for t in traces])}", f"replayers = {list(replayers)}",
             f"rate = {{ pps = {pps} }}", "[timing]", "settle_s = 1"]
    if rules:
        lines += ["[sensor]", f"rules = {json.dumps([str(r) for r in rules])}"]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("case", ["bad-spec", "missing-pcap", "corrupt-pcap", "bad-rules"])
def test_bad_input_fails_before_any_sample(tmp_path, env, pcaps, case):
    good = pcaps / "sv_smtp-data-rejected.pcap"
    if case == "bad-spec":
        spec = tmp_path / "s.toml"
        spec.write_text('name = "s"\n[traffic]\nreplayers = [0]\nratee = "topspeed"\n')
        needle = "traffic.replayers"
    elif case == "missing-pcap":
        spec = _write_spec(tmp_path / "s.toml", [tmp_path / "nope.pcap"])
        needle = "nope.pcap"
    elif case == "corrupt-pcap":
        bad = tmp_path / "corrupt.pcap"
        bad.write_bytes(good.read_bytes()[:24] + b"\xff" * 40)
        spec = _write_spec(tmp_path / "s.toml", [bad])
        needle = "corrupt.pcap"
    else:
        rules = tmp_path / "broken.rules"
        rules.write_text('alert tcp any any -> any any (msg:"x"; content:"a"; sid:1; rev:1;\n'
                         'this is not a rule\n')
        spec = _write_spec(tmp_path / "s.toml", [good], rules=[rules])
        needle = "broken.rules"
    out = tmp_path / "out"
    done = _idsbench("run", spec, "--out", out, "--no-report", env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    message = done.stderr.strip()
    assert needle in message, message
    assert "Fix:" in message or "fix" in message.lower()
    assert not (out / "cases").exists()  # no sample started


def test_sigkill_then_cleanup_then_resume(tmp_path, env, pcaps):
    trace = pcaps / "zeek_modbusBig.pcap"  # 13,622 packets: ~4.5 s per replay at 3000 pps
    spec = _write_spec(tmp_path / "k.toml", [trace], replayers=(1, 2), pps=3000)
    out = tmp_path / "out"
    before = prefixed_namespaces()
    proc = subprocess.Popen([sys.executable, "-m", "idsbench.cli.main", "run", str(spec), "--out", str(out),
                             "--no-report"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.time() + 120
        first = None
        while time.time() < deadline and proc.poll() is None:
            done = sorted(out.glob("cases/*/s0/summary.json"))
            replaying = [p for p in out.glob("cases/*/s0/replay-*") if not (p.parent / "summary.json").exists()]
            if done and replaying:
                first = done[0]
                break
            time.sleep(0.1)
        assert first is not None, "the second sample never started replaying"
        _wait_for_live_replayer(Path(env["IDSBENCH_STATE_DIR"]), proc)  # kill it mid-replay
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert prefixed_namespaces() - before, "a killed run should have left its namespaces (else the test proves nothing)"
    state_files = list(Path(env["IDSBENCH_STATE_DIR"]).glob("*.json"))
    assert state_files
    pids = [r["pid"] for f in state_files for r in json.loads(f.read_text())["resources"] if r["kind"] == "process"]
    assert pids and any(Path(f"/proc/{p}").exists() for p in pids)

    cleaned = _idsbench("cleanup", env=env)
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert "removed netns" in cleaned.stdout
    assert prefixed_namespaces() - before == set()
    assert list(Path(env["IDSBENCH_STATE_DIR"]).glob("*.json")) == []
    deadline = time.monotonic() + 30  # signalled processes go away (or stay zombies of a dead parent)
    while survivors := [p for p in pids if _running(p)]:
        assert time.monotonic() < deadline, f"pids {survivors} survived the cleanup"
        time.sleep(0.05)

    first_mtime = first.stat().st_mtime_ns
    resumed = _idsbench("run", spec, "--out", out, "--resume", "--no-report", env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "1 samples run, 1 already complete" in resumed.stdout
    assert first.stat().st_mtime_ns == first_mtime
    summaries = [json.loads(p.read_text()) for p in out.glob("cases/*/s0/summary.json")]
    assert len(summaries) == 2
    assert all(s["status"] == "ok" and s["sensor"]["counters"]["dropped_pkts"] == 0 for s in summaries)


def _running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        return not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return False


def _wait_for_live_replayer(state_dir: Path, run: subprocess.Popen[bytes] | subprocess.Popen[str],
                            timeout_s: float = 60) -> None:
    """Until the run's teardown state records a replayer process (tcpreplay-N or ibreplay) that runs."""
    deadline = time.monotonic() + timeout_s
    while True:
        live = []
        for f in state_dir.glob("*.json"):
            try:
                records = json.loads(f.read_text())["resources"]
            except (OSError, ValueError, KeyError):
                continue  # being rewritten
            live += [r["pid"] for r in records if r["kind"] == "process" and "replay" in r.get("name", "")
                     and _running(r["pid"])]
        if live:
            return
        assert run.poll() is None, "the run ended before its replay was seen"
        assert time.monotonic() < deadline, f"no running replayer recorded in {state_dir} within {timeout_s} s"
        time.sleep(0.05)


def _as_background_job() -> None:
    """What a non-interactive shell does to a job it starts with `&`: SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sig,started", [(signal.SIGINT, "inherited"), (signal.SIGINT, "background"),
                                         (signal.SIGTERM, "inherited")])
def test_interrupt_mid_sample_tears_everything_down(tmp_path, env, pcaps, sig, started):
    trace = pcaps / "zeek_modbusBig.pcap"
    spec = _write_spec(tmp_path / "i.toml", [trace], replayers=(2,), pps=3000)
    out = tmp_path / "out"
    before = prefixed_namespaces()
    # `kill -INT` stops a run even when it inherited SIGINT ignored (this suite under `make test &`)
    proc = subprocess.Popen([sys.executable, "-m", "idsbench.cli.main", "run", str(spec), "--out", str(out),
                             "--no-report"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=_as_background_job if started == "background" else None)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not list(out.glob("cases/*/s0/replay-*")):
            time.sleep(0.05)
        assert list(out.glob("cases/*/s0/replay-*")), "the replay never started"
        _wait_for_live_replayer(Path(env["IDSBENCH_STATE_DIR"]), proc)  # interrupt it mid-replay
        proc.send_signal(sig)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 130, output
    assert "interrupted" in output
    assert prefixed_namespaces() - before == set()
    assert list(Path(env["IDSBENCH_STATE_DIR"]).glob("*.json")) == []
    assert not list(out.glob("cases/*/s0/summary.json"))  # the interrupted sample is not complete
