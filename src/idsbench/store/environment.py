"""Environment fingerprint recorded in campaign.json: host, kernel, tools and their versions."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import sys
from pathlib import Path

from idsbench import __version__, proc
from idsbench.errors import EnvironmentMissing
from idsbench.store.campaigndoc import HostFingerprint


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """sha256 of a file read in chunks into one reused buffer (hashlib releases the GIL)."""
    digest = hashlib.sha256()
    buf = bytearray(chunk)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            digest.update(view[:n])
    return digest.hexdigest()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _os_release() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return "unknown"
    match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.MULTILINE)
    return match.group(1) if match else "unknown"


def _mem_total() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cgroup_version() -> str:
    if Path("/sys/fs/cgroup/cgroup.controllers").is_file():
        return "v2"
    if Path("/sys/fs/cgroup/memory").is_dir() or Path("/sys/fs/cgroup/cpu").is_dir():
        return "v1"
    return "none"


def tcpreplay_version() -> str:
    try:
        out = proc.run(["tcpreplay", "-V"], timeout=10, check=False)
    except (EnvironmentMissing, OSError):  # not installed, or it hung
        return "missing"
    match = re.search(r"tcpreplay version:\s*(\S+)", out.stdout + out.stderr)
    return match.group(1) if match else "unknown"


def fingerprint() -> HostFingerprint:
    return HostFingerprint(
        hostname=platform.node(),
        cpu_model=_cpu_model(),
        cpus=os.cpu_count(),
        mem_total_bytes=_mem_total(),
        kernel=platform.release(),
        os=_os_release(),
        cgroup=cgroup_version(),
        python=sys.version.split()[0],
        idsbench=__version__,
        tcpreplay=tcpreplay_version(),
    )
