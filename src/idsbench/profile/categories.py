"""What the host does for a VM (or a container), by category: which thread of qemu or of a
container runtime a task is, and which category a perf sample's function falls in.

Categories (`CATEGORIES`, the order of every table):
- `guest`      guest execution. KVM: the vCPU threads' time in guest mode (/proc `guest_time`, exact; perf
               on the host does not sample guest mode by default). TCG: time in the code TCG translated
               from the guest's (samples in qemu's anonymous code buffer: no symbol, no object file).
- `emulation`  emulation and exits. KVM: VM exits and their handling (kvm/kvm_intel/kvm_amd: vmx_*/svm_*,
               the MMU, the instruction emulator, KVM_RUN's ioctl path; qemu's kvm_cpu_exec, MMIO/PIO
               dispatch). TCG: translating (tb_gen_code, tcg_*, gen_*), the helpers and the soft MMU
               (helper_*, tlb_*, cpu_ld*/st*), the execution loop (cpu_exec), device register dispatch.
- `io`         virtio/vhost I/O: virtio-net/blk/9p in qemu (virtio_*, virtqueue_*, v9fs_*, tap_*, the
               block layer, coroutines), vhost workers, the kernel's tap/macvtap/tun, skb copies, and the
               read/write/file-system syscalls the 9p server and the runtimes' stdio make.
- `irq_timers` interrupts and timers: the host's interrupt and hrtimer paths, qemu's timer lists and
               emulated interrupt controllers (APIC, IOAPIC, PIC, HPET, PIT, MSI), KVM's LAPIC timer and
               interrupt injection (posted interrupts, irqfd), clock reads.
- `polling`    polling: event loops' poll machinery (ppoll/epoll, glib, qemu's aio_poll and adaptive
               polling), KVM's halt-polling (kvm_vcpu_halt/block), vhost and NAPI busy polling, Go's netpoller.
- `other`      everything else: scheduling, locks and futexes, memory management, allocation, RCU,
               threads that are none of the above.

Symbols that match no rule fall to the thread's role (`symbol_default`): a vCPU thread's unnamed work is
emulation, an I/O thread's is I/O. The rules come from function names in the QEMU (7.x-9.x), Linux KVM
and Go runtime sources; under TCG they are checked on recorded profiles of this machine, under KVM
they are untested on hardware (no KVM here).
"""

from __future__ import annotations

from typing import Literal

Category = Literal["guest", "emulation", "io", "irq_timers", "polling", "other"]
CATEGORIES: tuple[Category, ...] = ("guest", "emulation", "io", "irq_timers", "polling", "other")
TITLES: dict[Category, str] = {
    "guest": "guest execution", "emulation": "emulation and exits", "io": "virtio/vhost I/O",
    "irq_timers": "interrupts and timers", "polling": "polling", "other": "other"}

Role = Literal["vcpu", "main", "iothread", "worker", "vhost", "rcu", "cli", "conmon", "shim", "daemon",
               "oci", "netstack", "other"]
Accel = Literal["tcg", "kvm"]

# Objects perf names for code with no file behind it: TCG's translated guest code.
JIT_DSOS = ("[unknown]", "//anon", "[anon]", "anon_inode:[perf]")
KVM_MODULES = ("[kvm]", "[kvm_intel]", "[kvm_amd]")


def qemu_role(comm: str) -> Role:
    """A qemu task by its name (qemu runs with `-name …,debug-threads=on`)."""
    if (comm.startswith("CPU ") and comm.endswith(("/KVM", "/TCG"))) or comm == "ALL CPUs/TCG":
        return "vcpu"
    if comm.startswith("qemu"):
        return "main"      # the main loop: device emulation, chardevs, timers, I/O without an iothread
    if comm.startswith("IO "):
        return "iothread"
    if comm == "worker":
        return "worker"    # qemu's thread pool (9p, block I/O)
    if comm.startswith("vhost-"):
        return "vhost"     # a vhost worker (qemu's task since Linux 6.4, a kernel thread before)
    if comm == "call_rcu":
        return "rcu"
    return "other"


def runtime_role(comm: str) -> Role:
    """A container runtime's process by its name."""
    if comm == "conmon":
        return "conmon"
    if comm in ("podman", "docker"):
        return "cli"
    if comm.startswith("containerd-shim"):
        return "shim"
    if comm in ("dockerd", "containerd"):
        return "daemon"
    if comm in ("runc", "crun"):
        return "oci"
    if comm.startswith(("slirp4netns", "pasta", "passt")):
        return "netstack"
    return "other"


def thread_default(role: Role, accel: Accel | None) -> Category:
    """A thread's category when perf has no sample of it (its whole CPU time; under KVM the vCPU's
    guest-mode time is measured apart, so what remains is its exits)."""
    if role == "vcpu":
        return "guest" if accel == "tcg" else "emulation"
    return symbol_default(role)


def symbol_default(role: Role) -> Category:
    """The category of a sample whose function matches no rule."""
    if role == "vcpu":
        return "emulation"
    if role in ("iothread", "worker", "vhost", "netstack"):
        return "io"
    return "other"


# --- rules: (category, name prefixes), first match wins -----------------------------------------
_KERNEL: tuple[tuple[Category, tuple[str, ...]], ...] = (
    ("polling", (
        "kvm_vcpu_halt", "kvm_vcpu_block", "kvm_vcpu_check_block", "kvm_arch_vcpu_runnable",
        "kvm_vcpu_has_events", "kvm_arch_no_poll", "grow_halt_poll_ns", "shrink_halt_poll_ns",
        "do_sys_poll", "do_sys_ppoll", "do_poll", "do_select", "core_sys_select", "poll_select", "poll_freewait",
        "__pollwait", "ep_", "do_epoll", "__x64_sys_poll", "__x64_sys_ppoll", "__x64_sys_epoll",
        "__x64_sys_select", "__x64_sys_pselect", "__do_sys_poll", "__do_sys_ppoll", "__do_sys_epoll",
        "napi_busy_loop", "sk_busy_loop", "vhost_net_busy_poll", "vhost_vq_avail_empty")),
    ("irq_timers", (
        "hrtimer_", "__hrtimer", "__run_hrtimer", "tick_", "timerqueue_", "timerfd_", "__run_timers",
        "run_timer", "call_timer_fn", "irq_", "__irq_", "handle_irq", "handle_edge_irq", "handle_fasteoi_irq",
        "__handle_irq", "__sysvec_", "sysvec_", "asm_sysvec_", "asm_common_interrupt", "common_interrupt",
        "irqentry_", "__do_softirq", "do_softirq", "__softirqentry", "run_ksoftirqd", "clockevents_",
        "lapic_next_", "native_apic_", "x2apic_", "local_apic_timer", "ktime_get", "read_tsc",
        "native_sched_clock", "sched_clock", "timekeeping_", "update_wall_time", "update_process_times",
        "account_process_tick", "posix_", "do_nanosleep", "hrtimer_nanosleep", "common_nsleep",
        "__x64_sys_clock_", "__x64_sys_nanosleep", "__x64_sys_timer", "schedule_hrtimeout",
        # KVM: the in-kernel LAPIC, its timer, interrupt injection and delivery
        "kvm_lapic", "kvm_apic", "apic_", "__apic_", "kvm_inject", "kvm_irq", "kvm_set_irq", "kvm_set_msi",
        "kvm_arch_set_irq", "irqfd_", "kvm_cpu_has_interrupt", "kvm_cpu_get_interrupt", "kvm_pic_",
        "kvm_ioapic", "ioapic_", "kvm_pit", "pit_", "kvm_vcpu_kick", "kvm_queue_interrupt", "kvm_hv_",
        "__kvm_wait_lapic_expire", "kvm_wait_lapic_expire", "start_sw_timer", "cancel_hv_timer",
        "vmx_deliver", "vmx_sync_pir", "vmx_inject", "vmx_set_hv_timer", "vmx_cancel_hv_timer",
        "handle_preemption_timer", "vmx_handle_external_intr", "handle_external_interrupt", "pi_",
        "svm_deliver", "svm_inject", "svm_set_irq", "avic_")),
    ("io", (
        "tap_", "tun_", "macvtap", "macvlan_", "vhost_", "handle_rx", "handle_tx", "skb_", "__skb",
        "kfree_skb", "consume_skb", "__kfree_skb", "alloc_skb", "__alloc_skb", "build_skb", "netif_",
        "__netif", "dev_queue_xmit", "__dev_queue_xmit", "dev_hard_start_xmit", "net_rx_action", "__napi",
        "napi_", "packet_rcv", "tpacket_rcv", "veth_", "_copy_to_iter", "_copy_from_iter", "copy_to_iter",
        "copy_from_iter", "copy_page_to_iter", "copy_page_from_iter", "copyout", "copyin", "copy_user_",
        "rep_movs_alternative", "__copy_user", "iov_iter_", "import_iovec", "__import_iovec", "eventfd_",
        "ioeventfd_", "vfs_", "ksys_read", "ksys_write", "ksys_pread", "ksys_pwrite", "__x64_sys_read",
        "__x64_sys_write", "__x64_sys_pread", "__x64_sys_pwrite", "__x64_sys_preadv", "__x64_sys_pwritev",
        "__x64_sys_readv", "__x64_sys_writev", "__x64_sys_recv", "__x64_sys_send", "__x64_sys_openat",
        "__x64_sys_newfstatat", "__x64_sys_statx", "__x64_sys_newfstat", "__x64_sys_newlstat",
        "__x64_sys_getdents", "__x64_sys_fgetxattr", "__x64_sys_lgetxattr", "__x64_sys_fsync",
        "__x64_sys_fdatasync", "__x64_sys_lseek", "__x64_sys_close", "__x64_sys_ftruncate", "__x64_sys_fallocate",
        "do_iter_", "new_sync_read", "new_sync_write", "rw_verify_area", "ext4_", "jbd2_", "filemap_",
        "generic_file_", "generic_perform_write", "__generic_file", "iomap_", "xfs_", "btrfs_", "fuse_",
        "do_sys_openat2", "do_filp_open", "path_", "link_path_walk", "lookup_", "walk_component", "do_statx",
        "__fput", "fsnotify", "sock_", "__sock_", "____sys_sendmsg", "___sys_sendmsg", "__sys_sendmsg",
        "____sys_recvmsg", "___sys_recvmsg", "__sys_recvmsg", "__sys_sendto", "__sys_recvfrom",
        "unix_stream_", "unix_dgram_", "__x64_sys_sendmsg", "__x64_sys_recvmsg", "pipe_read", "pipe_write",
        "blk_", "bio_", "submit_bio", "nvme_")),
    ("emulation", (
        "vmx_", "__vmx_", "svm_", "__svm_", "vcpu_enter_guest", "vcpu_run", "kvm_", "x86_emulate",
        "x86_decode", "emulator_", "handle_ept", "handle_io", "handle_exception", "handle_invalid_guest_state",
        "handle_exit", "tdp_", "__direct_map", "direct_page_fault", "paging64_", "paging32_", "ept_", "mmu_",
        "__kvm_", "complete_emulated", "complete_fast_pio")),
    ("other", (
        "schedule", "__schedule", "finish_task_switch", "try_to_wake_up", "futex_", "__futex", "do_futex",
        "__x64_sys_futex", "wake_up_", "__wake_up", "pick_next", "enqueue_", "dequeue_", "update_curr",
        "psi_", "select_task_rq", "native_queued_spin", "_raw_spin", "queued_spin", "mutex_", "rcu_")),
)

_USER: tuple[tuple[Category, tuple[str, ...]], ...] = (
    ("polling", (
        "aio_", "run_poll_handlers", "poll_set_started", "try_poll_mode", "main_loop_wait",
        "os_host_main_loop_wait", "qemu_poll_ns", "glib_pollfds_", "fdmon_", "qemu_main_loop",
        "g_main_context_", "g_main_loop_", "g_main_dispatch", "g_poll", "runtime.netpoll", "runtime.epoll",
        "runtime.findRunnable", "runtime.findrunnable", "runtime.stealWork")),
    ("irq_timers", (
        "timerlist_", "timer_", "qemu_clock_", "qemu_timer", "qemu_soonest_timeout", "timerlistgroup_",
        "icount_", "cpu_get_clock", "cpu_get_ticks", "get_clock", "apic_", "kvm_apic_", "hpet_", "pit_",
        "rtc_", "mc146818", "ioapic_", "pic_", "i8259", "qemu_set_irq", "qemu_irq_", "msi_", "msix_",
        "pci_set_irq", "pci_irq_", "kvm_set_irq", "kvm_irqchip_", "cpu_interrupt", "tcg_handle_interrupt",
        "generic_handle_interrupt", "x86_cpu_exec_interrupt", "x86_cpu_do_interrupt", "do_interrupt",
        "qemu_cpu_kick", "cpus_kick_thread", "clock_gettime", "__clock_gettime", "__vdso_clock_gettime",
        "__vdso_gettimeofday", "clock_nanosleep", "__clock_nanosleep", "nanosleep", "__nanosleep", "usleep",
        "timerfd_", "gettimeofday", "runtime.nanotime", "runtime.walltime", "runtime.usleep",
        "runtime.checkTimers", "runtime.runtimer", "runtime.runOneTimer", "runtime.adjusttimers",
        "runtime.modtimer", "runtime.addtimer", "runtime.resettimer", "runtime.deltimer", "runtime.timeSleep",
        "time.Now", "time.now", "time.Sleep", "g_get_monotonic_time", "g_get_real_time", "g_timeout_",
        "g_timer_")),
    ("io", (
        "virtio", "virtqueue_", "vring_", "vhost_", "v9fs_", "local_", "qemu_coroutine_", "coroutine_",
        "qemu_co_", "tap_", "qemu_send_packet", "qemu_sendv_packet", "qemu_deliver_packet", "qemu_net_queue_",
        "qemu_receive_packet", "qemu_flush_queued_packets", "qemu_can_send_packet", "qemu_can_receive_packet",
        "nc_sendv_compat", "net_checksum_", "net_rx_pkt_", "net_tx_pkt_", "iov_", "qemu_iovec_", "blk_",
        "bdrv_", "raw_co_", "thread_pool_", "address_space_map", "address_space_unmap", "address_space_cache_",
        "dma_memory_", "dma_buf_", "syscall.Syscall", "syscall.RawSyscall", "syscall.read", "syscall.write",
        "syscall.Read", "syscall.Write", "internal/poll.(*FD).Read", "internal/poll.(*FD).Write",
        "os.(*File).Read", "os.(*File).Write", "io.Copy", "io.copyBuffer", "bufio.", "stdio_cb", "read_stdio",
        "write_to_logs", "write_k8s_log", "writev_buffer")),
    ("emulation", (
        "cpu_exec", "cpu_tb_exec", "cpu_loop_exit", "cpu_handle_", "tb_", "tcg_", "translator_", "gen_",
        "disas_", "i386_tr_", "helper_", "tlb_", "cpu_ld", "cpu_st", "load_helper", "store_helper", "full_le_",
        "full_be_", "full_ld", "probe_access", "get_page_addr_code", "x86_cpu_", "mmu_translate",
        "get_physical_address", "cpu_x86_", "cc_compute", "compute_", "float32_", "float64_", "floatx80_",
        "parts64_", "parts_", "io_readx", "io_writex", "memory_region_", "access_with_adjusted_size",
        "address_space_", "flatview_", "qemu_map_ram_ptr", "qemu_ram_", "prepare_mmio_access", "kvm_",
        "cpu_physical_memory_", "cpu_inb", "cpu_outb", "cpu_inw", "cpu_outw", "cpu_inl", "cpu_outl", "portio_",
        "pci_host_", "pci_default_", "pci_data_")),
    ("other", (
        "pthread_mutex", "pthread_cond", "___pthread_mutex", "__pthread_mutex", "__lll_lock", "qemu_mutex",
        "qemu_cond", "qemu_event_", "qemu_sem_", "qemu_futex", "qemu_rec_mutex", "runtime.futex", "runtime.lock",
        "runtime.unlock", "runtime.gc", "runtime.mallocgc", "runtime.scanobject", "_int_malloc", "_int_free",
        "g_malloc", "g_free", "g_slice_", "rcu_", "call_rcu")),
)

# libc's system call wrappers, by exact name (as prefixes they would catch unrelated functions)
_USER_EXACT: dict[str, Category] = {
    **dict.fromkeys(("ppoll", "__ppoll", "poll", "__poll", "epoll_wait", "epoll_pwait", "__epoll_wait_nocancel",
                     "select", "pselect", "__select", "__pselect"), "polling"),
    **dict.fromkeys(("read", "__read", "__libc_read", "__read_nocancel", "write", "__write", "__libc_write",
                     "readv", "writev", "__readv", "__writev", "pread64", "pwrite64", "__pread64", "__pwrite64",
                     "__libc_pread", "__libc_pwrite", "preadv", "pwritev", "preadv64", "pwritev64", "preadv2",
                     "pwritev2", "recvmsg", "sendmsg", "__libc_recvmsg", "__libc_sendmsg", "recvfrom", "sendto",
                     "openat", "__open64", "__openat64", "__open64_nocancel", "fstatat", "fstatat64",
                     "__fstatat64", "statx", "fgetxattr", "lgetxattr", "getdents64", "__getdents64", "fsync",
                     "fdatasync", "close", "__close", "lseek", "lseek64", "__lseek64"), "io"),
    **dict.fromkeys(("malloc", "free", "calloc", "realloc", "cfree", "__libc_malloc", "__libc_free"), "other"),
}

# In a vCPU thread the one ioctl is KVM_RUN: its entry path is the exits' cost.
_VCPU_KERNEL_EMULATION = ("__x64_sys_ioctl", "do_vfs_ioctl", "__se_sys_ioctl", "vfs_ioctl")
_VCPU_USER_EMULATION = ("ioctl", "__ioctl", "__GI___ioctl")


def _match(rules: tuple[tuple[Category, tuple[str, ...]], ...], symbol: str) -> Category | None:
    for category, prefixes in rules:
        if symbol.startswith(prefixes):
            return category
    return None


def classify(role: Role, dso: str, symbol: str, kind: str, accel: Accel | None) -> Category:
    """The category of a perf sample: the task's role, the object and function perf named (`symbol` may
    be a hex address), `kind` as `perf report` marks it (k kernel, . user, g/u guest kernel/user)."""
    if kind in ("g", "u"):
        return "guest"
    unresolved = symbol.startswith("0x") or symbol in ("", "[unknown]")
    if kind == "k":
        if role == "vcpu" and symbol.startswith(_VCPU_KERNEL_EMULATION):
            return "emulation"
        found = None if unresolved else _kernel_poll(symbol) or _match(_KERNEL, symbol)
        if found is None and dso in KVM_MODULES:
            return "emulation"
        return found or symbol_default(role)
    if role == "vcpu" and accel == "tcg" and (dso in JIT_DSOS or dso.startswith(("[JIT]", "memfd:"))):
        return "guest"  # TCG's translated code: a buffer no file or symbol table describes
    if unresolved:
        return symbol_default(role)
    if role == "vcpu" and symbol.startswith(_VCPU_USER_EMULATION):
        return "emulation"
    name = _plain(symbol)
    return _USER_EXACT.get(name) or _match(_USER, name) or symbol_default(role)


def _kernel_poll(symbol: str) -> Category | None:
    """A file's poll method (eventfd_poll, sock_poll, unix_poll, tun_chr_poll, pipe_poll…), called by
    poll/epoll for each descriptor; NAPI's poll is packet processing, not waiting."""
    name = symbol.split(".", 1)[0]
    return "polling" if name.endswith("_poll") and not name.lstrip("_").startswith("napi") else None


def _plain(symbol: str) -> str:
    """Without the `@plt`/`.isra.0`-style suffixes and a C++ argument list, where perf prints them."""
    return symbol.split("@", 1)[0]
