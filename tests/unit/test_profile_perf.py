"""Parsing perf's output and per-thread CPU (recorded output; the real perf runs in the integration test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.profile import perf
from idsbench.profile.threads import CLK_TCK, ThreadTime, role, snapshot, thread_cpu

REPORT = """\
# To display the perf.data header info, please use --header/--header-only options.
#
    10.84%  W#01-ibrx0     libc.so.6                  [.] msort_with_tmp.part.0
     6.66%  Suricata-Main  [kernel.kallsyms]          [k] finish_task_switch.isra.0
     4.17%  W#01-ibrx0     [kernel.kallsyms]          [k] finish_task_switch.isra.0
     1.67%  W#02-ibrx0     suricata                   [.] 0x00000000002923fa
     1.66%  W#01-ibrx0     suricata                   [.] 0x00000000002fc414
     1.50%  W#02-ibrx0     suricata                   [.] StreamTcpReassembleHandleSegment
     0.90%  FM#01          libstdc++.so.6.0.30        [.] operator new(unsigned long)
"""

STAT = """\
# started on Mon Nov 23 04:43:20 2026

120.38,msec,task-clock,120380000,100.00,0.015,CPUs utilized
<not supported>,,cycles,0,100.00,,
5000,,instructions,1000,100.00,,
<not counted>,,cache-misses,0,100.00,,
"""


def test_report_rows_and_top_functions():
    rows = perf.parse_report(REPORT)
    assert len(rows) == 7 and rows[-1].symbol == "operator new(unsigned long)" and rows[1].kernel
    top = perf.top_functions(rows, 3)
    assert [(f.symbol, f.self_pct) for f in top] == [
        ("msort_with_tmp.part.0", 10.84), ("finish_task_switch.isra.0", 10.83), (perf.UNRESOLVED, 3.33)]
    workers = perf.top_functions(rows, 10, {"W#02-ibrx0"})
    assert [f.symbol for f in workers] == [perf.UNRESOLVED, "StreamTcpReassembleHandleSegment"]


SEPARATED = """\
# a recorded qemu view: thread names with spaces (perf report -t '|')
32.10%|CPU 0/TCG|[unknown]|[.] 0x00007f3a4c01b2c0
 4.02%|CPU 0/TCG|qemu-system-x86_64|[.] helper_le_ldq_mmu
 1.50%|qemu-system-x86|[kernel.kallsyms]|[k] do_sys_poll
"""


def test_report_rows_with_separators_keep_thread_names_with_spaces():
    rows = perf.parse_report(SEPARATED)
    assert [(r.thread, r.dso, r.symbol, r.kernel) for r in rows] == [
        ("CPU 0/TCG", "[unknown]", perf.UNRESOLVED, False), ("CPU 0/TCG", "qemu-system-x86_64", "helper_le_ldq_mmu", False),
        ("qemu-system-x86", "[kernel.kallsyms]", "do_sys_poll", True)]
    assert "-t" in perf.report_argv(Path("x"), 0.1)


def test_stat_counts_and_ratios():
    counts = perf.parse_stat(STAT)
    assert counts == {"task-clock": 120.38, "cycles": None, "instructions": 5000.0, "cache-misses": None}
    assert perf.ratios(counts) == {"ipc": None, "cache_miss_ratio": None, "llc_load_miss_ratio": None}
    per_thread = "W#01-ibrx0-77,300,,cycles,0,100.00,,\nW#02-ibrx0-78,100,,cycles,0,100.00,,\n" \
                 "W#01-ibrx0-77,600,,instructions,0,100.00,,\nW#02-ibrx0-78,200,,instructions,0,100.00,,\n"
    assert perf.ratios(perf.parse_stat(per_thread))["ipc"] == 2.0


def test_argv_attach_to_every_pid():
    argv = perf.record_argv([10, 11], Path("/x/perf.data"), 999)
    assert argv[argv.index("-p") + 1] == "10,11" and argv[argv.index("-e") + 1] == "cpu-clock"
    assert "-x" in perf.stat_argv([10], Path("/x/s.csv"))


def test_thread_cpu_between_snapshots(tmp_path: Path):
    before = {1: ThreadTime(1, "Suricata-Main", 10), 2: ThreadTime(2, "W#01-eth0", 100)}
    after = {1: ThreadTime(1, "Suricata-Main", 20), 2: ThreadTime(2, "W#01-eth0", 400), 3: ThreadTime(3, "FM#01", 5)}
    rows = thread_cpu(before, after, window_s=3.0)
    assert [r.name for r in rows] == ["W#01-eth0", "Suricata-Main", "FM#01"]
    worker = rows[0]
    assert worker.role == "worker" and worker.cpu_s == pytest.approx(300 / CLK_TCK, abs=1e-3)
    assert worker.cpu_pct == pytest.approx(100.0 * 300 / CLK_TCK / 3.0, abs=0.01)
    assert role("FM#01") == "management" and role("W#02-ibrx0") == "worker"


def test_snapshot_reads_this_process():
    import os
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="ibprof-test")
    t.start()
    try:
        snap = snapshot([os.getpid()])
    finally:
        stop.set()
        t.join()
    assert os.getpid() in snap and len(snap) >= 2 and all(v.cpu_ticks >= 0 for v in snap.values())
    assert snapshot([2**22 + 12345]) == {}  # a pid that does not exist


def test_thread_roles_of_the_qemu_view(tmp_path: Path):
    from idsbench.profile.categories import qemu_role

    before = {1: ThreadTime(1, "CPU 0/TCG", 0), 2: ThreadTime(2, "qemu-system-x86", 0)}
    after = {1: ThreadTime(1, "CPU 0/TCG", CLK_TCK), 2: ThreadTime(2, "qemu-system-x86", 0)}
    rows = thread_cpu(before, after, 1.0, qemu_role)
    assert [(r.name, r.role) for r in rows] == [("CPU 0/TCG", "vcpu"), ("qemu-system-x86", "main")]
