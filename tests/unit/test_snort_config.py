"""snort.lua rendering, command lines and finding the build."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.buildstamp import parse_build_stamp
from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.sensors.snort.config import (
    ALERT_FIELDS,
    SnortOptions,
    find_install,
    line_buffered,
    log_file_names,
    lua_string,
    render_config,
    snort_argv,
)

BASE = Path("/c/snort/3.12.2.0-abc/etc/snort/snort.lua")
STAMP = ("snort_version=3.12.2.0\ndaq_version=3.0.25\ndigest=5de6d038052a\njobs=2\ndaq_build_s=22\n"
         "snort_build_s=472\ninstalled_bytes=16611885\nbuilt_unix=1795403253\n")


def test_live_config() -> None:
    opts = SnortOptions(rules=(Path("/r/a.rules"), Path("/r/b.rules")), log_dir=Path("/run/s"),
                        stats_interval_s=2, interface="ibrx0", threads=2, mtu=9000, buffer_size_mb=64,
                        variables=(("HOME_NET", "[10.0.0.0/8]"), ("HTTP_PORTS", "80")),
                        overrides="stream_tcp = { small_segments = { count = 3 } }")
    lua = render_config(opts, BASE)
    assert lua.index(f"include '{BASE}'") < lua.index("daq = {")  # stock config first, ours after
    assert "inputs = { 'ibrx0' }" in lua and "snaplen = 9022" in lua
    assert "name = 'afpacket', mode = 'passive', variables = { 'fanout_type=hash', 'buffer_size_mb=64' }" in lua
    assert "ips.mode = 'tap'" in lua
    assert "ips.rules = [[\ninclude /r/a.rules\ninclude /r/b.rules\n]]" in lua
    assert "ips.variables.nets.HOME_NET = '[10.0.0.0/8]'" in lua
    assert "ips.variables.ports.HTTP_PORTS = '80'" in lua
    assert f"fields = '{' '.join(ALERT_FIELDS)}'" in lua and ALERT_FIELDS[-1] == "msg"
    assert "perf_monitor = { base = true, seconds = 2, packets = 0, format = 'json', output = 'file' }" in lua
    assert lua.rstrip().endswith("stream_tcp = { small_segments = { count = 3 } }")  # overrides win


def test_readback_config_and_one_thread() -> None:
    opts = SnortOptions(rules=(Path("/r/a.rules"),), log_dir=Path("/l"), stats_interval_s=1)
    lua = render_config(opts, BASE)
    assert "daq = { snaplen = 65535 }" in lua and "afpacket" not in lua and "overrides" not in lua
    assert snort_argv(Path("/b/snort"), Path("/l/snort.lua"), opts, pcap=Path("/p.pcap")) == [
        "/b/snort", "-c", "/l/snort.lua", "-l", "/l", "-r", "/p.pcap"]
    assert snort_argv(Path("s"), Path("c"), opts, config_test=True)[-1] == "-T"
    live = SnortOptions(rules=(), log_dir=Path("/l"), stats_interval_s=1, interface="e", threads=3)
    assert snort_argv(Path("s"), Path("c"), live)[-2:] == ["-z", "3"]
    assert "variables = {  }" in render_config(SnortOptions(rules=(), log_dir=Path("/l"), stats_interval_s=1,
                                                             interface="e"), BASE)
    with pytest.raises(SpecError, match="exactly one packet source"):
        snort_argv(Path("s"), Path("c"), live, pcap=Path("/p.pcap"))
    with pytest.raises(SpecError):
        snort_argv(Path("s"), Path("c"), opts)


@pytest.mark.parametrize("kwargs", [{"stats_interval_s": 0}, {"threads": 0}, {"interface": "a'b"},
                                    {"buffer_size_mb": 0}, {"variables": (("home_net", "x"),)}])
def test_options_are_checked(kwargs: dict[str, object]) -> None:
    base: dict[str, object] = {"rules": (), "log_dir": Path("/l"), "stats_interval_s": 1}
    with pytest.raises(SpecError):
        SnortOptions(**{**base, **kwargs})  # type: ignore[arg-type]


def test_rule_paths_must_be_absolute() -> None:
    opts = SnortOptions(rules=(Path("rel.rules"),), log_dir=Path("/l"), stats_interval_s=1)
    with pytest.raises(SpecError, match="rel.rules"):
        render_config(opts, BASE)


def test_helpers() -> None:
    assert lua_string("a'b\\c\nd") == "'a\\'b\\\\c\\nd'"
    assert line_buffered(["snort", "-V"]) == ["stdbuf", "-oL", "-eL", "snort", "-V"]
    assert log_file_names(1, "alert_json.txt") == ["alert_json.txt"]
    assert log_file_names(2, "alert_json.txt") == ["0_alert_json.txt", "1_alert_json.txt"]
    assert SnortOptions(rules=(), log_dir=Path("/l"), stats_interval_s=1, mtu=65535).snaplen == 65535


def test_find_install(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentMissing, match="make snort"):
        find_install(tmp_path)
    tree = tmp_path / "snort" / "3.12.2.0-5de6d038052a"
    (tree / "bin").mkdir(parents=True)
    (tmp_path / "snort" / "current").symlink_to(tree.name)
    (tree / ".built").write_text(STAMP)
    with pytest.raises(EnvironmentMissing, match="no bin/snort"):
        find_install(tmp_path)
    (tree / "bin" / "snort").write_text("")
    install = find_install(tmp_path)
    assert install.prefix == tree and install.binary == tree / "bin" / "snort"
    assert install.base_config == tree / "etc" / "snort" / "snort.lua"
    assert install.build.snort_build_s == 472 and install.build.installed_bytes == 16611885
    (tree / ".built").write_text("snort_version=3.12.2.0\n")
    with pytest.raises(EnvironmentMissing, match="damaged"):
        find_install(tmp_path)


def test_parse_build_stamp() -> None:
    build = parse_build_stamp(STAMP)
    assert (build.snort_version, build.daq_version, build.jobs) == ("3.12.2.0", "3.0.25", 2)
    with pytest.raises(ValueError, match="jobs"):
        parse_build_stamp(STAMP.replace("jobs=2\n", ""))
