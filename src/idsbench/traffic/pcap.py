"""Capture metadata (`read_info`) and packet iteration for classic pcap and pcapng files.

`read_info` walks record headers in one tight loop over an mmap, dissects every packet with
numpy, and hashes the file in a parallel thread; results are cached as JSON by sha256.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from pydantic import TypeAdapter

from idsbench import native, settings
from idsbench.errors import EnvironmentMissing, InputError
from idsbench.traffic import traceinfo_native
from idsbench.traffic.protocols import FORMAT_FIX, detect_format

if TYPE_CHECKING:  # numpy is imported where it is used: `trace info` (native) runs without it
    import numpy as np

    from idsbench.traffic.pcapfmt import RecordIndex

INFO_SCHEMA = 2  # bump when TraceInfo's content changes: old cache entries are then ignored
MAX_DENSE_SECONDS = 200_000
LINK_NAMES = {0: "null", 1: "ethernet", 101: "raw", 108: "loop", 113: "linux-sll", 228: "ipv4",
              229: "ipv6", 276: "linux-sll2", 105: "ieee802.11", 127: "ieee802.11-radiotap"}


def default_cache_dir() -> Path:
    return settings.cache_dir()


@dataclass(frozen=True)
class TraceInfo:
    """What is in a capture. `bytes` is the sum of captured lengths (as capinfos' data size)."""

    path: str
    sha256: str
    format: str
    packets: int
    bytes: int
    wire_bytes: int
    duration_s: float
    start_unix: float
    end_unix: float
    max_frame: int
    min_frame: int
    avg_frame: float
    link_type: int
    link_name: str
    flows: int  # TCP + UDP (+ SCTP) bidirectional 5-tuples
    flows_by_transport: dict[str, int] = field(default_factory=dict)
    proto_mix: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    per_second: tuple[dict[str, float], ...] = ()
    mean_pps: float = 0.0
    peak_pps: float = 0.0
    mean_mbps: float = 0.0
    peak_mbps: float = 0.0

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["per_second"] = [dict(p) for p in self.per_second]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> TraceInfo:
        """The dataclass from its cached JSON, validated (a ValueError when it does not fit)."""
        return _trace_info_adapter().validate_python(d)


@cache
def _trace_info_adapter() -> TypeAdapter[TraceInfo]:
    return TypeAdapter(TraceInfo)


class Packet(NamedTuple):
    ts_ns: int
    caplen: int
    wirelen: int
    data: bytes
    link_type: int

    @property
    def ts(self) -> float:
        return self.ts_ns / 1e9


@contextmanager
def _opened(p: Path) -> Iterator[tuple[BinaryIO, int]]:
    """The open file and its size; InputError naming the file when it is missing, a directory,
    unreadable or empty."""
    try:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise InputError(f"{p} is empty, not a pcap or pcapng capture.",
                                 fix="give a capture that holds packets.")
            yield fh, size
    except FileNotFoundError as exc:
        raise InputError(f"capture {p} does not exist.", fix="check the path (relative paths are "
                         "resolved from the current directory or the spec file's directory).") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{p} is a directory, not a capture file.", fix="give the path of a .pcap "
                         "or .pcapng file.") from exc
    except PermissionError as exc:
        raise InputError(f"capture {p} is not readable.", fix="fix its permissions.") from exc


@contextmanager
def open_capture(path: Path | str) -> Iterator[tuple[np.ndarray, memoryview]]:
    """Yield (uint8 array, memoryview) over the whole file, read-only via mmap."""
    p = Path(path)
    with _opened(p) as (fh, _size):
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    import numpy as np

    view = memoryview(mm)
    buf = np.frombuffer(mm, dtype=np.uint8)
    try:
        yield buf, view
    finally:
        del buf
        view.release()
        try:
            mm.close()
        except BufferError:  # a numpy view still references it; the GC will close it
            pass


def iter_packets(path: Path | str) -> Iterator[Packet]:
    """Every packet of the capture in file order: (ts_ns, caplen, wirelen, data, link_type)."""
    from idsbench.traffic.pcapfmt import index_capture

    with open_capture(path) as (buf, raw):
        idx = index_capture(buf, raw, Path(path))
        for off, cap, wire, ts, lt in zip(idx.data_off.tolist(), idx.caplen.tolist(),
                                          idx.wirelen.tolist(), idx.ts_ns.tolist(), idx.link.tolist()):
            yield Packet(ts, cap, wire, bytes(raw[off:off + cap]), lt)


def _hash(raw: memoryview, out: list[str] | None = None) -> str:
    h = hashlib.sha256()
    step = 1 << 24
    for start in range(0, len(raw), step):
        h.update(raw[start:start + step])  # releases the GIL: runs beside the header walk
    digest = h.hexdigest()
    if out is not None:
        out.append(digest)
    return digest


def _stat_key(path: Path) -> str:
    st = path.stat()
    ident = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_dev}"
    return hashlib.sha1(ident.encode()).hexdigest()


def _write_atomic(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, target)


def read_info(path: Path | str, cache_dir: Path | str | None = None, *, use_cache: bool = True,
              engine: str = "auto", sha256: bool = True) -> TraceInfo:
    """Metadata of a capture (cached by sha256). Raises InputError for missing/corrupt/unknown files.

    `engine`: "native" streams the file through the ibtrace helper (memory flat in the file size),
    "python" maps it and dissects with numpy (memory grows with it), "auto" = native when a C
    compiler can build the helper, else python. Both give the same TraceInfo.
    `sha256=False` skips hashing the file (the slowest part of a cold read: ~1.5 GB/s here), leaves
    `sha256` empty and writes no cache entry; a cached entry is still used."""
    p = Path(path)
    cdir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    info_dir = cdir / "traceinfo"
    known_sha = None
    if use_cache and p.is_file():
        stat_file = info_dir / "by-stat" / _stat_key(p)
        if stat_file.exists():
            known_sha = stat_file.read_text().strip()
            cached = _load_cached(info_dir / f"{known_sha}.json", p)
            if cached is not None:
                return cached
    info = _scan(p, engine, sha256)
    if use_cache and info.sha256:
        try:
            _write_atomic(info_dir / f"{info.sha256}.json",
                          json.dumps({"schema": INFO_SCHEMA, "info": info.to_dict()}))
            _write_atomic(info_dir / "by-stat" / _stat_key(p), info.sha256)
        except OSError:
            pass  # an unwritable cache only costs speed
    return info


def _scan(p: Path, engine: str, sha256: bool) -> TraceInfo:
    if engine not in ("auto", "native", "python"):
        raise ValueError(f"unknown engine {engine!r}")
    with _opened(p) as (fh, _size):
        head = fh.read(4)
    if detect_format(head) is None:
        raise InputError(f"{p} is not a pcap or pcapng capture (unknown magic number {head.hex()}).",
                         fix=FORMAT_FIX)
    if engine != "python":
        try:
            program = native.program(traceinfo_native.PROGRAM)
        except EnvironmentMissing:  # no C compiler: auto reads with numpy
            if engine == "native":
                raise
        else:
            doc, sha = traceinfo_native.scan(p, program, sha256=sha256)
            return from_native(p, doc, sha)
    from idsbench.traffic.pcapfmt import index_capture

    with open_capture(p) as (buf, raw):
        digests: list[str] = []
        hasher = threading.Thread(target=_hash, args=(raw, digests), daemon=True)
        if sha256:
            hasher.start()
        try:
            idx = index_capture(buf, raw, p)
            info = _summarise(p, buf, idx)
        finally:
            if sha256:
                hasher.join()
    return replace(info, sha256=digests[0] if digests else "")


def from_native(p: Path, doc: traceinfo_native.IbtraceReport, sha256: str) -> TraceInfo:
    """TraceInfo from ibtrace's document (the same rules as `_summarise`)."""
    n, link_type = doc.packets, doc.link_type
    link_name = LINK_NAMES.get(link_type, f"dlt-{link_type}")
    if n == 0:
        return TraceInfo(path=str(p), sha256=sha256, format=doc.format, packets=0, bytes=0, wire_bytes=0,
                         duration_s=0.0, start_unix=0.0, end_unix=0.0, max_frame=0, min_frame=0, avg_frame=0.0,
                         link_type=link_type, link_name=link_name, flows=0)
    flows = {k: v for k, v in doc.flows.items() if v or k != "sctp"}
    by_transport, by_port = traceinfo_native.tallies(doc)
    t0, t1 = doc.min_ns, doc.max_ns
    duration = (t1 - t0) / 1e9
    secs = list(doc.per_second)
    if secs and secs[-1][0] < MAX_DENSE_SECONDS:
        dense = [(t, 0, 0) for t in range(secs[-1][0] + 1)]
        for t, a, b in secs:
            dense[t] = (t, a, b)
        secs = dense
    total = doc.bytes
    span = duration if duration > 0 else 1.0
    return TraceInfo(
        path=str(p), sha256=sha256, format=doc.format, packets=n, bytes=total,
        wire_bytes=doc.wire_bytes, duration_s=round(duration, 9), start_unix=t0 / 1e9, end_unix=t1 / 1e9,
        max_frame=doc.max_frame, min_frame=doc.min_frame, avg_frame=round(total / n, 3),
        link_type=link_type, link_name=link_name, flows=int(sum(flows.values())), flows_by_transport=flows,
        proto_mix={"transport": by_transport, "port": by_port},
        per_second=tuple({"t": t, "packets": a, "bytes": b} for t, a, b in secs),
        mean_pps=round(n / span, 3), peak_pps=float(max(a for _, a, _ in secs)),
        mean_mbps=round(total * 8 / span / 1e6, 6), peak_mbps=round(float(max(b for _, _, b in secs)) * 8 / 1e6, 6),
    )


def _load_cached(file: Path, p: Path) -> TraceInfo | None:
    try:
        doc = json.loads(file.read_text())
        if doc.get("schema") != INFO_SCHEMA:
            return None
        return TraceInfo.from_dict({**doc["info"], "path": str(p)})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _summarise(p: Path, buf: np.ndarray, idx: RecordIndex) -> TraceInfo:
    import numpy as np

    from idsbench.traffic import dissect as dis

    n = idx.packets
    cap = idx.caplen
    if n == 0:
        return TraceInfo(path=str(p), sha256="", format=idx.fmt, packets=0, bytes=0, wire_bytes=0,
                         duration_s=0.0, start_unix=0.0, end_unix=0.0, max_frame=0, min_frame=0,
                         avg_frame=0.0, link_type=idx.link_type,
                         link_name=LINK_NAMES.get(idx.link_type, f"dlt-{idx.link_type}"), flows=0)
    d = dis.dissect(buf, idx)
    flows = dis.count_flows(d)
    by_transport, by_port = dis.proto_mix(d, cap)
    t0, t1 = int(idx.ts_ns.min()), int(idx.ts_ns.max())
    duration = (t1 - t0) / 1e9
    sec = (idx.ts_ns - t0) // 1_000_000_000
    # dense seconds, except for captures spanning absurd times (a bogus timestamp): then only
    # the seconds that hold packets are listed, so memory stays bounded
    secs, inv = np.unique(sec, return_inverse=True)
    pk = np.bincount(inv, minlength=secs.size)
    by = np.bincount(inv, weights=cap, minlength=secs.size).astype(np.int64)
    if secs[-1] < MAX_DENSE_SECONDS:
        dense_pk = np.zeros(int(secs[-1]) + 1, dtype=np.int64)
        dense_by = np.zeros_like(dense_pk)
        dense_pk[secs], dense_by[secs] = pk, by
        secs, pk, by = np.arange(dense_pk.size), dense_pk, dense_by
    per_second = tuple({"t": t, "packets": a, "bytes": b}
                       for t, a, b in zip(secs.tolist(), pk.tolist(), by.tolist()))
    total = int(cap.sum())
    span = duration if duration > 0 else 1.0
    return TraceInfo(
        path=str(p), sha256="", format=idx.fmt, packets=n, bytes=total, wire_bytes=int(idx.wirelen.sum()),
        duration_s=round(duration, 9), start_unix=t0 / 1e9, end_unix=t1 / 1e9,
        max_frame=int(cap.max()), min_frame=int(cap.min()), avg_frame=round(total / n, 3),
        link_type=idx.link_type, link_name=LINK_NAMES.get(idx.link_type, f"dlt-{idx.link_type}"),
        flows=int(sum(flows.values())), flows_by_transport=flows,
        proto_mix={"transport": by_transport, "port": by_port}, per_second=per_second,
        mean_pps=round(n / span, 3), peak_pps=float(pk.max()),
        mean_mbps=round(total * 8 / span / 1e6, 6), peak_mbps=round(float(by.max()) * 8 / 1e6, 6),
    )
