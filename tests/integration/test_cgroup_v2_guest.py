"""cgroup v2 for real, although this host mounts v1: one VM guest booted with `cgroup_no_v1=all`
(TCG here) runs tests/guest/inside_cgroup_v2.py with pytest, idsbench's checkout, virtualenv and
Python shared read-only at their host paths (setups/vm/guestrun.py). The inner tests cover
create/limit/attach/read/remove, a CPU quota that throttles, a memory limit that OOM-kills (verdict
`oom`), cpuset pinning, cleanup after a SIGKILLed owner, and a bare-metal `idsbench run` sample with
exact counts and the sensor's CPU and memory read from its v2 cgroup.

The guest image is built into the persistent cache once per machine (debootstrap + tcpreplay:
~2.5 min on a 2-core host); a KVM probe boot (≤ 30 s) runs once per image where /dev/kvm exists.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from idsbench.analysis import case_table
from idsbench.proc import Supervisor
from idsbench.settings import cache_dir as default_cache_dir
from idsbench.settings import strict
from idsbench.setups.vm.guestrun import GuestCommand, GuestRunOptions, run_in_guest
from idsbench.setups.vm.setup import RUNDIR_PREFIX
from idsbench.store.reader import load_campaign
from idsbench.teardown import TeardownStack

from .conftest import PCAPS, TEST_PREFIX

CHECKOUT = Path(__file__).resolve().parents[2]
INNER = CHECKOUT / "tests" / "guest" / "inside_cgroup_v2.py"
V2_CONTROLLERS = {"cpu", "cpuset", "memory", "io", "pids"}


def _cannot(reason: str) -> None:
    if strict():
        pytest.fail(reason)
    pytest.skip(reason)


def _inner_tests() -> set[str]:
    return set(re.findall(r"^def (test_\w+)", INNER.read_text(), flags=re.M))


def _junit_outcomes(path: Path) -> dict[str, str]:
    outcomes = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        outcome = next((t for t in ("failure", "error", "skipped") if t in tags), "passed")
        outcomes[case.attrib["name"]] = outcome
    return outcomes


def _our_qemus(name: str) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if f"{name},debug-threads".encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue
    return pids


def test_cgroup_v2_paths_pass_inside_a_cgroup_v2_guest(tmp_path: Path, state_dir: Path) -> None:
    if os.geteuid() != 0:
        _cannot("booting the guest needs root (qemu with 9p passthrough, the image build)")
    missing = [p for p in ("qemu-system-x86_64", "debootstrap", "mkfs.ext4", "debugfs") if shutil.which(p) is None]
    if missing:
        _cannot(f"the v2 guest needs {', '.join(missing)} (scripts/install-system.sh installs them)")
    if not (PCAPS / "tcpreplay_test.pcap").is_file():
        _cannot(f"shared test captures not found at {PCAPS}")
    out = tmp_path / "guest"
    name = f"{TEST_PREFIX}-cgv2"
    venv_bin = str(Path(sys.executable).parent)
    pcaps = PCAPS.resolve()  # ../shared may be a symlink: the guest sees the share at its real path
    env = (("PYTHONDONTWRITEBYTECODE", "1"), ("IDSBENCH_GUEST_PCAPS", str(pcaps)), ("IDSBENCH_STRICT", "1"), ("IDSBENCH_TEST_PREFIX", TEST_PREFIX),
           ("IDSBENCH_PREFIX", TEST_PREFIX), ("IDSBENCH_GUEST_OUT", str(out)), ("IDSBENCH_CACHE", "/tmp/ibcache"),
           ("HOME", "/root"), ("LC_ALL", "C.UTF-8"), ("PATH", f"{venv_bin}:/usr/sbin:/usr/bin:/sbin:/bin"))
    command = GuestCommand(argv=(sys.executable, "-m", "pytest", "-v", "-rA", "-p", "no:cacheprovider",
                                 f"--junitxml={out / 'junit.xml'}", str(INNER)), env=env, cwd=CHECKOUT)
    started = time.monotonic()
    with TeardownStack(state_dir=state_dir) as td:
        result = run_in_guest(Supervisor(td), command, out, cache_dir=default_cache_dir(),
                              options=GuestRunOptions(name=name, read_only=(CHECKOUT, pcaps)))
    total_s = time.monotonic() - started
    figures = json.loads((out / "figures.json").read_text()) if (out / "figures.json").exists() else {}
    print(f"\nv2 guest: accel {result.accel}, kernel {result.kernel_release}, boot {result.boot_s} s, "
          f"inner tests {result.run_s} s, total {total_s:.1f} s (with image/KVM-probe when first built)")
    print(json.dumps(figures, indent=1))
    tail = "\n".join(result.output.splitlines()[-60:])

    assert not _our_qemus(name), "qemu outlived the test"
    assert not list(Path(tempfile.gettempdir()).glob(f"{RUNDIR_PREFIX}{name}-*")), "the run dir was left"
    assert result.failure is None and not result.timed_out, f"{result.failure}\n{tail}\n{result.console_tail}"
    assert set(result.cgroup2_controllers) >= V2_CONTROLLERS, result.cgroup2_controllers
    assert (out / "junit.xml").is_file(), tail
    outcomes = _junit_outcomes(out / "junit.xml")
    assert outcomes == dict.fromkeys(_inner_tests(), "passed"), f"{outcomes}\n{tail}"
    assert result.exit_code == 0, tail

    # The sample the guest ran, as `idsbench results DIR --format json` reports it (analysed here).
    (row,) = [r.to_row() for r in case_table(load_campaign(out / "campaign"))]
    print(json.dumps({k: row[k] for k in ("status", "sent_pkts", "captured_pkts", "dropped_pkts", "decoded_pkts",
                                          "sensor_cpu_pct", "sensor_rss_peak_bytes", "host_cpu_pct")}))
    assert row["status"] == "ok" and row["samples"] == 1
    assert row["sent_pkts"] == row["captured_pkts"] == row["decoded_pkts"] == 2 * 179 and row["dropped_pkts"] == 0
    assert row["sensor_cpu_pct"] > 0 and row["sensor_rss_peak_bytes"] > 10 * 2**20
