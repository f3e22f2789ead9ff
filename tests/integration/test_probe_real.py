"""Real probe, timer program, tuning overlay and --apply on this host (root; namespaces and veths
named with IDSBENCH_TEST_PREFIX, removed in finally blocks)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from idsbench import native, settings
from idsbench.probe.collect import collect
from idsbench.probe.diff import load
from idsbench.probe.timers import parse_output, timer_argv
from idsbench.probemodel import HostProbe
from idsbench.proc import Supervisor
from idsbench.teardown import TeardownStack
from idsbench.tune import PlanOptions, make_plan
from idsbench.tune.overlay import base_config
from idsbench.tune.render import overlay_yaml

PREFIX = os.environ.get("IDSBENCH_TEST_PREFIX", "ibc")
MARKERS = Path(__file__).resolve().parents[2] / "src" / "idsbench" / "sensors" / "rules" / "markers.rules"


def need(*programs: str) -> None:
    why = None
    if os.geteuid() != 0:
        why = "needs root (namespaces, veth, ethtool changes)"
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        why = f"{', '.join(missing)} not installed (make setup)"
    if why:
        if settings.strict():
            pytest.fail(why)
        pytest.skip(why)


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=120)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "idsbench.cli.main", *args], capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.fixture
def veth_in_netns() -> Iterator[tuple[str, str]]:
    """(namespace, interface): a veth whose peer stays in this namespace, both up."""
    need("ip", "ethtool")
    tag = secrets.token_hex(3)
    ns, outer, inner = f"{PREFIX}{tag}-ns", f"{PREFIX}{tag}o", f"{PREFIX}{tag}i"
    try:
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
        sh("ip", "link", "set", outer, "up")
        sh("ip", "-n", ns, "link", "set", inner, "up")
        yield ns, inner
    finally:
        sh("ip", "link", "del", outer, check=False)
        sh("ip", "netns", "del", ns, check=False)


@pytest.fixture
def veth_here() -> Iterator[str]:
    """A veth pair in this namespace (no address, no route); yields one end."""
    need("ip", "ethtool")
    tag = secrets.token_hex(3)
    a, b = f"{PREFIX}{tag}a", f"{PREFIX}{tag}b"
    try:
        sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
        sh("ip", "link", "set", a, "up")
        sh("ip", "link", "set", b, "up")
        yield a
    finally:
        sh("ip", "link", "del", a, check=False)


def has_program_interpreter(path: Path) -> bool:
    """True when the ELF64 file has a PT_INTERP program header (it is dynamically linked)."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2, f"{path} is not ELF64"
    phoff = int.from_bytes(data[0x20:0x28], "little")
    size, count = int.from_bytes(data[0x36:0x38], "little"), int.from_bytes(data[0x38:0x3A], "little")
    return any(int.from_bytes(data[phoff + i * size: phoff + i * size + 4], "little") == 3 for i in range(count))


def lscpu_hypervisor() -> str | None:
    out = sh("lscpu", check=False).stdout
    match = re.search(r"^Hypervisor vendor:\s*(\S+)", out, re.MULTILINE)
    return match.group(1).lower() if match else None


def test_probe_this_host_and_a_veth_in_a_namespace(veth_in_netns, tmp_path):
    need("suricata")
    ns, iface = veth_in_netns
    done = cli("probe", "--json", "--iface", iface, "--netns", ns)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    for key in ("cpu", "numa_nodes", "hypervisor", "cgroup_version", "kernel", "cmdline", "timers", "interfaces",
                "sensor"):
        assert key in doc
    p = HostProbe.model_validate(doc)
    assert p.cpu.count == os.cpu_count() and p.cpu.model
    assert p.cgroup_version == (2 if Path("/sys/fs/cgroup/cgroup.controllers").exists() else 1)
    assert p.kernel == os.uname().release
    if "hypervisor" in p.cpu.flags:
        assert p.hypervisor not in (None, "unknown")
        if lscpu_hypervisor():
            assert p.hypervisor == lscpu_hypervisor()
    for key in ("cpuid_rdtsc_ns", "lfence_rdtsc_ns", "rdtsc_ns", "rdtscp_ns", "clock_gettime_ns"):
        value = getattr(p.timers, key)
        assert value is not None and value > 0, key
    veth = p.interfaces[iface]
    assert veth.driver == "veth" and veth.netns == ns and veth.numa_node is None and veth.irqs == []
    assert veth.queues is not None and veth.queues >= 1 and veth.mtu == 1500
    assert veth.offloads and "generic-receive-offload" in veth.offloads
    assert p.sensor is not None and p.sensor.version and p.sensor.profiling is False
    assert "af-packet" in p.sensor.capture_methods
    summary = cli("probe", "--iface", iface, "--netns", ns, "--no-sensor")
    assert summary.returncode == 0 and f"{iface} (netns {ns}): driver veth" in summary.stdout


def test_probe_diff_shows_a_changed_kernel_parameter(tmp_path):
    need()
    a = collect(sensor=False)
    b = collect(sensor=False)
    fa, fb = tmp_path / "a.json", tmp_path / "b.json"
    fa.write_text(a.to_json())
    fb.write_text(b.to_json())
    same = cli("probe", "--diff", str(fa), str(fb))
    # Two probes of one host differ at most in timer costs (a busy shared host moves them > 20%).
    changed_paths = [line.strip().split(":")[0] for line in same.stdout.splitlines()[1:]]
    assert all(path.startswith("timers.") for path in changed_paths), same.stdout
    edited = load(fa)
    edited = edited.model_copy(update={"cmdline": f"{edited.cmdline} nohz_full=1",
                                       "boot": edited.boot.model_copy(update={"nohz_full": "1"})})
    fb.write_text(edited.to_json())
    diff = cli("probe", "--diff", str(fa), str(fb))
    assert diff.returncode == 1
    assert 'boot.nohz_full: (absent) → "1"' in diff.stdout and "cmdline:" in diff.stdout


def test_ibtimer_links_statically_and_runs(tmp_path):
    need("gcc")
    binary = tmp_path / "ibtimer-static"
    sh("gcc", "-O2", "-std=gnu11", "-static", "-o", str(binary), str(native.source_path("ibtimer")))
    assert not has_program_interpreter(binary)  # static: runs in any x86-64 Linux guest as is
    assert has_program_interpreter(Path(sys.executable).resolve())  # the check can tell the difference
    costs = parse_output(sh(*timer_argv(binary, rounds=3, round_ms=5)).stdout)
    assert costs.error is None and costs.cpuid_rdtsc_ns and costs.rdtsc_ns
    assert costs.cpuid_rdtsc_ns > costs.rdtsc_ns  # cpuid serializes (and traps in a VM)
    assert costs.lfence_rdtsc_ns and costs.cpuid_rdtsc_ns > costs.lfence_rdtsc_ns  # lfence orders without a trap


def _tuned_overlay(tmp_path: Path, ns: str, iface: str) -> tuple[Path, list[int], list[int]]:
    host = collect([iface], netns=ns, sensor=False, timers=False)
    plan = make_plan(host, PlanOptions(iface=iface, memory_bytes=512 * 2**20, rate_pps=20_000))
    path = tmp_path / "tuned.yaml"
    path.write_text(overlay_yaml(plan.suricata, base_config()))
    return path, plan.layout.management, plan.layout.workers[: int(plan.suricata["af-packet"][0]["threads"])]  # type: ignore[index,call-overload]


def test_overlay_passes_suricata_config_test(veth_in_netns, tmp_path):
    need("suricata")
    ns, iface = veth_in_netns
    overlay, _, _ = _tuned_overlay(tmp_path, ns, iface)
    logs = tmp_path / "logs"
    logs.mkdir()
    argv = ["suricata", "-T", "-c", "/etc/suricata/suricata.yaml", "--include", str(overlay), "-S", str(MARKERS),
            "-l", str(logs)]
    done = sh(*argv, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text(overlay.read_text().replace("memcap: ", "memcap: banana", 1))
    assert sh(*argv[:4], "--include", str(broken), *argv[6:], check=False).returncode != 0  # -T does check it


def test_tuned_suricata_runs_its_workers_on_the_planned_cpus(veth_in_netns, tmp_path):
    need("suricata")
    ns, iface = veth_in_netns
    overlay, management, workers = _tuned_overlay(tmp_path, ns, iface)
    logs = tmp_path / "logs"
    logs.mkdir()
    teardown = TeardownStack(tmp_path / "state")
    sup = Supervisor(teardown)
    try:
        child = sup.start(["suricata", "-c", "/etc/suricata/suricata.yaml", "--include", str(overlay),
                           f"--af-packet={iface}", "-S", str(MARKERS), "-l", str(logs),
                           "--pidfile", str(logs / "suricata.pid")],
                          name="suricata", stdout=logs / "stdout.txt", netns=ns)
        deadline = time.monotonic() + 180
        log = logs / "suricata.log"
        while "Engine started" not in (log.read_text() if log.exists() else ""):
            assert child.poll() is None, (logs / "stdout.txt").read_text()[-2000:]
            assert time.monotonic() < deadline, "suricata not ready"
            time.sleep(0.2)
        pid = int((logs / "suricata.pid").read_text())
        threads: dict[str, str] = {}
        for task in Path(f"/proc/{pid}/task").iterdir():
            comm = (task / "comm").read_text().strip()
            status = (task / "status").read_text()
            match = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.MULTILINE)
            threads[comm] = match.group(1) if match else "?"
        worker_threads = {c: a for c, a in threads.items() if c.startswith("W#")}
        assert len(worker_threads) == len(workers), threads
        assert sorted(int(a) for a in worker_threads.values()) == workers, threads
        flow_manager = next(a for c, a in threads.items() if c.startswith("FM#"))
        assert flow_manager == ",".join(map(str, management)), threads
    finally:
        teardown.close()


def test_apply_on_a_veth_then_undo(veth_here, tmp_path):
    need("ethtool")
    before = sh("ethtool", "-k", veth_here).stdout
    assert "tcp-segmentation-offload: on" in before
    done = cli("tune", "plan", "--iface", veth_here, "--format", "shell", "--out", str(tmp_path), "--apply", "--yes")
    assert done.returncode == 0, done.stderr
    after = sh("ethtool", "-k", veth_here).stdout
    assert "tcp-segmentation-offload: off" in after and "scatter-gather: off" in after
    undo = re.search(r"^undo: sh (\S+)$", done.stderr, re.MULTILINE)
    assert undo, done.stderr
    assert f"ethtool -K {veth_here}" in Path(undo.group(1)).read_text()
    sh("sh", undo.group(1))
    restored = sh("ethtool", "-k", veth_here).stdout
    assert "tcp-segmentation-offload: on" in restored and "scatter-gather: on" in restored
    refused = cli("tune", "plan", "--iface", veth_here, "--apply")  # no terminal, no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr


def test_ansible_role_applies_to_a_veth(veth_here, tmp_path):
    need("ansible-playbook")
    role = tmp_path / "idsbench_tune"
    done = cli("tune", "plan", "--iface", veth_here, "--format", "ansible", "--out", str(role))
    assert done.returncode == 0, done.stderr
    suricata_yaml = tmp_path / "suricata.yaml"
    shutil.copy("/etc/suricata/suricata.yaml", suricata_yaml)
    overlay = tmp_path / "idsbench-tuning.yaml"
    extra = json.dumps({"idsbench_tune_suricata_yaml": str(suricata_yaml), "idsbench_tune_overlay_path": str(overlay)})
    run = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", extra,
                          str(tmp_path / "idsbench-tune.yml")], capture_output=True, text=True, timeout=300, check=False,
                         env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0"})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "tcp-segmentation-offload: off" in sh("ethtool", "-k", veth_here).stdout
    assert overlay.is_file() and "runmode: workers" in overlay.read_text()
    assert suricata_yaml.read_text().rstrip().endswith(f"include: {overlay}")


def test_host_noise_probe_measures_this_host():
    """The quietness probe itself, for real (campaigns in this test session share one measurement:
    conftest.one_noise_probe_per_session): a CPU-bound loop timed in pieces on the CPU asked for."""
    from idsbench.probe.noise import MIN_PIECE_S
    from tests.integration.warm import REAL_MEASURE_NOISE

    cpu = max(os.sched_getaffinity(0))
    noise = REAL_MEASURE_NOISE([cpu], MIN_PIECE_S / 2)  # pieces shorter than its least are raised to it
    print(noise)
    assert list(noise.cpus) == [cpu]
    assert noise.piece_s == MIN_PIECE_S
    assert noise.loop_cv is not None and 0 < noise.loop_cv < 1
    assert noise.loop_cv_10ms is not None and 0 < noise.loop_cv_10ms < 1
    assert noise.steal_pct is None or 0 <= noise.steal_pct <= 100
    assert noise.other_load_pct is None or 0 <= noise.other_load_pct <= 100
