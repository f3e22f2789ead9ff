"""Guest protocol (config, argv file, status), shares, monitor sources, the fd exec helper."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from idsbench.errors import EnvironmentMissing, SensorFailed, SpecError
from idsbench.proc import shim_argv
from idsbench.setups.base import SetupRequest
from idsbench.setups.vm import guest
from idsbench.setups.vm.image import find_kernel, init_script
from idsbench.setups.vm.monitor import GuestCsvSource, QemuSource
from idsbench.setups.vm.qemu import Share
from idsbench.setups.vm.setup import VmOptions, VmRundirResource, vcpus_for

INIT = Path(guest.__file__).parent / "guest_files" / "idsbench-init"


def test_shares_sample_dir_rw_and_rule_dirs_ro(tmp_path):
    sample = tmp_path / "camp" / "s0"
    rules = tmp_path / "rules"
    for d in (sample, rules):
        d.mkdir(parents=True)
    (rules / "a.rules").write_text("")
    (rules / "b.rules").write_text("")
    shares = guest.plan_shares(sample, [rules / "a.rules", rules / "b.rules"])
    assert [(s.path, s.readonly) for s in shares] == [(rules, True), (sample, False)]
    assert [s.tag for s in shares] == ["ib0", "ib1"]


def test_rules_inside_the_sample_dir_are_not_shared_twice(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x.rules").write_text("")
    shares = guest.plan_shares(tmp_path, [tmp_path / "r" / "x.rules"])
    assert shares == (Share("ib0", tmp_path.resolve(), False),)


def test_sample_dir_inside_a_rules_dir_is_mounted_after_it(tmp_path):
    (tmp_path / "x.rules").write_text("")
    sample = tmp_path / "out" / "s0"
    sample.mkdir(parents=True)
    shares = guest.plan_shares(sample, [tmp_path / "x.rules"])
    assert [(s.path, s.readonly) for s in shares] == [(tmp_path, True), (sample, False)]


def test_sharing_the_root_is_refused(tmp_path):
    with pytest.raises(SpecError):
        guest.plan_shares(tmp_path, [Path("/top-level.rules")])  # a file in / means sharing /


def bash_eval(script: str) -> str:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout


def test_guest_conf_survives_awkward_paths_in_bash(tmp_path):
    odd = tmp_path / "it's a \"dir\" $HOME"
    shares = (Share("ib0", odd, True), Share("ib1", tmp_path, False))
    conf = tmp_path / "guest.conf"
    conf.write_text(guest.guest_conf(odd, shares, mtu=9000, interval_s=1))
    out = bash_eval(f". {conf}; printf '%s\\n' \"$SAMPLE_DIR\" \"${{MOUNTS[@]}}\" $CAPTURE_IF $MTU $INTERVAL")
    assert out.splitlines() == [str(odd), "ib0", str(odd), "ro", "ib1", str(tmp_path), "rw", "eth0", "9000", "1"]


def test_argv_file_read_back_by_bash_mapfile(tmp_path):
    argv = ["suricata", "-c", "/x y/suricata.yaml", "--set", "a=b c"]
    f = tmp_path / "sensor.argv"
    f.write_bytes(guest.sensor_argv_file(tmp_path / "stdout.txt", argv))
    out = bash_eval(f"mapfile -d '' -t a < {f}; printf '[%s]' \"${{a[@]}}\"")
    assert out == "".join(f"[{x}]" for x in [str(tmp_path / "stdout.txt"), *argv])
    with pytest.raises(SpecError):
        guest.sensor_argv_file(tmp_path, ["a\0b"])


def test_parse_status():
    st = guest.parse_status("booted 2\nclock 1.5\nstarted 312\n")
    assert st.booted and st.ncpu == 2 and st.clock_set and st.sensor_pid == 312 and st.exit_code is None
    st = guest.parse_status("booted 1\nstarted 312\nexited 137 1\npoweroff\n")
    assert st.exit_code == 137 and st.oom_kills == 1
    assert guest.parse_status("failed cannot mount ib0 at /x\n").failure == "cannot mount ib0 at /x"
    assert guest.parse_status("") == guest.GuestStatus()


def test_console_oom():
    assert guest.console_oom("[ 12.3] Out of memory: Killed process 312 (Suricata-Main)")
    assert guest.console_oom("[ 12.3] W#01-eth0 invoked oom-killer: gfp_mask=0x140cca")
    assert not guest.console_oom("[ 1.0] Memory: 987654K/1048576K available")


def request(**kw) -> SetupRequest:
    return SetupRequest(sup=None, engine=None, name="x", sample_dir=Path("/tmp"), **kw)  # type: ignore[arg-type]


def test_vcpus_default_rounds_the_cpu_limit_up():
    assert vcpus_for(VmOptions(), request(cpus=0.2)) == 1
    assert vcpus_for(VmOptions(), request(cpus=1.0)) == 1
    assert vcpus_for(VmOptions(), request(cpus=1.5)) == 2
    assert vcpus_for(VmOptions(), request(cpu_affinity=[1, 2, 3])) == 3
    assert vcpus_for(VmOptions(), request()) == 1
    assert vcpus_for(VmOptions(vcpus=4), request(cpus=1.0)) == 4


def fake_proc(root: Path, pid: int, threads: dict[int, tuple[str, int]], total: int, rss_pages: int):
    def stat(comm, ticks):
        # fields after ')' : state ppid ... utime is the 14th field overall (12th after comm+state)
        rest = ["S"] + ["0"] * 10 + [str(ticks), "0"] + ["0"] * 30
        return f"{pid} ({comm}) " + " ".join(rest)
    (root / str(pid) / "task").mkdir(parents=True, exist_ok=True)
    (root / str(pid) / "stat").write_text(stat("qemu-system-x86", total))
    (root / str(pid) / "statm").write_text(f"1000 {rss_pages} 0 0 0 0 0")
    (root / str(pid) / "status").write_text(f"Name:\tqemu\nVmRSS:\t{rss_pages * 4} kB\nVmLck:\t  8 kB\n"
                                            "VmPin:\t 4 kB\nThreads:\t3\n")
    for tid, (comm, ticks) in threads.items():
        (root / str(pid) / "task" / str(tid)).mkdir(exist_ok=True)
        (root / str(pid) / "task" / str(tid) / "stat").write_text(stat(comm, ticks))


def test_qemu_source_splits_vcpu_and_vhost_time(tmp_path):
    now = [0.0]
    hz = os.sysconf("SC_CLK_TCK")
    fake_proc(tmp_path, 50, {50: ("qemu-system-x86", 0), 51: ("CPU 0/TCG", 0), 52: ("vhost-50", 0)}, 0, 10)
    src = QemuSource(50, proc=tmp_path, clock=lambda: now[0])
    src.start()
    fake_proc(tmp_path, 50, {50: ("qemu-system-x86", hz // 10), 51: ("CPU 0/TCG", hz // 2),
                             52: ("vhost-50", hz // 4)}, hz, 10)
    now[0] = 1.0
    row = src.sample()
    assert row["vm_qemu_cpu_pct"] == pytest.approx(100.0)
    assert row["vm_vcpu_cpu_pct"] == pytest.approx(50.0)
    assert row["vm_vhost_cpu_pct"] == pytest.approx(25.0)
    assert row["vm_qemu_threads"] == 3 and row["vm_qemu_rss_bytes"] == 10 * os.sysconf("SC_PAGE_SIZE")
    assert row["vm_qemu_locked_bytes"] == 12 * 1024  # VmLck + VmPin: what VFIO pins (or mlock) holds
    assert set(row) == set(src.columns())
    src.stop()


def test_guest_csv_source_keeps_the_newest_complete_row(tmp_path):
    path = tmp_path / "guest.csv"
    src = GuestCsvSource(path)
    assert src.sample() == {}
    path.write_text("t_unix,guest_cpu_pct,guest_softirq_pct,guest_steal_pct,guest_mem_used_bytes,"
                    "guest_mem_total_bytes,guest_sensor_rss_bytes,guest_oom_kills\n"
                    "1.0,50.00,1.00,0.00,1000,2000,,0\n2.0,75.5")
    assert src.sample() == {"guest_cpu_pct": 50.0, "guest_softirq_pct": 1.0, "guest_mem_used_bytes": 1000,
                            "guest_oom_kills": 0}
    with open(path, "a") as fh:
        fh.write("0,2.00,0.00,3000,4000,512,1\n")
    assert src.sample() == {"guest_cpu_pct": 75.5, "guest_softirq_pct": 2.0, "guest_mem_used_bytes": 3000,
                            "guest_sensor_rss_bytes": 512, "guest_oom_kills": 1}


def test_exec_shim_hands_the_file_over_on_the_fd_and_sets_affinity(tmp_path):
    target = tmp_path / "dev"
    target.write_text("")
    cpu = sorted(os.sched_getaffinity(0))[-1]
    argv = shim_argv([sys.executable, "-c", "import os; print(os.readlink('/proc/self/fd/3'), "
                      "sorted(os.sched_getaffinity(0)), os.getpid())"], cpus=[cpu], open_fds={3: target})
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 0
    fd_target, cpus, pid = out.split(" ", 1)[0], out[out.index("["):out.index("]") + 1], int(out.split()[-1])
    assert fd_target == str(target) and cpus == f"[{cpu}]"
    assert pid == child.pid  # the shim became the program (same PID)
    bad = subprocess.run(shim_argv(["true"], open_fds={3: target})[:-4] + ["--open", "x", "--", "true"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "bad --open" in bad.stderr


def test_guest_init_is_valid_bash_and_packaged():
    assert init_script().startswith(b"#!/bin/bash")
    subprocess.run(["bash", "-n", str(INIT)], check=True)


def test_find_kernel_picks_the_newest_with_an_initrd(tmp_path):
    boot = tmp_path / "boot"
    boot.mkdir()
    for rel in ("6.1.0-9-amd64", "6.1.0-10-amd64", "6.5.0-1-amd64"):
        (boot / f"vmlinuz-{rel}").write_text("")
    for rel in ("6.1.0-9-amd64", "6.1.0-10-amd64"):
        (boot / f"initrd.img-{rel}").write_text("")
    release, vmlinuz, initrd = find_kernel(tmp_path)
    assert release == "6.1.0-10-amd64" and initrd.name == "initrd.img-6.1.0-10-amd64"


def test_vm_rundir_resource_refuses_foreign_dirs(tmp_path):
    mine = tmp_path / "idsbench-vm-x-123"
    mine.mkdir()
    (mine / "status").write_text("booted 1\n")
    VmRundirResource(str(mine)).undo()
    assert not mine.exists()
    with pytest.raises(EnvironmentMissing):
        VmRundirResource(str(tmp_path)).undo()
    assert tmp_path.exists()


class _Qemu:
    def __init__(self, returncode=None):
        self.returncode = returncode

    def poll(self):
        return self.returncode


def _watch(tmp_path: Path, qemu: _Qemu) -> guest.GuestWatch:
    (tmp_path / "console.log").write_text("[    0.1] Linux version 6.1\n[    2.0] idsbench-init: up\n")
    return guest.GuestWatch(tmp_path, qemu, console=tmp_path / "console.log",  # type: ignore[arg-type]
                            qemu_log=tmp_path / "qemu.txt", error=SensorFailed, fix="see console.log")


def test_guest_watch_waits_for_status_lines_and_names_failures(tmp_path: Path) -> None:
    watch = _watch(tmp_path, _Qemu())
    assert watch.status() == guest.GuestStatus()  # no status file yet
    assert watch.wait(lambda st: st.booted, 0.1, "boot") is False
    with pytest.raises(SensorFailed, match=r"(?s)the guest did not boot within 0 s.*qemu said:\n  \(none\)"
                                           r".*Guest console:\n  .*Linux version 6.1"):
        watch.require(lambda st: st.booted, 0.1, "boot")
    (tmp_path / "status").write_text("booted 2\n")
    watch.require(lambda st: st.booted, 0.1, "boot")
    (tmp_path / "status").write_text("booted 2\nfailed no sensor.argv\n")
    with pytest.raises(SensorFailed, match="the guest failed to start the sensor: no sensor.argv") as err:
        watch.require(lambda st: st.sensor_pid is not None, 5, "start the sensor")
    assert err.value.fix == "see console.log"


def test_guest_watch_stops_waiting_when_qemu_exits(tmp_path: Path) -> None:
    watch = _watch(tmp_path, _Qemu(returncode=1))
    with pytest.raises(SensorFailed, match=r"qemu exited \(status 1\) before the guest could boot"):
        watch.wait(lambda st: st.booted, 5, "boot")
