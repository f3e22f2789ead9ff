"""Issue 24, end to end as a user runs it: `idsbench run` from an empty working directory on the ET
Open ruleset (~285 MiB for Suricata) with a 128 MiB limit, in a container (podman) and on bare metal,
beside the same cases with 1 GiB. The starved sensor ends as `oom` naming the limit, within 30 s of
its group reaching the limit (whether the kernel kills it or it stalls in reclaim); the run exits
with its documented code, writes the report, prints no traceback, leaves no container, and the working
directory stays empty (conmon writes its `oom` marker into its cwd: the sample dir now).

The limit was 96 MiB (issue 24's report); it is 128 MiB since this test also holds what
test_container_setups.py checked in a campaign of its own (ET Open in a podman container under 128 MiB
is `oom`): a sensor that does not fit in 128 MiB does not fit in 96 either, so one campaign checks both.
Measured here (2 shared cores): ~1.5 min for the 4 samples."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import TEST_PREFIX
from tests.paths import ET_OPEN, PCAPS

pytestmark = pytest.mark.usefixtures("need_root")

LIMIT = 128 * 2**20
MIB = LIMIT // 2**20
SMTP = PCAPS / "sv_smtp-data-rejected.pcap"  # 199 packets: the replay is not what this tests
HIT_TO_VERDICT_S = 30.0


def _spec(path: Path) -> Path:
    path.write_text(f"""
name = "starved"
samples = 1
[traffic]
traces = ["{SMTP}"]
rate = {{ pps = 1000 }}
[sensor]
rules = ["{ET_OPEN}"]
ready_timeout_s = 180
ground_truth = false  # the offline recall run (ET Open loaded once more, ~15 s) is not what this shows
[setup]
kinds = ["baremetal", "container"]
runtime = "podman"
memory = ["{MIB}m", "1g"]
[timing]
settle_s = 1
""")
    return path


def _limit_hit_unix(sample: Path, reason: str) -> float | None:
    """The earliest time the sensor's group can have reached its limit (monitor.csv, one row a
    second): the first row within 3% of it (usage or the kernel's peak); when no row shows it (a
    sensor that grew and was killed between two rows: the verdict's reason names the kernel's peak
    at the limit), the last row, which came before it. None: neither the rows nor the reason say
    the limit was reached."""
    last = None
    with open(sample / "monitor.csv") as fh:
        for row in csv.DictReader(fh):
            last = float(row["t_unix"])
            seen = max(int(row[k]) for k in ("sensor_mem_bytes", "sensor_mem_peak_bytes") if row[k])
            if seen >= LIMIT * 0.97:
                return last
    return last if f"peak {MIB} MiB" in reason else None


def _podman_containers() -> set[str]:
    out = subprocess.run(["podman", "ps", "-aq", "--no-trunc", "--filter", f"name=^{TEST_PREFIX}"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return set(out.split())


def test_starved_sensor_is_oom_soon_with_a_report_and_nothing_in_the_cwd(tmp_path: Path) -> None:
    if not ET_OPEN.is_file() or not SMTP.is_file():
        pytest.skip(f"shared inputs missing ({ET_OPEN}, {SMTP}: ../shared/data beside the checkout)")
    missing = [p for p in ("podman", "runc", "debootstrap") if shutil.which(p) is None]
    if missing:
        pytest.skip(f"the container case needs {', '.join(missing)} (scripts/install-system.sh)")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    out = tmp_path / "campaign"
    env = {**os.environ, "IDSBENCH_STATE_DIR": str(state), "IDSBENCH_PREFIX": TEST_PREFIX,
           "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    containers = _podman_containers()
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "from idsbench.cli.main import main; raise SystemExit(main())",
                           "run", str(_spec(tmp_path / "spec.toml")), "--out", str(out)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    elapsed = time.monotonic() - started
    print(done.stdout, done.stderr, f"idsbench run: {elapsed:.0f} s")
    assert "Traceback" not in done.stderr + done.stdout
    assert done.returncode == 1, "some samples are not ok: `idsbench run` exits 1"
    assert (out / "report.html").is_file() and f"report: {out / 'report.html'}" in done.stdout
    assert sorted(os.listdir(cwd)) == [], "idsbench wrote into the working directory"
    assert list(state.glob("*.json")) == [], "resources left in the state file"
    assert _podman_containers() - containers == set(), "containers left behind"
    # the OOMs fail fast (test_container_setups.py's bound for its one-sample campaign, here for all four)
    assert elapsed < 400, f"the run took {elapsed:.0f} s"

    by_case = {}
    for summary in out.glob("cases/*/s0/summary.json"):
        doc = json.loads(summary.read_text())
        by_case[(doc["case"]["setup"], doc["case"]["memory"])] = (summary.parent, doc)
    assert len(by_case) == 4, sorted(by_case)
    for setup in ("baremetal", "container"):
        sample, s = by_case[(setup, f"{MIB}m")]
        assert s["status"] == "oom", (setup, s["status"], s.get("reason"))
        assert f"limit {MIB} MiB" in s["reason"] and "raise setup.memory" in s["reason"], s["reason"]
        hit = _limit_hit_unix(sample, s["reason"])
        assert hit is not None, f"{setup}: neither monitor.csv nor the verdict shows the group at its limit"
        print(f"{setup} {MIB}m: limit hit → verdict {s['finished_unix'] - hit:.1f} s; {s['reason']}")
        assert s["finished_unix"] - hit <= HIT_TO_VERDICT_S, (setup, s["finished_unix"] - hit)
        _ok_sample, big = by_case[(setup, "1g")]
        assert big["status"] == "ok", (setup, big["status"], big.get("reason"))
    html = (out / "report.html").read_text()
    assert f"limit {MIB} MiB" in html

    # `idsbench report` on the same campaign, from the same empty directory.
    again = subprocess.run([sys.executable, "-c", "from idsbench.cli.main import main; raise SystemExit(main())",
                            "report", str(out), "--no-index"], cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert sorted(os.listdir(cwd)) == []
