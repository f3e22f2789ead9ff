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
import json
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


# --- the eBPF socket filter's own counters (idsbench.bypass "ebpf") ------------------------------------
# bypass_filter.c drops a bypassed flow's packets at the AF_PACKET socket, before the capture ring: the kernel
# counts them nowhere (tp_packets/tp_drops do not see what a socket filter rejects), and Suricata's
# flow_bypassed.pkts only learns them when its flow manager checks a bypassed flow for timeout (the flow's
# bypassed timeout, 100 s by default: never within a sample). The filter counts them itself: its hash maps
# flow_table_v4 / flow_table_v6 (per-CPU with use-percpu-hash) hold {packets, bytes} per half flow, created
# at 0 by Suricata when it bypasses the flow (AFPInsertHalfFlow) and incremented for every packet dropped.
# They are read through the sensor's own file descriptors (/proc/PID/fdinfo: map_id), by id with bpftool:
# nothing is pinned, so nothing is left behind and two runs never share a map (the maps go with the process,
# also after a SIGKILL).
FLOW_MAPS = ("flow_table_v4", "flow_table_v6")
BPFTOOL_FIX = "apt-get install bpftool (scripts/install-system.sh does it), or use sensor.bypass = \"local\"."


def bpftool_missing() -> str | None:
    """Why the socket filter's counters cannot be read here (None: they can)."""
    if shutil.which("bpftool") is None:
        return "bpftool is not installed (apt-get install bpftool; scripts/install-system.sh does it)"
    return None


def map_ids_of(pids: list[int], proc_dir: Path = Path("/proc")) -> list[int]:
    """The ids of the eBPF maps the processes `pids` hold open (their fds' `map_id:` in fdinfo), sorted."""
    found: set[int] = set()
    for pid in pids:
        fd_dir = proc_dir / str(pid) / "fd"
        try:
            fds = list(fd_dir.iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) != "anon_inode:bpf-map":
                    continue
                info = (proc_dir / str(pid) / "fdinfo" / fd.name).read_text()
            except OSError:
                continue
            found.update(map_id_of(info))
    return sorted(found)


def map_id_of(fdinfo: str) -> list[int]:
    """`map_id:` of a bpf-map fd's fdinfo text ([] when absent)."""
    for line in fdinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "map_id" and value.strip().isdigit():
            return [int(value)]
    return []


def _u64(raw: object) -> int:
    """A number bpftool printed: an int, or hex byte strings (no BTF: the value's raw bytes, little endian)."""
    if isinstance(raw, bool):
        raise ValueError(raw)
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str):
        return int(raw, 0)
    raise ValueError(f"not a counter: {raw!r}")


def _packets(value: object) -> int:
    """The `packets` of one struct pair {__u64 packets; __u64 bytes;} as bpftool dumps it: formatted (BTF)
    {"packets": N, "bytes": M}, or its raw bytes ["0x01", "0x00", ...] (the first 8, little endian)."""
    if isinstance(value, dict):
        return _u64(value["packets"])
    if isinstance(value, list):
        return int.from_bytes(bytes(_u64(b) for b in value[:8]), "little")
    raise ValueError(f"not a struct pair: {value!r}")


def packets_in_dump(dump: object) -> int:
    """Packets counted by every entry of a `bpftool map dump -j` of a flow table, summed over all entries
    and CPUs (per-CPU hash: "values" per CPU; plain hash: one "value"; "formatted" when the map has BTF)."""
    if not isinstance(dump, list):
        raise ValueError("a bpftool map dump is a JSON list")
    total = 0
    for entry in dump:
        if not isinstance(entry, dict):
            raise ValueError(f"not a map entry: {entry!r}")
        shown = entry.get("formatted", entry)
        if not isinstance(shown, dict):
            raise ValueError(f"not a map entry: {entry!r}")
        if "values" in shown:
            total += sum(_packets(v["value"]) for v in shown["values"])
        else:
            total += _packets(shown["value"])
    return total


def _bpftool(argv: list[str]) -> object:
    done = proc.run(["bpftool", *argv, "-j"], timeout=30, check=False)
    if done.returncode != 0:
        raise EnvironmentMissing(f"`bpftool {' '.join(argv)} -j` failed (exit {done.returncode}): "
                                 f"{(done.stderr or done.stdout).strip()[-300:]}", fix=BPFTOOL_FIX)
    return json.loads(done.stdout or "null")


def flow_maps(pids: list[int]) -> list[int]:
    """The ids of the bypass filter's flow tables among the maps `pids` hold ([] before it is loaded)."""
    ids = []
    for map_id in map_ids_of(pids):
        shown = _bpftool(["map", "show", "id", str(map_id)])
        if isinstance(shown, dict) and shown.get("name") in FLOW_MAPS:
            ids.append(map_id)
    return ids


def filtered_packets(map_ids: list[int]) -> int:
    """Packets the socket filter dropped so far: every flow table entry's packets, summed (a map that is
    gone, the sensor having exited, counts nothing: read them before it stops)."""
    total = 0
    for map_id in map_ids:
        done = proc.run(["bpftool", "map", "dump", "id", str(map_id), "-j"], timeout=30, check=False)
        if done.returncode != 0:
            continue
        total += packets_in_dump(json.loads(done.stdout or "[]"))
    return total
