"""The probe's TSC rate (ibtsc's output, never guessed off x86) and the sensor builds it finds in the cache
(Suricata's `.built` records, Snort's stamp completed from the build script only when the digests agree)."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from idsbench.native.tsc import measure_tsc, parse_output
from idsbench.probe.builds import cached_builds
from idsbench.probe.diff import diff
from idsbench.probe.render import summary
from idsbench.probemodel import CpuInfo, HostProbe, SensorBuild, TscRate

SURICATA_STAMP = ("version=8.0.6\noptions=profiling\nconfigure=--disable-gccmarch-native --enable-profiling-rules\n"
                  "source=/s/suricata-8.0.6.tar.xz\nsource_sha256=895234a1\ncompilers=cc 12;rustc 1.95\n"
                  "digest=1163df6de4b1\nhyperscan=yes\nprofiling_rules=yes\njobs=2\nbuild_s=2365\n")
SNORT_OLD_STAMP = ("snort_version=3.12.2.0\ndaq_version=3.0.25\ndigest=5de6d038052a\njobs=2\ndaq_build_s=35\n"
                   "snort_build_s=3196\ninstalled_bytes=16611885\nbuilt_unix=1795723678\n")


def test_tsc_output_parses_and_a_missing_rate_stays_missing() -> None:
    rate = parse_output('{"tsc_hz": 2299998053, "rounds": 3, "round_ms": 50, "spread_ppm": 0.1}\n')
    assert (rate.hz, rate.rounds, rate.round_ms, rate.spread_ppm, rate.error) == (2299998053.0, 3, 50, 0.1, None)
    off = parse_output('{"tsc_hz": null, "rounds": 0, "round_ms": 50, "error": "no rdtsc on this architecture"}')
    assert off.hz is None and off.error == "no rdtsc on this architecture"
    assert parse_output("Segmentation fault").error and parse_output("").hz is None
    arm = measure_tsc(machine="aarch64")
    assert arm.hz is None and "x86 only" in (arm.error or "")


def test_tsc_rate_is_measured_here_on_x86_and_none_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDSBENCH_CACHE", str(tmp_path))
    rate = measure_tsc(rounds=2, round_ms=20)
    if platform.machine() in ("x86_64", "i686"):
        assert rate.error is None and rate.hz is not None and 1e8 < rate.hz < 1e10 and rate.rounds == 2
    else:
        assert rate.hz is None and rate.error


def _cache(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    built = cache / "suricata" / "8.0.6-profiling-1163df6de4b1"
    built.mkdir(parents=True)
    (built / ".built").write_text(SURICATA_STAMP)
    (cache / "suricata" / "8.0.6-profiling-0000").mkdir()  # an unfinished build
    snort = cache / "snort" / "3.12.2.0-5de6d038052a"
    snort.mkdir(parents=True)
    (snort / ".built").write_text(SNORT_OLD_STAMP)
    (cache / "snort" / "current").symlink_to(snort.name)
    (cache / "snort" / "rules").mkdir()
    return cache


def _script(tmp_path: Path, digest: str) -> Path:
    script = tmp_path / "build-snort.sh"
    script.write_text(f'[ "$1" = --print-record ] || exit 2\necho digest={digest}\n'
                      'echo "configure=--disable-gdb --disable-docs CFLAGS=-O2"\necho source=/s/snort3.tar.gz\n'
                      "echo source_sha256=38fe0bb3\n")
    return script


def test_cached_builds_are_typed_records(tmp_path: Path) -> None:
    builds, notes = cached_builds(_cache(tmp_path), _script(tmp_path, "5de6d038052a"))
    suricata, snort = builds
    assert (suricata.engine, suricata.version, suricata.build_id, suricata.source_sha256, suricata.profiling_rules,
            suricata.options) == ("suricata", "8.0.6", "1163df6de4b1", "895234a1", True, "profiling")
    assert "--enable-profiling-rules" in (suricata.configure_flags or "")
    assert (snort.engine, snort.version, snort.build_id, snort.daq_version, snort.current, snort.build_s) == (
        "snort", "3.12.2.0", "5de6d038052a", "3.0.25", True, 35 + 3196)
    # the old stamp lacked them; the script's record has the same digest, so it describes this build
    assert (snort.source_sha256, snort.configure_flags) == ("38fe0bb3", "--disable-gdb --disable-docs CFLAGS=-O2")
    assert snort.completed_from and "same digest" in snort.completed_from
    assert notes == [f"builds: {tmp_path / 'cache' / 'suricata' / '8.0.6-profiling-0000'} holds no finished "
                     "Suricata build (no .built)"]


def test_a_script_record_of_another_digest_is_not_used(tmp_path: Path) -> None:
    builds, _ = cached_builds(_cache(tmp_path), _script(tmp_path, "ffffffffffff"))
    snort = builds[1]
    assert (snort.source_sha256, snort.configure_flags, snort.completed_from) == (None, None, None)


def _probe(**update: object) -> HostProbe:
    return HostProbe(cpu=CpuInfo(count=2)).model_copy(update=update)


def test_the_probe_text_names_the_rate_and_each_build() -> None:
    build = SensorBuild(engine="snort", version="3.12.2.0", prefix="/c/snort/x", build_id="5de6d038052a",
                        source_sha256="38fe0bb3", configure_flags="--disable-gdb", daq_version="3.0.25", current=True)
    text = summary(_probe(tsc=TscRate(hz=2299998053.0, rounds=3, round_ms=50, spread_ppm=0.1), builds=[build]))
    assert "TSC        2,299,998,053 Hz" in text
    assert "build      snort 3.12.2.0 (libdaq 3.0.25, current): id 5de6d038052a, source sha256 38fe0bb3" in text
    assert "not measured: no rdtsc" in summary(_probe(tsc=TscRate(error="no rdtsc")))


def test_probe_diff_ignores_tsc_jitter_and_cached_builds_but_not_a_new_rate() -> None:
    a = _probe(tsc=TscRate(hz=2.3e9, rounds=3, spread_ppm=0.1))
    b = _probe(tsc=TscRate(hz=2.3e9 * (1 + 2e-5), rounds=3, spread_ppm=3.0),
               builds=[SensorBuild(engine="snort", prefix="/x")])
    assert diff(a, b) == []
    assert [d.path for d in diff(a, _probe(tsc=TscRate(hz=2.0e9)))] == ["tsc.hz"]
