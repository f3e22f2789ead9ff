"""The host side of a VM/container: the category classifier, perf's host report, and the split of
/proc CPU time into categories that add up (recorded perf output in tests/unit/data/hostside/; the
real perf and qemu run in tests/integration/test_vm.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from idsbench.profile.categories import CATEGORIES, classify, qemu_role, runtime_role, symbol_default, thread_default
from idsbench.profile.hostside import HostSideTarget, PerfRow, TaskUsage, parse_rows, split, usage
from idsbench.profile.threads import CLK_TCK, ProcessTime, ThreadTime

DATA = Path(__file__).parent / "data" / "hostside"
TCG = HostSideTarget("qemu", (100,), accel="tcg", monitor_column="sensor_cpu_pct", sensor_cgroup=True)
KVM = HostSideTarget("qemu", (100,), accel="kvm", monitor_column="sensor_cpu_pct", sensor_cgroup=True)
RUNTIME = HostSideTarget("runtime", (300, 301), monitor_column="isolation_cpu_pct")


@pytest.mark.parametrize(("comm", "role"), [
    ("CPU 0/TCG", "vcpu"), ("CPU 3/KVM", "vcpu"), ("ALL CPUs/TCG", "vcpu"), ("qemu-system-x86", "main"),
    ("IO iothread0", "iothread"), ("worker", "worker"), ("vhost-4242", "vhost"), ("call_rcu", "rcu"),
    ("kvm-nx-lpage-re", "other"), ("CPU 0", "other")])
def test_qemu_task_roles(comm, role):
    assert qemu_role(comm) == role


@pytest.mark.parametrize(("comm", "role"), [
    ("conmon", "conmon"), ("podman", "cli"), ("docker", "cli"), ("containerd-shim", "shim"),
    ("containerd-shim-runc-v2", "shim"), ("dockerd", "daemon"), ("containerd", "daemon"), ("runc", "oci"),
    ("slirp4netns", "netstack"), ("pasta", "netstack"), ("bash", "other")])
def test_runtime_process_roles(comm, role):
    assert runtime_role(comm) == role


# (role, dso, symbol, kind, accel) -> category; names from QEMU 7.2, Linux (KVM) and Go sources
TCG_CASES = [
    ("vcpu", "[unknown]", "0x00007f3a4c01b2c0", ".", "guest"),         # TCG's code buffer
    ("vcpu", "//anon", "0x00007f3a4c01b2c0", ".", "guest"),
    ("vcpu", "qemu-system-x86_64", "helper_le_ldq_mmu", ".", "emulation"),  # soft MMU
    ("vcpu", "qemu-system-x86_64", "tb_gen_code", ".", "emulation"),   # translation
    ("vcpu", "qemu-system-x86_64", "cpu_exec", ".", "emulation"),
    ("vcpu", "qemu-system-x86_64", "0x00000000004a1b2c", ".", "emulation"),  # a static function
    ("vcpu", "qemu-system-x86_64", "apic_get_interrupt", ".", "irq_timers"),
    ("vcpu", "qemu-system-x86_64", "x86_cpu_exec_interrupt", ".", "irq_timers"),
    ("vcpu", "qemu-system-x86_64", "virtio_queue_notify", ".", "io"),
    ("vcpu", "qemu-system-x86_64", "memory_region_dispatch_write", ".", "emulation"),
    ("vcpu", "qemu-system-x86_64", "qemu_mutex_lock_impl", ".", "other"),
    ("main", "qemu-system-x86_64", "aio_poll", ".", "polling"),
    ("main", "qemu-system-x86_64", "main_loop_wait", ".", "polling"),
    ("main", "libglib-2.0.so.0.7400.6", "g_main_context_check", ".", "polling"),
    ("main", "libc.so.6", "ppoll", ".", "polling"),
    ("main", "libc.so.6", "__memmove_avx_unaligned_erms", ".", "other"),
    ("main", "qemu-system-x86_64", "timerlist_run_timers", ".", "irq_timers"),
    ("main", "qemu-system-x86_64", "qemu_clock_get_ns", ".", "irq_timers"),
    ("main", "qemu-system-x86_64", "virtio_net_receive", ".", "io"),
    ("main", "qemu-system-x86_64", "qemu_deliver_packet_iov", ".", "io"),
    ("main", "qemu-system-x86_64", "0x0000000000512345", ".", "other"),
    ("main", "[vdso]", "__vdso_clock_gettime", ".", "irq_timers"),
    ("main", "[unknown]", "0x00007f3a4c01b2c0", ".", "other"),        # not a vCPU: no guest code here
    ("worker", "qemu-system-x86_64", "v9fs_co_pwritev", ".", "io"),
    ("worker", "libc.so.6", "pwritev64", ".", "io"),
    ("worker", "libc.so.6", "__memmove_avx_unaligned_erms", ".", "io"),
    ("worker", "[kernel.kallsyms]", "ext4_buffered_write_iter", "k", "io"),
    ("main", "[kernel.kallsyms]", "do_sys_poll", "k", "polling"),
    ("main", "[kernel.kallsyms]", "eventfd_poll", "k", "polling"),           # poll's per-descriptor method
    ("main", "[kernel.kallsyms]", "unix_poll", "k", "polling"),
    ("main", "[kernel.kallsyms]", "__napi_poll", "k", "io"),                 # packet processing, not waiting
    ("main", "[kernel.kallsyms]", "eventfd_write", "k", "io"),
    ("main", "qemu-system-x86_64", "aio_pending", ".", "polling"),
    ("main", "[kernel.kallsyms]", "tap_do_read", "k", "io"),
    ("main", "[kernel.kallsyms]", "_copy_to_iter", "k", "io"),
    ("vcpu", "[kernel.kallsyms]", "__hrtimer_run_queues", "k", "irq_timers"),
    ("vcpu", "[kernel.kallsyms]", "asm_sysvec_apic_timer_interrupt", "k", "irq_timers"),
    ("vcpu", "[kernel.kallsyms]", "futex_wait", "k", "other"),
    ("vcpu", "[kernel.kallsyms]", "clear_page_erms", "k", "emulation"),  # guest RAM faulted in: the vCPU's work
    ("main", "[kernel.kallsyms]", "clear_page_erms", "k", "other"),
    ("main", "[kernel.kallsyms]", "finish_task_switch.isra.0", "k", "other"),
]
KVM_CASES = [
    ("vcpu", "[kvm_intel]", "vmx_vcpu_run", "k", "emulation"),
    ("vcpu", "[kvm_intel]", "vmx_handle_exit", "k", "emulation"),
    ("vcpu", "[kvm]", "x86_emulate_instruction", "k", "emulation"),
    ("vcpu", "[kvm]", "kvm_mmu_page_fault", "k", "emulation"),
    ("vcpu", "[kvm]", "kvm_arch_vcpu_ioctl_run", "k", "emulation"),
    ("vcpu", "[kvm_intel]", "0xffffffffc0a1b2c3", "k", "emulation"),   # unnamed, inside KVM
    ("vcpu", "[kernel.kallsyms]", "__x64_sys_ioctl", "k", "emulation"),  # KVM_RUN's entry
    ("main", "[kernel.kallsyms]", "__x64_sys_ioctl", "k", "other"),
    ("vcpu", "[kvm]", "kvm_vcpu_halt", "k", "polling"),               # halt-polling
    ("vcpu", "[kvm]", "kvm_vcpu_check_block", "k", "polling"),
    ("vcpu", "[kvm]", "kvm_lapic_expired_hv_timer", "k", "irq_timers"),
    ("vcpu", "[kvm]", "kvm_apic_send_ipi", "k", "irq_timers"),
    ("vcpu", "[kvm_intel]", "vmx_deliver_interrupt", "k", "irq_timers"),
    ("vcpu", "[kvm_intel]", "vmx_handle_external_intr", "k", "irq_timers"),
    ("main", "[kvm]", "irqfd_inject", "k", "irq_timers"),
    ("vcpu", "qemu-system-x86_64", "kvm_cpu_exec", ".", "emulation"),
    ("vcpu", "libc.so.6", "ioctl", ".", "emulation"),
    ("vcpu", "qemu-system-x86_64", "address_space_rw", ".", "emulation"),
    ("vhost", "[kernel.kallsyms]", "handle_rx_net", "k", "io"),
    ("vhost", "[vhost_net]", "handle_tx_copy", "k", "io"),
    ("vhost", "[vhost]", "vhost_worker", "k", "io"),
    ("vhost", "[vhost_net]", "vhost_net_busy_poll", "k", "polling"),
    ("vhost", "[kernel.kallsyms]", "schedule", "k", "other"),
    ("vcpu", "[guest.kernel]", "0xffffffff81001234", "g", "guest"),   # perf --guest: guest-mode samples
    ("vcpu", "[unknown]", "0x00007f3a4c01b2c0", ".", "emulation"),     # no TCG buffer under KVM
]
RUNTIME_CASES = [
    ("cli", "podman", "runtime.netpoll", ".", "polling"),
    ("cli", "podman", "runtime.findRunnable", ".", "polling"),
    ("cli", "podman", "runtime.nanotime1", ".", "irq_timers"),
    ("cli", "podman", "runtime.usleep", ".", "irq_timers"),
    ("cli", "podman", "internal/poll.(*FD).Read", ".", "io"),
    ("cli", "podman", "io.copyBuffer", ".", "io"),
    ("cli", "podman", "runtime.mallocgc", ".", "other"),
    ("cli", "podman", "runtime.futex", ".", "other"),
    ("conmon", "libglib-2.0.so.0.7400.6", "g_main_context_iterate.constprop.0", ".", "polling"),
    ("conmon", "conmon", "stdio_cb", ".", "io"),
    ("conmon", "libc.so.6", "read", ".", "io"),
    ("conmon", "libc.so.6", "epoll_wait", ".", "polling"),
    ("netstack", "pasta", "0x0000000000012345", ".", "io"),
]


@pytest.mark.parametrize(("role", "dso", "symbol", "kind", "category"), TCG_CASES)
def test_classify_under_tcg(role, dso, symbol, kind, category):
    assert classify(role, dso, symbol, kind, "tcg") == category


@pytest.mark.parametrize(("role", "dso", "symbol", "kind", "category"), KVM_CASES)
def test_classify_under_kvm_from_kvm_and_qemu_source_names(role, dso, symbol, kind, category):
    """Untested on KVM hardware (this machine cannot boot KVM guests): names from linux/arch/x86/kvm,
    drivers/vhost and qemu's accel/kvm."""
    assert classify(role, dso, symbol, kind, "kvm") == category


@pytest.mark.parametrize(("role", "dso", "symbol", "kind", "category"), RUNTIME_CASES)
def test_classify_runtime_processes(role, dso, symbol, kind, category):
    assert classify(role, dso, symbol, kind, None) == category


def test_defaults_by_role():
    assert thread_default("vcpu", "tcg") == "guest" and thread_default("vcpu", "kvm") == "emulation"
    assert symbol_default("vcpu") == "emulation" and symbol_default("worker") == "io"
    assert thread_default("main", "tcg") == "other" and thread_default("vhost", "kvm") == "io"


def test_parse_rows_reads_thread_names_with_spaces():
    text = (DATA / "qemu-tcg-report.txt").read_text()
    rows = parse_rows(text)
    assert rows and all(r.samples > 0 for r in rows)
    assert any(r.comm.startswith("CPU ") and r.comm.endswith("/TCG") for r in rows)
    # every line with a sample count is a row
    assert sum(r.samples for r in rows) == sum(int(line.split("|")[1]) for line in text.splitlines()
                                               if line.count("|") >= 4)
    assert {r.kind for r in rows} <= {"k", "."}


def _task(tid, name, cpu, guest=0.0, process="qemu-system-x86", target=TCG):
    return TaskUsage(tid, process, name, target.role(process, name), cpu, guest)


def test_split_of_a_recorded_tcg_sample_adds_up_to_the_cgroup():
    rows = parse_rows((DATA / "qemu-tcg-report.txt").read_text())
    rec = json.loads((DATA / "qemu-tcg-proc.json").read_text())
    tasks = [_task(t["tid"], t["name"], t["cpu_s"]) for t in rec["threads"]]
    result = split(TCG, tasks, rec["exited_s"], rows)
    assert result.by == "perf" and result.perf_samples == sum(r.samples for r in rows) == 420
    assert sum(result.seconds.values()) == pytest.approx(result.total_s, abs=1e-9)
    assert abs(result.total_s - rec["cgroup_cpu_s"]) <= 0.1 * rec["cgroup_cpu_s"]
    shares = {c: round(result.share(c), 3) for c in CATEGORIES}
    # the vCPU ran translated guest code ([JIT] tid …) and TCG's lookup/translation around it
    assert shares["guest"] > 0.25 and shares["emulation"] > 0.3, shares
    assert shares["polling"] > 0 and shares["irq_timers"] > 0 and shares["io"] > 0, shares
    vcpu = next(t for t in result.threads if t.role == "vcpu")
    assert vcpu.name == "CPU 0/TCG" and vcpu.perf_samples == 335


def test_split_takes_guest_time_from_proc_and_the_rest_by_samples():
    rows = [PerfRow(11, "CPU 0/KVM", "[kvm_intel]", "vmx_vcpu_run", "k", 30),
            PerfRow(11, "CPU 0/KVM", "[kvm]", "kvm_vcpu_halt", "k", 10),
            PerfRow(11, "CPU 0/KVM", "[guest.kernel]", "0xffffffff81000000", "g", 500),  # never counted twice
            PerfRow(10, "qemu-system-x86", "qemu-system-x86_64", "aio_poll", ".", 4),
            PerfRow(10, "qemu-system-x86", "qemu-system-x86_64", "virtio_net_flush_tx", ".", 4)]
    tasks = [_task(11, "CPU 0/KVM", 5.0, guest=4.0, target=KVM), _task(10, "qemu-system-x86", 0.5, target=KVM),
             _task(12, "call_rcu", 0.1, target=KVM)]  # no sample: by its role
    result = split(KVM, tasks, 0.0, rows)
    assert result.seconds == pytest.approx({"guest": 4.0, "emulation": 0.75, "polling": 0.25 + 0.25,
                                            "io": 0.25, "irq_timers": 0.0, "other": 0.1})
    assert result.total_s == pytest.approx(5.6)
    assert any("guest-mode" in n for n in result.notes)
    vcpu = next(t for t in result.threads if t.role == "vcpu")
    assert vcpu.guest_s == 4.0 and vcpu.perf_samples == 40


def test_split_without_perf_goes_by_thread_role():
    tasks = [_task(1, "CPU 0/TCG", 3.0), _task(2, "qemu-system-x86", 1.0), _task(3, "worker", 0.5)]
    result = split(TCG, tasks, 0.25, None)
    assert result.by == "threads" and result.perf_samples == 0
    assert result.seconds == pytest.approx({"guest": 3.0, "emulation": 0.0, "io": 0.5, "irq_timers": 0.0,
                                            "polling": 0.0, "other": 1.25})
    assert any("exited" in n for n in result.notes)


def test_exited_threads_go_by_the_samples_of_threads_that_are_gone():
    rows = [PerfRow(7, "worker", "qemu-system-x86_64", "v9fs_co_preadv", ".", 3),   # tid 7 exited
            PerfRow(7, "worker", "[kernel.kallsyms]", "futex_wait", "k", 1),
            PerfRow(1, "CPU 0/TCG", "[unknown]", "0x7f0000001000", ".", 10)]
    result = split(TCG, [_task(1, "CPU 0/TCG", 2.0)], 0.4, rows)
    assert result.seconds["io"] == pytest.approx(0.3) and result.seconds["other"] == pytest.approx(0.1)
    assert result.seconds["guest"] == pytest.approx(2.0) and result.total_s == pytest.approx(2.4)


def test_runtime_roles_come_from_the_process_name():
    rows = [PerfRow(301, "conmon", "libc.so.6", "epoll_wait", ".", 2),
            PerfRow(305, "gmain", "libglib-2.0.so.0", "g_main_context_prepare", ".", 2)]
    tasks = [TaskUsage(301, "conmon", "conmon", RUNTIME.role("conmon", "conmon"), 0.2),
             TaskUsage(305, "conmon", "gmain", RUNTIME.role("conmon", "gmain"), 0.2),
             TaskUsage(320, "podman", "podman", RUNTIME.role("podman", "podman"), 0.1)]
    assert [t.role for t in tasks] == ["conmon", "conmon", "cli"]
    result = split(RUNTIME, tasks, 0.0, rows)
    assert result.seconds["polling"] == pytest.approx(0.4) and result.seconds["other"] == pytest.approx(0.1)


def test_usage_counts_births_and_exits_within_the_window():
    before = {10: ThreadTime(10, "qemu-system-x86", 100, 0, 100), 11: ThreadTime(11, "CPU 0/KVM", 1000, 800, 100),
              12: ThreadTime(12, "worker", 50, 0, 100)}                      # 12 exits inside the window
    after = {10: ThreadTime(10, "qemu-system-x86", 130, 0, 100), 11: ThreadTime(11, "CPU 0/KVM", 1500, 1200, 100),
             13: ThreadTime(13, "worker", 20, 0, 100)}                       # 13 is born inside it
    procs_before = {100: ProcessTime(100, "qemu-system-x86", 1200)}
    procs_after = {100: ProcessTime(100, "qemu-system-x86", 1200 + 30 + 500 + 20 + 40)}  # 12 used 40 more, then left
    tasks, exited = usage(KVM, before, after, procs_before, procs_after)
    by = {t.tid: t for t in tasks}
    assert by[11].cpu_s == pytest.approx(500 / CLK_TCK) and by[11].guest_s == pytest.approx(400 / CLK_TCK)
    assert by[13].cpu_s == pytest.approx(20 / CLK_TCK) and by[13].role == "worker"
    assert exited == pytest.approx(40 / CLK_TCK)
    assert sum(t.cpu_s for t in tasks) + exited == pytest.approx(590 / CLK_TCK)  # = the process's own change


_ROW = st.builds(PerfRow, tid=st.integers(1, 6), comm=st.sampled_from(["CPU 0/TCG", "qemu-system-x86", "worker"]),
                 dso=st.sampled_from(["[unknown]", "qemu-system-x86_64", "[kernel.kallsyms]", "libc.so.6"]),
                 symbol=st.sampled_from(["aio_poll", "tb_gen_code", "0x1234", "hrtimer_interrupt", "read",
                                         "virtio_queue_notify", "futex_wait"]),
                 kind=st.sampled_from([".", "k"]), samples=st.integers(1, 50))


@given(rows=st.one_of(st.none(), st.lists(_ROW, max_size=30)),
       cpu=st.lists(st.tuples(st.floats(0, 50), st.floats(0, 1)), min_size=1, max_size=5), exited=st.floats(0, 5))
def test_categories_always_add_up_to_the_measured_cpu(rows, cpu, exited):
    tasks = [TaskUsage(i + 1, "qemu-system-x86", n, qemu_role(n), c, c * g)
             for i, ((c, g), n) in enumerate(zip(cpu, ["CPU 0/KVM", "qemu-system-x86", "worker", "call_rcu", "x"]))]
    result = split(KVM, tasks, exited, rows)
    assert sum(result.seconds.values()) == pytest.approx(result.total_s, rel=1e-9, abs=1e-9)
    assert result.total_s == pytest.approx(sum(t.cpu_s for t in tasks) + exited)
    assert all(v >= 0 for v in result.seconds.values())
