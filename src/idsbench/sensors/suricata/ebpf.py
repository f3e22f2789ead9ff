"""The eBPF programs of Suricata's kernel-side bypass (idsbench.bypass "xdp" and "ebpf"), built once per
machine from Suricata's own sources.

Debian's Suricata 7.0.10 ships compiled programs (/usr/lib/suricata/ebpf: xdp_filter.bpf,
bypass_filter.bpf), but with legacy `SEC("maps")` map definitions, which the libbpf 1.x it links refuses
(measured: "Unable to load eBPF objects in '/usr/lib/suricata/ebpf/xdp_filter.bpf': Operation not
supported"). Suricata 8's sources (../shared/src/suricata-8.0.6.tar.xz, the tarball the Suricata 8 build
uses) define the same maps BTF-style (`SEC(".maps")`), with the same map names and key layouts that 7.0
reads; they are compiled with clang for the bpf target as Suricata's ebpf/Makefile.am does, into
`<cache>/ebpf/<name>-<digest>.bpf`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from pathlib import Path

from idsbench import proc
from idsbench.buildonce import build_once
from idsbench.errors import EnvironmentMissing
from idsbench.sensors.suricata.build import source_dir

CLANGS = ("clang", "clang-19", "clang-16", "clang-15", "clang-14")
LLCS = ("llc", "llc-19", "llc-16", "llc-15", "llc-14")
SHIPPED = Path("/usr/lib/suricata/ebpf")  # Debian's compiled programs: legacy maps (not loadable with libbpf 1)


def _which(names: tuple[str, ...]) -> str | None:
    return next((found for n in names if (found := shutil.which(n))), None)


def _tarball() -> Path | None:
    found = sorted(source_dir().glob("suricata-*.tar.xz"))
    return found[-1] if found else None


def missing() -> str | None:
    """Why the programs cannot be built here (None: they can)."""
    if _which(CLANGS) is None or _which(LLCS) is None:
        return "clang and llc are not installed (apt-get install clang llvm; scripts/install-system.sh does it)"
    if not Path("/usr/include/bpf/bpf_helpers.h").is_file():
        return "libbpf's headers are not installed (apt-get install libbpf-dev; scripts/install-system.sh does it)"
    if _tarball() is None:
        return f"no Suricata source tarball in {source_dir()} (suricata-X.Y.Z.tar.xz, for its ebpf/ programs)"
    return None


def program(name: str, cache: Path) -> Path:
    """The compiled `<name>.bpf` (e.g. "xdp_filter"), building it first when the cache lacks it."""
    why = missing()
    if why is not None:
        raise EnvironmentMissing(f"Cannot build Suricata's eBPF program {name}.bpf: {why}.",
                                 fix="install clang, llvm and libbpf-dev (scripts/install-system.sh) and keep the "
                                     "Suricata source tarball in ../shared/src, or use sensor.bypass = \"local\".")
    tarball = _tarball()
    assert tarball is not None
    clang, llc = _which(CLANGS), _which(LLCS)
    assert clang is not None and llc is not None
    digest = hashlib.sha256(f"{tarball.name}|{tarball.stat().st_size}|{name}|{os.path.realpath(clang)}".encode())
    target = cache / "ebpf" / f"{name}-{digest.hexdigest()[:16]}.bpf"

    def compile_to(tmp: Path) -> None:
        work = target.parent / f".src-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        try:
            with tarfile.open(tarball) as tf:
                members = [m for m in tf.getmembers() if "/ebpf/" in m.name and (m.isfile() or m.isdir())]
                tf.extractall(work, members=members, filter="data")
            ebpf = next(work.glob("*/ebpf"))
            ll = ebpf / f"{name}.ll"
            arch = os.uname().machine
            for argv in ([clang, "-Wall", "-Iinclude", "-O2", "-g", f"-I/usr/include/{arch}-linux-gnu/",
                          "-D__KERNEL__", "-D__ASM_SYSREG_H", "-target", "bpf", "-S", "-emit-llvm", f"{name}.c",
                          "-o", str(ll)],
                         [llc, "-march=bpf", "-filetype=obj", str(ll), "-o", str(tmp)]):
                done = proc.run(argv, cwd=ebpf, check=False, timeout=300)
                if done.returncode != 0:
                    raise EnvironmentMissing(f"Building Suricata's eBPF program {name}.bpf failed (`{' '.join(argv)}`): "
                                             f"{(done.stderr or done.stdout).strip()[-600:]}",
                                             fix="install clang, llvm and libbpf-dev (scripts/install-system.sh).")
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return build_once(target, compile_to)
