"""What Snort needs at run time beside its build tree: the Debian packages of its shared libraries.

Containers and VMs share the build tree read-only at its host path (so the rpath to libdaq holds) and
install these packages in their root filesystem (same distribution as the host, so the same library
versions). They are read from the binary itself (`ldd`, then `dpkg-query -S` per library) once per
build and kept in `<prefix>/.runtime-packages`; the documented list is the fallback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from idsbench import proc
from idsbench.errors import EnvironmentMissing

PACKAGES_FILE = ".runtime-packages"
# docs/snort.md, measured on Debian 12 (+ coreutils for stdbuf, essential anyway)
DOCUMENTED = ("libdumbnet1", "libhwloc15", "libhyperscan5", "libluajit-5.1-2", "libnuma1", "libpcap0.8",
              "libpcre2-8-0", "libssl3", "libunwind8", "libuuid1", "zlib1g", "liblzma5")
_LDD_LINE = re.compile(r"^\s*\S+\s+=>\s+(/\S+)\s+\(0x[0-9a-f]+\)\s*$")

Runner = Callable[[list[str]], str]


def _run(argv: list[str]) -> str:
    return proc.run(argv, timeout=60, check=True).stdout


def parse_ldd(text: str) -> list[Path]:
    """Resolved library paths of `ldd` output (the vdso and the loader line have none)."""
    return [Path(m.group(1)) for m in map(_LDD_LINE.match, text.splitlines()) if m]


def parse_dpkg_search(text: str) -> str | None:
    """`libfoo1:amd64: /usr/lib/x86_64-linux-gnu/libfoo.so.1` -> 'libfoo1'."""
    for line in text.splitlines():
        package, sep, _ = line.partition(": ")
        if sep and "diversion" not in package:
            return package.split(",")[0].split(":")[0].strip()
    return None


def _owner(path: Path, run: Runner) -> str | None:
    variants = [path]
    text = str(path)
    if text.startswith("/usr/"):
        variants.append(Path(text[4:]))     # merged /usr: dpkg may record either spelling
    else:
        variants.append(Path("/usr" + text))
    for candidate in variants:
        try:
            found = parse_dpkg_search(run(["dpkg-query", "-S", str(candidate)]))
        except EnvironmentMissing:
            continue
        if found:
            return found
    return None


def runtime_packages(prefix: Path, binary: Path, run: Runner = _run) -> tuple[str, ...]:
    """Debian packages holding the libraries `binary` loads from outside `prefix` (cached in the tree)."""
    cached = prefix / PACKAGES_FILE
    try:
        names = tuple(n for n in cached.read_text().split() if n)
        if names:
            return names
    except OSError:
        pass
    try:
        libraries = parse_ldd(run(["ldd", str(binary)]))
    except EnvironmentMissing:
        return DOCUMENTED
    owners = {_owner(lib, run) for lib in libraries if not lib.is_relative_to(prefix)}
    names = tuple(sorted({o for o in owners if o} | {"coreutils"}))
    if len(names) < 3:  # dpkg did not know them: not a Debian host, or a damaged database
        return DOCUMENTED
    try:
        cached.write_text("\n".join(names) + "\n")
    except OSError:
        pass  # a read-only cache: computed again next time
    return names
