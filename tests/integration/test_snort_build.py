"""The Snort 3 that `make snort` built, run for real: -r on a shared capture with exact counts and
alerts per rule, rule errors as Snort reports them, the ET Open conversion share, and live capture
on a veth (two packet threads, then a CPU-limited thread that drops).

Fails (not skips) under CI=true / IDSBENCH_STRICT=1 when the build, root or a program is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from idsbench import proc
from idsbench.infra import cgroups
from idsbench.proc import Supervisor
from idsbench.sensors.snort import log as snort_log
from idsbench.sensors.snort.config import (
    DAQ_VERSION,
    SNORT_VERSION,
    SnortInstall,
    SnortOptions,
    find_install,
    line_buffered,
    log_file_names,
    render_config,
    snort_argv,
)
from idsbench.sensors.snort.perf import PerfTail
from idsbench.sensors.snort.ruleload import make_loadable
from idsbench.sensors.snort.stats import ExitStats, parse_exit_stats, read_alerts, read_perf_series
from idsbench.sensors.sockets import capturing_sockets, interface_index
from idsbench.traffic.pcap import read_info
from tests.integration.conftest import unavailable

from .conftest import PCAPS, RULES, TEST_PREFIX
from .veth_pair import Wire, veth_pair

pytestmark = [pytest.mark.integration, pytest.mark.builds]  # Suricata 8.0.6 or Snort from source: after the builds

REPO = Path(__file__).resolve().parents[2]
PCAP = PCAPS / "nf_evidence02.pcap"  # 572 packets
BURST = PCAPS / "zeek_modbusBig.pcap"  # 13622 small packets
ET_OPEN = RULES / "et-open-2024-04-12.rules"
# Ground truth from tshark: 26 packets to udp/514 (syslog), 2 SMTP MAIL commands to tcp/587.
TINY_RULES = (
    'alert udp any any -> any 514 (msg:"idsbench syslog packet"; sid:1000002; rev:3;)\n'
    'alert tcp any any -> any 587 (msg:"idsbench smtp MAIL FROM"; flow:established,to_server; '
    'content:"MAIL FROM",nocase; sid:1000001; rev:1;)\n'
)
EXPECTED_BY_SID = {1000002: 26, 1000001: 2}
# Suricata's default address groups (/etc/suricata/suricata.yaml), so both engines read ET alike
SURICATA_VARS = (("HOME_NET", "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"), ("EXTERNAL_NET", "!$HOME_NET"),
                 ("HTTP_SERVERS", "$HOME_NET"), ("SMTP_SERVERS", "$HOME_NET"), ("SQL_SERVERS", "$HOME_NET"),
                 ("DNS_SERVERS", "$HOME_NET"), ("TELNET_SERVERS", "$HOME_NET"), ("HTTP_PORTS", "80"))


@pytest.fixture(scope="module")
def snort() -> SnortInstall:
    try:
        return find_install()
    except Exception as exc:  # EnvironmentMissing names the fix (make snort)
        unavailable(str(exc))
        raise


@pytest.fixture
def tiny_rules(tmp_path: Path) -> Path:
    if not PCAP.is_file():
        unavailable(f"shared capture {PCAP} is absent (../shared/data/pcaps beside the checkout)")
    path = tmp_path / "tiny.rules"
    path.write_text(TINY_RULES)
    return path


def _exit_stats(log: str) -> ExitStats:
    stats = parse_exit_stats(log)
    assert stats is not None, log[-3000:]
    return stats


def test_build_is_made_once_and_verified(snort: SnortInstall) -> None:
    t0 = time.monotonic()
    done = proc.run(["bash", str(REPO / "scripts" / "build-snort.sh")], timeout=120)
    assert time.monotonic() - t0 < 20, "a second build-snort.sh call must return at once"
    assert Path(done.stdout.strip().splitlines()[-1]) == snort.prefix
    printed = proc.run(["bash", str(REPO / "scripts" / "build-snort.sh"), "--print-prefix"]).stdout.strip()
    assert Path(printed) == snort.prefix
    assert snort.build.snort_version == SNORT_VERSION and snort.build.daq_version == DAQ_VERSION
    version = proc.run([str(snort.binary), "-V"]).stdout
    assert f"Version {SNORT_VERSION}" in version and f"Using DAQ version {DAQ_VERSION}" in version
    daqs = proc.run([str(snort.binary), "--daq-list"]).stdout
    assert re.search(r"^afpacket\(v\d+\): live inline multi", daqs, re.MULTILINE), daqs
    assert re.search(r"^pcap\(v\d+\): readback live", daqs, re.MULTILINE), daqs
    dynamic = proc.run(["readelf", "-d", str(snort.binary)]).stdout
    assert f"[{snort.prefix}/lib]" in dynamic  # libdaq found through the rpath, no LD_LIBRARY_PATH
    assert ".symtab" not in proc.run(["readelf", "-S", str(snort.binary)]).stdout  # stripped
    print(f"snort build: libdaq {snort.build.daq_build_s} s, snort {snort.build.snort_build_s} s with "
          f"{snort.build.jobs} jobs; installed {snort.build.installed_bytes / 2**20:.1f} MiB at {snort.prefix}")


def test_readback_counts_and_alerts_are_exact(snort: SnortInstall, tiny_rules: Path, tmp_path: Path) -> None:
    trace = read_info(PCAP, cache_dir=tmp_path / "cache")
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    opts = SnortOptions(rules=(tiny_rules,), log_dir=log_dir, stats_interval_s=1)
    config = tmp_path / "snort.lua"
    config.write_text(render_config(opts, snort.base_config))
    done = proc.run(snort_argv(snort.binary, config, opts, pcap=PCAP), timeout=300)
    log = done.stdout + done.stderr
    assert snort_log.errors(log) == [] and snort_log.exited_cleanly(log)
    c = _exit_stats(log).counters
    assert (c.received, c.analyzed, c.dropped) == (trace.packets, trace.packets, 0) == (572, 572, 0)
    assert c.rx_bytes == trace.bytes
    alerts = read_alerts([log_dir / "alert_json.txt"])
    assert alerts.by_sid() == EXPECTED_BY_SID and alerts.bad == 0
    assert c.alerts == c.logged == alerts.total == 28
    series, bad = read_perf_series([log_dir / "perf_monitor_base.json"])
    assert bad == 0 and series[-1].counters.analyzed == trace.packets


def test_suricata_flavoured_rule_is_rejected_with_snorts_message(snort: SnortInstall, tmp_path: Path) -> None:
    rules = tmp_path / "suricata.rules"
    rules.write_text('alert tcp any any -> any 587 (msg:"m"; content:"MAIL FROM"; nocase; sid:1000001; rev:1;)\n')
    opts = SnortOptions(rules=(rules,), log_dir=tmp_path, stats_interval_s=1)
    config = tmp_path / "snort.lua"
    config.write_text(render_config(opts, snort.base_config))
    done = proc.run(snort_argv(snort.binary, config, opts, config_test=True), check=False, timeout=120)
    log = done.stdout + done.stderr
    assert done.returncode == 1 and not snort_log.config_validated(log)
    assert [(e.file, e.line, e.reason) for e in snort_log.rule_errors(log)] == [
        (str(rules), 1, "unknown rule keyword: nocase")]


def test_et_open_share_that_loads(snort: SnortInstall, tmp_path: Path) -> None:
    if not ET_OPEN.is_file():
        unavailable(f"{ET_OPEN} is absent (../shared/data/rules)")

    def config_test(rules: Path) -> str:
        opts = SnortOptions(rules=(rules,), log_dir=tmp_path, stats_interval_s=1, variables=SURICATA_VARS)
        config = tmp_path / "snort.lua"
        config.write_text(render_config(opts, snort.base_config))
        done = proc.run(snort_argv(snort.binary, config, opts, config_test=True), check=False, timeout=600)
        return done.stdout + done.stderr

    as_is = make_loadable(ET_OPEN, tmp_path / "as-is.rules", config_test, convert=False)
    converted = make_loadable(ET_OPEN, tmp_path / "converted.rules", config_test)
    s2l = tmp_path / "snort2lua.rules"
    proc.run([str(snort.snort2lua), "-c", str(ET_OPEN), "-r", str(s2l), "-o", str(tmp_path / "s2l.lua"),
              "-e", str(tmp_path / "s2l-errors.txt")], check=False, timeout=300)
    by_snort2lua = make_loadable(s2l, tmp_path / "snort2lua-loadable.rules", config_test, convert=False)
    print(f"ET Open {as_is.rules} rules: as they are {as_is.loaded}, snort2lua {by_snort2lua.loaded}, "
          f"idsbench conversion {converted.loaded} ({converted.share_loaded:.1%}; converted {converted.converted},"
          f" {len(converted.event_filters)} thresholds as event filters)")
    assert as_is.rules == converted.rules == 24827
    assert as_is.loaded < 0.05 * as_is.rules  # Suricata flavour: Snort takes almost none as it is
    assert converted.loaded > by_snort2lua.loaded > as_is.loaded
    assert converted.loaded <= converted.converted
    assert sum(converted.not_converted.values()) == converted.rules - converted.converted


# --- live capture -----------------------------------------------------------------------------------------


@pytest.fixture
def wire(state_dir: Path) -> Iterator[Wire]:
    if os.geteuid() != 0:
        unavailable("live capture needs root (namespaces, AF_PACKET, cgroups)")
    missing = [t for t in ("ip", "ethtool", "tcpreplay", "stdbuf") if shutil.which(t) is None]
    if missing:
        unavailable(f"missing programs: {', '.join(missing)} (run `make setup`)")
    with veth_pair(f"{TEST_PREFIX}sn") as w:
        yield w


def _live(sup: Supervisor, snort: SnortInstall, wire: Wire, run_dir: Path, opts: SnortOptions,
          replay: list[str], cgroup: cgroups.Cgroup | None = None) -> tuple[ExitStats, int]:
    """Start Snort, wait until every packet thread captures, replay, stop; (exit stats, packets sent)."""
    config = run_dir / "snort.lua"
    config.write_text(render_config(opts, snort.base_config))
    console = run_dir / "console.txt"
    child = sup.start(line_buffered(snort_argv(snort.binary, config, opts)), name="snort", stdout=console,
                      netns=wire.sensor_ns, cgroup_procs=cgroup.procs_files if cgroup else ())
    deadline = time.monotonic() + 60
    ifindex = None
    while True:
        assert child.poll() is None, f"snort exited: {console.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"snort not capturing after 60 s: {console.read_text()[-3000:]}"
        ifindex = ifindex or interface_index(child.pid, wire.sensor_if)
        if snort_log.is_ready(console.read_text()) and ifindex and \
                capturing_sockets(child.pid, ifindex) == opts.threads:
            break
        time.sleep(0.02)
    done = proc.run(["tcpreplay", "-i", wire.sender_if, *replay], netns=wire.sender_ns, timeout=120)
    sent = re.search(r"Actual: (\d+) packets", done.stdout)
    assert sent, done.stdout + done.stderr
    # the packet threads finish the ring: wait until perf_monitor (every stats interval) shows every
    # packet sent either analyzed or dropped by the kernel, with none outstanding
    tail, deadline = PerfTail(opts.log_dir), time.monotonic() + 120
    while True:
        point = tail.latest()
        counters = point.counters if point is not None else None
        if counters is not None and counters.analyzed + counters.dropped >= int(sent.group(1)) \
                and counters.outstanding == 0:
            break
        assert child.poll() is None, f"snort exited: {console.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"snort did not finish its ring within 120 s: {counters}"
        time.sleep(0.2)
    assert sup.stop(child, timeout=30) == 0
    log = console.read_text()
    assert snort_log.stop_signal(log) == "term" and snort_log.exited_cleanly(log)
    assert snort_log.errors(log) == []
    return _exit_stats(log), int(sent.group(1))


def test_live_two_threads_count_exactly(snort: SnortInstall, tiny_rules: Path, wire: Wire, sup: Supervisor,
                                        tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    opts = SnortOptions(rules=(tiny_rules,), log_dir=log_dir, stats_interval_s=1, interface=wire.sensor_if,
                        threads=2, mtu=9000)
    stats, sent = _live(sup, snort, wire, tmp_path, opts, ["--pps", "2000", str(PCAP)])
    c = stats.counters
    assert sent == 572
    assert (c.captured, c.received, c.analyzed, c.dropped, c.outstanding) == (sent, sent, sent, 0, 0)
    assert c.rx_bytes == 325968
    alerts = read_alerts([log_dir / n for n in log_file_names(2, "alert_json.txt")])
    assert alerts.by_sid() == EXPECTED_BY_SID and c.alerts == 28
    series, _ = read_perf_series([log_dir / n for n in log_file_names(2, "perf_monitor_base.json")])
    assert series and series[-1].counters.analyzed == sent


def test_live_cpu_limited_thread_drops_and_the_accounting_closes(snort: SnortInstall, tiny_rules: Path,
                                                                  wire: Wire, sup: Supervisor,
                                                                  tmp_path: Path) -> None:
    if not BURST.is_file():
        unavailable(f"shared capture {BURST} is absent")
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    # 5% of a CPU and a 1 MiB ring (about 110 frames at snaplen 9022) against a topspeed burst
    opts = SnortOptions(rules=(tiny_rules,), log_dir=log_dir, stats_interval_s=1, interface=wire.sensor_if,
                        mtu=9000, buffer_size_mb=1)
    cg = cgroups.create(f"{TEST_PREFIX}snort-{uuid.uuid4().hex[:6]}", cpus=0.05)
    try:
        stats, sent = _live(sup, snort, wire, tmp_path, opts, ["--topspeed", "--loop", "3", str(BURST)], cg)
    finally:
        cg.remove()
    c = stats.counters
    print(f"snort on 5% of a CPU: sent {sent}, {c}")
    assert sent == 3 * 13622
    assert c.dropped > 0
    assert 0 < c.captured <= sent  # drops before the socket (veth backlog) are in neither
    assert c.captured == c.analyzed + c.dropped and c.outstanding == 0
