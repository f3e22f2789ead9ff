"""The sensor builds in idsbench's cache, as the probe records them: every finished Suricata source build
(`<cache>/suricata/<version>-<options>-<digest>/.built`, sensors/suricata/build.py) and every Snort 3 build
(`<cache>/snort/<version>-<digest>/.built`, scripts/build-snort.sh) with version, configure flags, build id
(the digest of the cache key) and the source's sha256.

A Snort stamp written before the script recorded its configure flags and archives' sha256 lacks them;
they are completed from `build-snort.sh --print-record` only when that record's digest equals the
stamp's (the digest covers exactly those inputs), and `completed_from` says so. Otherwise they stay None.
"""

from __future__ import annotations

from pathlib import Path

from idsbench import proc, settings
from idsbench.buildstamp import key_values, parse_build_stamp, parse_stamp, repo_root
from idsbench.errors import EnvironmentMissing
from idsbench.probemodel import SensorBuild

STAMP = ".built"


def suricata_builds(cache: Path) -> tuple[list[SensorBuild], list[str]]:
    out: list[SensorBuild] = []
    notes: list[str] = []
    for prefix in sorted(p for p in (cache / "suricata").glob("*") if p.is_dir() and not p.name.startswith(".")):
        stamp = prefix / STAMP
        if not stamp.is_file():
            notes.append(f"builds: {prefix} holds no finished Suricata build (no {STAMP})")
            continue
        try:
            b = parse_stamp(prefix, stamp.read_text())
        except (OSError, ValueError) as exc:
            notes.append(f"builds: {stamp} does not read ({exc})")
            continue
        out.append(SensorBuild(engine="suricata", version=b.version, prefix=str(prefix), build_id=b.build_id,
                               configure_flags=b.configure, source=b.source, source_sha256=b.source_sha256,
                               options=b.options, profiling_rules=b.profiling_rules, hyperscan=b.hyperscan,
                               build_s=b.build_s))
    return out, notes


def snort_record(script: Path | None = None) -> dict[str, str] | None:
    """What build-snort.sh's digest covers on this machine (`--print-record`), None when it cannot say."""
    script = script or repo_root() / "scripts" / "build-snort.sh"
    if not script.is_file():
        return None
    try:
        done = proc.run(["bash", str(script), "--print-record"], timeout=60, check=False)
    except (EnvironmentMissing, OSError):  # no bash, or it did not finish
        return None
    return key_values(done.stdout) if done.returncode == 0 else None


def snort_builds(cache: Path, script: Path | None = None) -> tuple[list[SensorBuild], list[str]]:
    out: list[SensorBuild] = []
    notes: list[str] = []
    base = cache / "snort"
    current = (base / "current").resolve() if (base / "current").exists() else None
    record: dict[str, str] | None = None
    asked = False
    for prefix in sorted(p for p in base.glob("*") if p.is_dir() and not p.is_symlink() and p.name != "rules"
                         and not p.name.startswith(".")):
        stamp = prefix / STAMP
        if not stamp.is_file():
            notes.append(f"builds: {prefix} holds no finished Snort build (no {STAMP})")
            continue
        try:
            text = stamp.read_text()
            b = parse_build_stamp(text)
        except (OSError, ValueError) as exc:
            notes.append(f"builds: {stamp} does not read ({exc})")
            continue
        values = key_values(text)
        completed_from = None
        if "source_sha256" not in values or "configure" not in values:
            if not asked:
                record, asked = snort_record(script), True
            if record is not None and record.get("digest") == b.digest:
                values = {**record, **values}
                completed_from = "build-snort.sh --print-record (same digest)"
        out.append(SensorBuild(
            engine="snort", version=b.snort_version, prefix=str(prefix), current=prefix.resolve() == current,
            build_id=b.digest, configure_flags=values.get("configure"), source=values.get("source"),
            source_sha256=values.get("source_sha256"), daq_version=b.daq_version,
            build_s=b.daq_build_s + b.snort_build_s, completed_from=completed_from))
    return out, notes


def cached_builds(cache: Path | None = None, script: Path | None = None) -> tuple[list[SensorBuild], list[str]]:
    """(every sensor build in the cache, notes on what could not be read)."""
    cache = cache or settings.cache_dir()
    suricata, notes = suricata_builds(cache)
    snort, more = snort_builds(cache, script)
    return [*suricata, *snort], [*notes, *more]
