"""What a kernel-side flow bypass (idsbench.bypass "xdp", "ebpf") dropped: by design, before the capture, so
neither lost nor inspected (the waterfall's "bypassed").

- "xdp": the XDP filter program on the capture interface drops in the driver; the interface counts it
  (`ethtool -S`: a veth's per-queue xdp_drops) — `xdp_drops`;
- "ebpf": the eBPF socket filter drops at the AF_PACKET socket, where no kernel counter sees it; the filter
  counts it in its own flow tables, read with bpftool — `flow_maps`, `filtered_packets`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from idsbench import proc
from idsbench.errors import EnvironmentMissing


def xdp_drops(ns: str | None, ifname: str) -> int:
    """Packets the XDP program on `ifname` dropped so far (`ethtool -S`: a veth's per-queue xdp_drops,
    summed; 0 when the driver reports none): what Suricata's XDP bypass filter dropped for bypassed flows
    (measured on a veth: 24427 = the 40001 packets received − the 15574 AF_PACKET captured)."""
    done = proc.run(["ethtool", "-S", ifname], netns=ns, timeout=10, check=False)
    total = 0
    for line in done.stdout.splitlines():
        name, _, value = line.strip().partition(":")
        if name.endswith("xdp_drops") and value.strip().isdigit():
            total += int(value)
    return total


# --- the eBPF socket filter's own counters ("ebpf") ------------------------------------------------------
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
