"""idsbench gate for real, kept cheap: the base is the cached 8.0.6 build (`suricata@8.0.6`, what `make
test` builds first), the head the 8.0.6 tree with the smallest patches (tests/data/gate/): a known busy
loop per packet in the Ethernet decoder (3,000 iterations, ~1 µs: some 15-20% of a packet's cost at 5,000 pps
here, far above the 2% threshold and the A/A noise), and one decoder event (ipv4.trunc_pkt, sid 2200003: raised once
by tcpreplay_test.pcap) no longer raised. Built once per machine (cached by the tree's content; the
in-place build tree recompiles two files after any other tree of 8.0.6).

- a head with both changes: verdict `regression` and that sid listed with its counts, exit 1;
- bad input, exit 3 and no gate.json: a tree that does not compile (the error names the build log and the
  compiler's line), an unknown ref, a pcap that does not read.
Figures (two cost sizes on 3 traces, 5 gates base = head, bisect) are benchmarks/bench_gate.py's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.integration.conftest import PCAPS, TEST_PREFIX, unavailable

pytestmark = [pytest.mark.integration, pytest.mark.builds]  # Suricata 8.0.6 or Snort from source: after the builds

DATA = Path(__file__).resolve().parents[1] / "data" / "gate"
SOURCE = Path(__file__).resolve().parents[3] / "shared" / "src" / "suricata-8.0.6.tar.xz"
TRACE = PCAPS / "tcpreplay_test.pcap"  # 179 packets, one truncated IPv4 packet
PATCHES = ("decoder-cost.patch", "decoder-event-off.patch")
EVENT_SID = 2200003


@pytest.fixture
def ready(state_dir: Path) -> Path:
    if os.geteuid() != 0:
        unavailable("needs root (namespaces, AF_PACKET, cgroups)")
    missing = [p for p in ("ip", "tcpreplay", "cargo", "cbindgen", "patch", "git") if shutil.which(p) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    if not SOURCE.is_file() or not TRACE.is_file():
        unavailable(f"the shared source {SOURCE} or captures are absent (../shared beside the checkout)")
    return state_dir


def _tree(dest: Path, patches: tuple[str, ...]) -> Path:
    """The 8.0.6 release tree with `patches` applied."""
    with tarfile.open(SOURCE) as tar:
        tar.extractall(dest.parent / "unpack", filter="tar")
    (dest.parent / "unpack" / "suricata-8.0.6").rename(dest)
    for p in patches:
        subprocess.run(["patch", "-s", "-p1", "-i", str(DATA / p)], cwd=dest, check=True)
    return dest


def _gate(*args: str, env_extra: dict[str, str] | None = None, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "IDSBENCH_PREFIX": TEST_PREFIX, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "idsbench.cli.main", "gate", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)


def test_a_costly_head_that_drops_a_decoder_event_regresses_and_lists_the_sid(tmp_path: Path, ready: Path) -> None:
    head = _tree(tmp_path / "head", PATCHES)
    out = tmp_path / "gate"
    done = _gate("suricata@8.0.6", str(head), "--traffic", str(TRACE), "--rate", "5000", "--duration-s", "3",
                 "--budget-s", "600", "--no-report", "--out", str(out))
    assert done.returncode == 1, done.stderr[-3000:]
    doc = json.loads((out / "gate.json").read_text())
    assert doc["verdict"] == "regression" and doc["exit_status"] == 1, doc["traces"]
    (trace,) = doc["traces"]
    assert trace["samples"] >= 6 and trace["ratio_ci"][0] > 1 + doc["threshold_pct"] / 100
    assert doc["noise_floor_pct"] is not None and doc["aa"]["samples"] >= 6
    listed = {a["sid"]: a for a in doc["alerts_diff"]}
    assert EVENT_SID in listed and listed[EVENT_SID]["base"] > 0 and listed[EVENT_SID]["head"] == 0, doc["alerts_diff"]
    assert doc["base"]["kind"] == "engine" and doc["head"]["kind"] == "tree"
    assert doc["head"]["id"].startswith("tree=") and "--enable-profiling-rules" in doc["head"]["flags"]
    md = (out / "gate.md").read_text()
    assert f"| {EVENT_SID} | {listed[EVENT_SID]['base']} | 0 |" in md and "❌ regression" in md
    assert "regression" in done.stdout and f"sid {EVENT_SID}" in done.stdout


def test_bad_input_exits_3_with_a_clear_message_and_no_verdict(tmp_path: Path, ready: Path) -> None:
    # a tree that does not compile: the error names the build log and quotes the compiler
    broken = _tree(tmp_path / "broken", ())
    c_file = broken / "src" / "decode-ethernet.c"
    c_file.write_text(c_file.read_text().replace("StatsIncr(tv, dtv->counter_eth);", "StatsIncr(tv, dtv->counter_eth)"))
    out = tmp_path / "gate"
    done = _gate("suricata@8.0.6", str(broken), "--traffic", str(TRACE), "--out", str(out))
    assert done.returncode == 3, done.stderr[-3000:]
    assert "failed.log" in done.stderr and "decode-ethernet.c" in done.stderr and "error" in done.stderr
    assert "no verdict" in done.stderr and not (out / "gate.json").exists()
    # an unknown ref of a real repository
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("x\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], check=True)
    done = _gate("suricata@8.0.6", f"{repo}@no-such-branch", "--traffic", str(TRACE), "--out", str(tmp_path / "g2"))
    assert done.returncode == 3 and "no-such-branch" in done.stderr, done.stderr[-2000:]
    # a pcap that does not read
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\xd4\xc3\xb2\xa1" + b"\x00" * 10)
    done = _gate("suricata@8.0.6", "suricata", "--traffic", str(bad), "--out", str(tmp_path / "g3"))
    assert done.returncode == 3 and "bad.pcap" in done.stderr, done.stderr[-2000:]
    assert not list(tmp_path.glob("g*/gate.json"))
