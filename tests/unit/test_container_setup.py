"""Container setups without a runtime: argv, state parsing, cgroup discovery, accounting sources."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.infra.cgroups import MemoryEvents
from idsbench.infra.rootfs import Manifest
from idsbench.setups.container import runtime as crt
from idsbench.setups.container.image import Image, check_version, image_ref, parse_labels
from idsbench.setups.container.monitor import (
    ContainerStats,
    KernelOomReport,
    KmsgOomWatch,
    ProcessSource,
    cgroup_dirs,
    kmsg_memcg_usage,
    kmsg_oom_kill,
    parse_proc_cgroup,
    with_kernel_oom,
)
from idsbench.setups.registry import KINDS as SETUPS
from idsbench.spec import spec_from_dict

MOUNTINFO_V1 = """\
25 0 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 25 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate
33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct
34 30 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:13 - cgroup cgroup rw,memory
"""
PROC_CGROUP_V1 = """\
12:memory:/libpod_parent/libpod-abc
4:cpu,cpuacct:/libpod_parent/libpod-abc
0::/
"""


def _rt() -> crt.Runtime:
    return crt.docker_runtime("unix:///run/ibdocker-x/docker.sock", 42)


def test_create_argv_mounts_at_same_paths_with_limits_and_no_privileged(tmp_path):
    rules = tmp_path / "r.rules"
    argv = crt.create_argv(
        _rt(), name="ib-x", image="localhost/idsbench-suricata:7", network="container:P",
        limits=crt.Limits(cpus=0.5, cpuset=(1, 0, 1), memory_bytes=64 << 20, swappiness=0),
        rw_paths=[tmp_path], ro_paths=[rules, tmp_path], workdir=tmp_path,
        command=["suricata", "-c", str(tmp_path / "s.yaml")])
    assert argv[:4] == ["docker", "-H", "unix:///run/ibdocker-x/docker.sock", "create"]
    text = " ".join(argv)
    assert f"-v {tmp_path}:{tmp_path}:rw" in text and f"-v {rules}:{rules}:ro" in text
    assert f"{tmp_path}:{tmp_path}:ro" not in text  # the sample dir stays writable
    assert "--cpus 0.5" in text and "--cpuset-cpus 0,1" in text
    assert f"--memory {64 << 20}b --memory-swap {64 << 20}b" in text and "--memory-swappiness 0" in text
    assert "--network container:P" in text and "--pull never" in text
    assert "--privileged" not in argv
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--cap-add"] == list(crt.CAPABILITIES)
    entry = argv.index("--entrypoint")
    assert argv[entry + 1:] == ["suricata", "localhost/idsbench-suricata:7", "-c", str(tmp_path / "s.yaml")]


def test_create_argv_adds_what_the_capture_needs_once(tmp_path):
    argv = crt.create_argv(
        _rt(), name="ib-x", image="i", network="container:P", limits=crt.Limits(), rw_paths=[tmp_path],
        ro_paths=[], workdir=tmp_path, command=["suricata"], capabilities=("SYS_ADMIN", "NET_ADMIN"))
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--cap-add"] == [*crt.CAPABILITIES, "SYS_ADMIN"]


def test_no_limits_means_no_limit_flags():
    assert crt.limit_args(crt.Limits()) == []


def test_ulimits_never_exceed_the_callers_hard_limits():
    args = crt.ulimit_args()
    values = dict(a.split("=", 1) for a in args[1::2])
    nofile_hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    soft, hard = map(int, values["nofile"].split(":"))
    assert soft == hard <= (nofile_hard if nofile_hard != resource.RLIM_INFINITY else crt.NOFILE)


def test_runtime_validation():
    assert crt.validate_runtime("auto") == "auto"
    with pytest.raises(SpecError, match="lxc"):
        crt.validate_runtime("lxc")


def test_parse_state_podman_and_docker():
    podman = {"Status": "exited", "Running": False, "OOMKilled": False, "Pid": 0, "ExitCode": 137,
              "ConmonPid": 0}
    s = crt.parse_state(json.dumps(podman))
    assert (s.running, s.exit_code, s.oom_killed, s.conmon_pid) == (False, 137, False, None)
    docker = {"Status": "running", "Running": True, "OOMKilled": False, "Pid": 4242, "ExitCode": 0}
    s = crt.parse_state(json.dumps(docker))
    assert (s.running, s.pid, s.exit_code) == (True, 4242, None)
    created = crt.parse_state(json.dumps({"Status": "created", "Running": False, "Pid": 0, "ExitCode": 0}))
    assert created.exit_code is None and created.pid == 0


def test_cgroup_discovery_v1_hybrid():
    assert parse_proc_cgroup(PROC_CGROUP_V1)["cpuacct"] == "/libpod_parent/libpod-abc"
    version, dirs = cgroup_dirs(1, MOUNTINFO_V1, PROC_CGROUP_V1)
    assert version == 1
    assert dirs == {"cpuacct": Path("/sys/fs/cgroup/cpu,cpuacct/libpod_parent/libpod-abc"),
                    "memory": Path("/sys/fs/cgroup/memory/libpod_parent/libpod-abc")}


def test_cgroup_discovery_v2():
    mountinfo = "31 30 0:27 / /sys/fs/cgroup rw,nosuid shared:10 - cgroup2 cgroup2 rw\n"
    version, dirs = cgroup_dirs(1, mountinfo, "0::/system.slice/docker-abc.scope\n")
    assert version == 2 and dirs["memory"] == Path("/sys/fs/cgroup/system.slice/docker-abc.scope")
    with pytest.raises(FileNotFoundError):
        cgroup_dirs(1, "", "0::/x\n")


def test_container_stats_zero_before_attach_and_last_values_after_exit(tmp_path):
    stats = ContainerStats()
    assert (stats.cpu_usage_ns(), stats.memory_bytes(), stats.memory_peak_bytes()) == (0, 0, 0)
    cpu, mem = tmp_path / "cpuacct", tmp_path / "memory"
    cpu.mkdir()
    mem.mkdir()
    (cpu / "cpuacct.usage").write_text("5000\n")
    (mem / "memory.usage_in_bytes").write_text("300\n")
    (mem / "memory.max_usage_in_bytes").write_text("700\n")
    (mem / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    stats.attach_dirs(1, {"cpuacct": cpu, "memory": mem})
    assert (stats.cpu_usage_ns(), stats.memory_bytes(), stats.memory_peak_bytes(), stats.oom_kills()) == \
        (5000, 300, 700, 1)
    stats.detach()  # the runtime removes the cgroup at exit
    for d in (cpu, mem):
        for f in d.iterdir():
            f.unlink()
    assert (stats.cpu_usage_ns(), stats.memory_bytes(), stats.memory_peak_bytes()) == (5000, 300, 700)


def test_process_source_sums_known_pids_with_per_pid_deltas():
    now = [0.0]
    usage = {10: (100, 4096), 11: (50, 8192)}
    pids = [10]
    src = ProcessSource(lambda: pids, clock=lambda: now[0], reader=lambda p: usage.get(p))
    assert src.columns() == ["isolation_cpu_pct", "isolation_mem_bytes"]
    src.start()
    import idsbench.setups.container.monitor as cm
    hz = cm.CLOCK_TICKS
    usage[10] = (100 + hz // 2, 4096)  # half a core over 1 s
    now[0] = 1.0
    row = src.sample()
    assert row["isolation_cpu_pct"] == pytest.approx(50.0) and row["isolation_mem_bytes"] == 4096
    pids.append(11)  # appears: counts from its first reading, not since boot
    now[0] = 2.0
    row = src.sample()
    assert row["isolation_cpu_pct"] == 0.0 and row["isolation_mem_bytes"] == 4096 + 8192
    del usage[10]  # exits
    now[0] = 3.0
    assert src.sample()["isolation_mem_bytes"] == 8192


def test_kmsg_oom_record_matches_the_container_only():
    cid = "e9a03329bc0667790b487e09a54f0282d0e2cb090b16eceb9b0391ca286b70f9"
    rec = (f"3,1234,2231262561,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset={cid},"
           f"mems_allowed=0,oom_memcg=/docker/{cid},task_memcg=/docker/{cid},task=Suricata-Main,pid=9,uid=0\n")
    assert kmsg_oom_kill(rec, cid)
    assert not kmsg_oom_kill(rec, "0" * 64)
    assert not kmsg_oom_kill(f"6,1,1,-;Memory cgroup out of memory: Killed process 9 {cid}\n", cid)


def test_image_ref_labels_and_version_refusal():
    m = Manifest("debian-bookworm-amd64-suricata-7", "debian", "bookworm", "amd64", "1:7.0.10-1",
                 "7.0.10", "bookworm-backports", "http://mirror.example/debian", (), 1.0, 0.0)
    ref = image_ref(m)
    assert ref.startswith("localhost/idsbench-suricata:7.0.10-")
    assert parse_labels('{"org.idsbench.suricata-version":"7.0.10"}\n') == {"org.idsbench.suricata-version": "7.0.10"}
    assert parse_labels("null") == {}
    check_version(Image(ref, "7.0.10", m.key), "7.0.10")
    with pytest.raises(EnvironmentMissing, match="7.0.9.*7.0.10|Suricata 7.0.9"):
        check_version(Image(ref, "7.0.9", m.key), "7.0.10")


def test_registered_and_specifiable():
    assert {"container", "container-vtap"} <= set(SETUPS)
    spec = spec_from_dict({"name": "x", "setup": {"kinds": ["container", "container-vtap"],
                                                  "runtime": "docker", "swappiness": 0}})
    assert spec.setup.runtime == "docker" and spec.setup.swappiness == 0
    with pytest.raises(SpecError, match="runtime"):
        spec_from_dict({"name": "x", "setup": {"runtime": "lxc"}})


def test_kernel_oom_report_completes_a_container_reading_its_runtime_removed():
    cid = "c0b8b33ae38d433e10a43b10c00820ce63ec255e47e8ff0cd10e13a71324b0f3"
    records = [
        "4,1,1,-;Suricata-Main invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0\n",
        "6,2,2,-;memory: usage 98304kB, limit 98304kB, failcnt 7\n",
        f"6,3,3,-;Memory cgroup stats for /libpod_parent/libpod-{cid}:\n",
        (f"6,4,4,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=libpod-{cid},mems_allowed=0,"
         f"oom_memcg=/libpod_parent/libpod-{cid},task_memcg=/libpod_parent/libpod-{cid},task=Suricata-Main,pid=9,uid=0\n"),
    ]
    watch = KmsgOomWatch("/nonexistent")  # /dev/kmsg gives one record a read: fed here one by one
    watch.container_id = cid
    for rec in records:
        watch._take(rec)
    assert watch.state() == (1, KernelOomReport(96 << 20, 96 << 20, 7))

    stats = ContainerStats(kernel_oom=watch.state)
    assert stats.memory_events() == MemoryEvents(limit_bytes=96 << 20, usage_bytes=0, peak_bytes=96 << 20,
                                                 limit_hits=7, oom_kills=1)
    last = MemoryEvents(limit_bytes=96 << 20, usage_bytes=91 << 20, peak_bytes=91 << 20, anon_bytes=90 << 20)
    merged = with_kernel_oom(last, 1, watch.report)
    assert (merged.peak_bytes, merged.usage_bytes, merged.oom_kills, merged.limit_hits) == (96 << 20, 91 << 20, 1, 7)
    assert merged.reached_limit() and not last.reached_limit()


def test_kernel_oom_report_of_another_group_is_not_the_containers():
    cid = "a" * 64
    watch = KmsgOomWatch("/nonexistent")
    watch.container_id = cid
    watch._take("6,2,2,-;memory: usage 4096kB, limit 4096kB, failcnt 0\n")
    watch._take("6,4,4,-;oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/other,task_memcg=/other,task=x,pid=9\n")
    assert (watch.kills, watch.report) == (0, None)
    assert kmsg_memcg_usage("6,2,2,-;memory+swap: usage 1kB, limit 2kB, failcnt 0\n") is None
    assert with_kernel_oom(None, 0, None) is None
