"""Suricata's flow bypass: the settings each mode (idsbench.bypass) writes into its config, and the eBPF
programs of its kernel-side modes ("xdp", "ebpf"), built once per machine from Suricata's own sources.

Settings: "off" (`stream.bypass: no`, Suricata's default); "local" (the stream engine's bypass: once a flow's
reassembly reaches `stream.reassembly.depth`, its further packets are still captured and decoded, then
skipped: flow_bypassed.local_pkts); "xdp" (AF_PACKET with the XDP filter program on the capture interface,
`xdp-filter-file`, `bypass: yes`: a bypassed flow's packets are dropped in the driver); "ebpf" (AF_PACKET with
the eBPF socket filter, `ebpf-filter-file`, `bypass: yes`: dropped at the socket, before the capture ring).
Every mode pins `stream.bypass` and the depth, so off and on compare like with like.

Programs:
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

Scalar = str | int | float | bool
# the stream depth every mode runs with (Suricata's default, written out so off and on compare like with like)
STREAM_DEPTH = "1mb"
PROGRAMS = {"xdp": "xdp_filter", "ebpf": "bypass_filter"}  # the program each kernel-side mode loads (<name>.bpf)

CLANGS = ("clang", "clang-19", "clang-16", "clang-15", "clang-14")
LLCS = ("llc", "llc-19", "llc-16", "llc-15", "llc-14")
SHIPPED = Path("/usr/lib/suricata/ebpf")  # Debian's compiled programs: legacy maps (not loadable with libbpf 1)


def _which(names: tuple[str, ...]) -> str | None:
    return next((found for n in names if (found := shutil.which(n))), None)


def settings(mode: str, program: str | None = None, xdp_mode: str = "driver") -> dict[str, Scalar]:
    """The settings a run uses for `mode`, every one written out (what results record). `program`: the
    path of the eBPF object the kernel-side modes load."""
    if mode not in ("off", "local", *PROGRAMS):
        raise ValueError(f"unknown bypass mode {mode!r}")
    out: dict[str, Scalar] = {"stream.bypass": mode != "off", "stream.reassembly.depth": STREAM_DEPTH}
    if mode == "xdp":
        out.update({"af-packet.bypass": True, "af-packet.xdp-filter-file": program or f"{PROGRAMS[mode]}.bpf",
                    "af-packet.xdp-mode": xdp_mode, "af-packet.use-percpu-hash": True})
    elif mode == "ebpf":
        out.update({"af-packet.bypass": True, "af-packet.ebpf-filter-file": program or f"{PROGRAMS[mode]}.bpf",
                    "af-packet.use-percpu-hash": True})
    return out


def _tarball(sources: Path) -> Path | None:
    found = sorted(sources.glob("suricata-*.tar.xz"))
    return found[-1] if found else None


def missing(sources: Path) -> str | None:
    """Why the programs cannot be built here (None: they can); `sources`: where Suricata's tarballs are."""
    if _which(CLANGS) is None or _which(LLCS) is None:
        return "clang and llc are not installed (apt-get install clang llvm; scripts/install-system.sh does it)"
    if not Path("/usr/include/bpf/bpf_helpers.h").is_file():
        return "libbpf's headers are not installed (apt-get install libbpf-dev; scripts/install-system.sh does it)"
    if _tarball(sources) is None:
        return f"no Suricata source tarball in {sources} (suricata-X.Y.Z.tar.xz, for its ebpf/ programs)"
    return None


def program(name: str, cache: Path, sources: Path) -> Path:
    """The compiled `<name>.bpf` (e.g. "xdp_filter"), built from the newest Suricata tarball in `sources` first
    when the cache lacks it."""
    why = missing(sources)
    if why is not None:
        raise EnvironmentMissing(f"Cannot build Suricata's eBPF program {name}.bpf: {why}.",
                                 fix="install clang, llvm and libbpf-dev (scripts/install-system.sh) and keep the "
                                     "Suricata source tarball in ../shared/src, or use sensor.bypass = \"local\".")
    tarball = _tarball(sources)
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
