"""ibreplay: argv from a Rate, its JSON report parsed, and the real program (gcc-built) in --dry-run
mode, which keeps the whole schedule but sends nothing (no socket, no root): counts, loops, timing
per rate kind, capture formats, setup errors and SIGTERM."""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest

from idsbench import native
from idsbench.spec import Rate
from idsbench.traffic import native_replay
from idsbench.traffic.native_replay import NativeOptions, ibreplay_argv, parse_report


def frame(i: int, size: int = 100) -> bytes:
    body = struct.pack("!I", i) + bytes(max(0, size - 18))
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + body


def write_classic(path: Path, stamps_ns: list[int], sizes: list[int] | None = None, *, endian: str = "<",
                  nanos: bool = False, link: int = 1) -> Path:
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 262144, link)]
    for i, ts in enumerate(stamps_ns):
        f = frame(i, sizes[i] if sizes else 100)
        frac = ts % 1_000_000_000 if nanos else ts % 1_000_000_000 // 1000
        out.append(struct.pack(endian + "IIII", ts // 1_000_000_000, frac, len(f), len(f)) + f)
    path.write_bytes(b"".join(out))
    return path


def write_pcapng(path: Path, stamps_ns: list[int], endian: str = "<") -> Path:
    def block(btype: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        return struct.pack(endian + "II", btype, 12 + len(body)) + body + struct.pack(endian + "I", 12 + len(body))

    opt = struct.pack(endian + "HH", 9, 1) + b"\x09\0\0\0" + struct.pack(endian + "HH", 0, 0)  # ns
    blocks = [block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1)),
              block(1, struct.pack(endian + "HHI", 1, 0, 0) + opt)]
    for i, ts in enumerate(stamps_ns):
        f = frame(i)
        blocks.append(block(6, struct.pack(endian + "IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(f), len(f)) + f))
    path.write_bytes(b"".join(blocks))
    return path


T0 = 1_700_000_000 * 1_000_000_000


def even(n: int, span_s: float) -> list[int]:
    return [T0 + int(k * span_s * 1e9 / (n - 1)) for k in range(n)]


@pytest.fixture(scope="module")
def program() -> Path:
    return native.program("ibreplay")


def dry_run(program: Path, pcaps: list[Path], *args: str, timeout: float = 30) -> dict:
    argv = [str(program), "--dry-run", "--start-delay-ms", "5"]
    for p in pcaps:
        argv += ["--pcap", str(p)]
    done = subprocess.run([*argv, *args], check=False, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- argv ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rate,expected", [
    (Rate(kind="recorded"), "recorded"), (Rate(kind="topspeed"), "topspeed"),
    (Rate(kind="multiplier", value=2), "multiplier=2.0"), (Rate(kind="pps", value=1234.5), "pps=1234.5"),
    (Rate(kind="mbps", value=100), "mbps=100.0"), (Rate(kind="multiplier", value=1 / 3), f"multiplier={1 / 3!r}"),
])
def test_rate_argument_keeps_full_precision(rate, expected):
    assert native_replay.rate_arg(rate) == expected


def test_argv_one_process_for_every_replayer():
    argv = ibreplay_argv("/bin/ibreplay", "ibtx0", [Path("/a.pcap"), Path("/b.pcap")], Rate(kind="recorded"), 3,
                         cpus=[0, 1], options=NativeOptions(batch=32, spin_us=10, rt_priority=0))
    assert argv[:3] == ["/bin/ibreplay", "--iface", "ibtx0"]
    assert argv[argv.index("--pcap") + 1] == "/a.pcap" and argv.count("--pcap") == 2
    assert argv[argv.index("--loops") + 1] == "3" and "--duration" not in argv
    assert argv[argv.index("--cpus") + 1] == "0,1"
    assert argv[argv.index("--batch") + 1] == "32" and argv[argv.index("--rt-priority") + 1] == "0"
    assert "--no-qdisc-bypass" not in argv


def test_argv_duration_replaces_loops():
    argv = ibreplay_argv("ib", "ibtx0", [Path("/a.pcap")], Rate(kind="pps", value=10), 5, duration_s=2.5)
    assert argv[argv.index("--duration") + 1] == "2.5" and "--loops" not in argv and "--cpus" not in argv


# -- parsing ---------------------------------------------------------------------------------

REPORT = {"tool": "ibreplay", "schema": 1, "start_unix": 1700000000.25, "interrupted": False, "cpu_s": 0.5,
          "replayers": [{"index": 0, "pkts_sent": 10, "bytes_sent": 1000, "failed": 1, "retries": 3,
                         "elapsed_s": 2.0, "pps": 5.0, "mbps": 0.004, "cpu_s": 0.2, "rt_demotions": 1,
                         "warning": "cannot use SCHED_FIFO priority 10: Operation not permitted",
                         "lateness_us": {"p50": 3.0, "p99": 40.0, "max": 120.5},
                         "per_second": [{"t": 0, "pkts": 6, "bytes": 600}, {"t": 1, "pkts": 4, "bytes": 400}]}]}


def test_parse_report_with_other_lines_around_it():
    text = "note before\n" + json.dumps(REPORT) + "\nibreplay: replayer 0: cannot use SCHED_FIFO\n"
    rep = parse_report(text, replayers=1, requested=5.0, exit_code=0, planned_s=2.0)
    (r,) = rep.replayers
    assert (r.pkts_sent, r.bytes_sent, r.failed, r.retries, r.sender) == (10, 1000, 1, 3, "native")
    assert r.lateness is not None and (r.lateness.p50_ms, r.lateness.p99_ms, r.lateness.max_ms) == (0.003, 0.04, 0.1205)
    assert [(s.t, s.pkts, s.bytes) for s in r.per_second] == [(0, 6, 600), (1, 4, 400)]
    assert r.rate_ratio == 1.0 and not r.fell_short() and r.cpu_s == 0.2
    assert rep.complete and rep.start_unix == 1700000000.25 and rep.rt_demotions == 1
    assert any("SCHED_FIFO" in m for m in rep.messages) and "note before" in rep.messages
    assert r.to_json()["per_second"][1] == {"t": 1, "pkts": 4, "bytes": 400, "due_pkts": None}


def test_parse_report_of_a_failed_setup_counts_zero_and_names_the_problem():
    text = "ibreplay: bad interface nope0: No such device\n"
    rep = parse_report(text, replayers=2, requested=100.0, exit_code=1)
    assert not rep.complete and [r.pkts_sent for r in rep.replayers] == [0, 0]
    assert native_replay.fatal_message(text) == "bad interface nope0: No such device"
    assert native_replay.fatal_message("ibreplay: replayer 1: cannot pin to CPU 3") is None


# -- the real program, dry run ----------------------------------------------------------------


def test_dry_run_counts_loops_and_replayers(tmp_path, program):
    a = write_classic(tmp_path / "a.pcap", even(50, 0.05), sizes=[60 + i for i in range(50)])
    b = write_classic(tmp_path / "b.pcap", even(20, 0.05))
    doc = dry_run(program, [a, b], "--loops", "3", "--rate", "topspeed")
    ra, rb = doc["replayers"]
    assert (ra["pkts_sent"], ra["bytes_sent"]) == (150, 3 * sum(60 + i for i in range(50)))
    assert (rb["pkts_sent"], rb["bytes_sent"]) == (60, 3 * 20 * 100)
    assert ra["failed"] == ra["retries"] == 0 and ra["lateness_us"] is None
    assert sum(s["pkts"] for s in ra["per_second"]) == 150
    assert doc["rate"] == {"kind": "topspeed", "value": None} and doc["loops"] == 3 and not doc["interrupted"]


@pytest.mark.parametrize("rate,expected_s", [
    ("recorded", 0.4), ("multiplier=4", 0.1), ("pps=200", 79 / 200), ("mbps=0.32", 79 * 100 / 40_000),
])
def test_dry_run_keeps_the_absolute_schedule(tmp_path, program, rate, expected_s):
    # 80 packets of 100 bytes over 0.4 s. The last one is due at: recorded 0.4 s, 4X 0.1 s, 200 pps
    # 79/200 s, 0.32 Mbit/s (40,000 B/s) after the 79 x 100 bytes before it.
    pcap = write_classic(tmp_path / "t.pcap", even(80, 0.4))
    doc = dry_run(program, [pcap], "--rate", rate, "--rt-priority", "0")
    (r,) = doc["replayers"]
    assert r["pkts_sent"] == 80
    # the schedule is absolute: the last packet never leaves before it is due (how close after it
    # does is a timing figure: benchmarks/bench_sender.py, p99 lateness < 1 ms)
    assert r["elapsed_s"] >= expected_s - 1e-6
    assert r["lateness_us"]["p50"] >= 0 and r["lateness_us"]["max"] >= r["lateness_us"]["p99"]


def test_dry_run_recorded_loops_continue_the_schedule(tmp_path, program):
    pcap = write_classic(tmp_path / "t.pcap", even(21, 0.1))
    doc = dry_run(program, [pcap], "--rate", "recorded", "--loops", "3")
    (r,) = doc["replayers"]
    assert r["pkts_sent"] == 63
    assert r["elapsed_s"] >= 0.3 - 1e-6  # loop L starts at L x span: the last packet is due at 0.3 s


def test_dry_run_duration_stops_at_the_deadline(tmp_path, program):
    pcap = write_classic(tmp_path / "t.pcap", even(11, 0.1))
    doc = dry_run(program, [pcap], "--rate", "pps=100", "--duration", "0.5", "--loops", "1")
    (r,) = doc["replayers"]
    assert r["pkts_sent"] == 50  # deadlines 0, 10 ms, ... 490 ms; the one at 500 ms is not sent
    assert doc["duration_s"] == 0.5 and doc["loops"] is None


@pytest.mark.parametrize("kind", ["big-endian", "nanoseconds", "pcapng", "pcapng-be"])
def test_reads_every_capture_flavour(tmp_path, program, kind):
    stamps = even(30, 0.06)
    if kind.startswith("pcapng"):
        pcap = write_pcapng(tmp_path / "t.pcapng", stamps, ">" if kind.endswith("be") else "<")
    else:
        pcap = write_classic(tmp_path / "t.pcap", stamps, endian=">" if kind == "big-endian" else "<",
                             nanos=kind == "nanoseconds")
    doc = dry_run(program, [pcap], "--rate", "recorded")
    (r,) = doc["replayers"]
    assert (r["pkts_sent"], r["bytes_sent"], r["trace_packets"]) == (30, 3000, 30)
    assert r["trace_span_s"] == pytest.approx(0.06, abs=2e-6)


@pytest.mark.parametrize("setup,message", [
    (lambda d: d / "missing.pcap", "cannot read pcap"),
    (lambda d: write_classic(d / "sll.pcap", even(3, 0.01), link=113), "is not Ethernet"),
    (lambda d: Path(d / "cut.pcap").write_bytes(write_classic(d / "x.pcap", even(3, 0.01)).read_bytes()[:-5])
     and d / "cut.pcap", "cut short"),
    (lambda d: Path(d / "junk.pcap").write_bytes(b"not a capture") and d / "junk.pcap", "unknown magic"),
    (lambda d: write_classic(d / "empty.pcap", []), "holds no packets"),
])
def test_setup_errors_are_one_line_naming_the_problem(tmp_path, program, setup, message):
    pcap = setup(tmp_path)
    done = subprocess.run(check=False, args=[str(program), "--dry-run", "--pcap", str(pcap)], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ibreplay: ") and message in lines[0] and str(pcap) in lines[0]


def test_bad_interface_and_usage_errors(tmp_path, program):
    pcap = write_classic(tmp_path / "t.pcap", even(3, 0.01))
    done = subprocess.run(check=False, args=[str(program), "--iface", "ibn-nonexistent", "--pcap", str(pcap)], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 1 and "bad interface ibn-nonexistent" in done.stderr
    for args, message in ((["--rate", "fast"], "unknown rate"), (["--rate", "pps"], "needs =VALUE"),
                          (["--loops", "0"], "--loops"), (["--cpus", "x"], "--cpus"), ([], "--iface")):
        done = subprocess.run(check=False, args=[str(program), "--pcap", str(pcap), *args], capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)


def test_sigterm_stops_at_the_next_packet_and_still_reports(tmp_path, program):
    pcap = write_classic(tmp_path / "t.pcap", even(101, 10.0))  # 10 s at recorded timing
    proc = subprocess.Popen([str(program), "--dry-run", "--pcap", str(pcap), "--pcap", str(pcap)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(list(Path(f"/proc/{proc.pid}/task").iterdir())) < 3:  # its two replayer threads run
        assert proc.poll() is None and time.monotonic() < deadline, "the replayer threads never started"
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["interrupted"] is True
    for r in doc["replayers"]:
        # stopped before the end of the 10 s trace, having sent exactly what was due by then
        # (packet k is due at k/10 s): no packet of the rest of the schedule went out
        assert r["pkts_sent"] < 101 and r["elapsed_s"] < 10.0
        assert r["pkts_sent"] == pytest.approx(int(r["elapsed_s"] * 10) + 1, abs=1)


def test_dry_run_reports_packets_due_per_second_beside_packets_sent(tmp_path, program):
    # 250 packets at 100 pps: 100 due in seconds 0 and 1, 50 in second 2; topspeed has no schedule
    pcap = write_classic(tmp_path / "t.pcap", even(250, 1.0))
    (r,) = dry_run(program, [pcap], "--rate", "pps=100", "--rt-priority", "0")["replayers"]
    assert [s["due_pkts"] for s in r["per_second"]] == [100, 100, 50]
    assert sum(s["pkts"] for s in r["per_second"]) == 250
    rep = parse_report(json.dumps({**REPORT, "replayers": [{**REPORT["replayers"][0], "per_second": r["per_second"]}]}),
                       replayers=1, requested=100.0, exit_code=0)
    assert [s.due_pkts for s in rep.replayers[0].per_second] == [100, 100, 50]
    (top,) = dry_run(program, [pcap], "--rate", "topspeed")["replayers"]
    assert all("due_pkts" not in s for s in top["per_second"])
