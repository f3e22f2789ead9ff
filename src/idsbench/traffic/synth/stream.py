"""A pcap written while it is generated: memory bounded by the packets not yet final, not the trace.

The generator adds packets in any order and tells the stream a *watermark*: no packet added later
will be earlier than it. `flush(watermark)` orders the pending packets by (time, order added),
writes every one earlier than the watermark and keeps the rest. Records are assembled and their
IPv4/TCP/UDP/ICMP checksums filled (in C), hashed and written by a pipeline of threads (each
releases the GIL for its heavy part), so generation overlaps with all of it. The file is written to a
temporary name and renamed on `close()`; `discard()` removes it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import queue
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from idsbench.traffic.checksum import fill_ipv4_records

PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)  # LINKTYPE_ETHERNET, µs
FLUSH_PACKETS = 1 << 16  # pending packets that trigger an attempt to flush
FLUSH_BYTES = 24 << 20
CHUNK_BYTES = 8 << 20  # records per write
QUEUE_CHUNKS = 2  # chunks waiting at each writer stage (bounds memory)


Chunk = tuple[bytes, list[bytes], np.ndarray]  # record headers, frames, frame lengths


class _Stage(threading.Thread):
    """One step of the writer pipeline: applies `work` to each item, in order, passing the result on."""

    def __init__(self, name: str, work: Callable[[Any], Any], out: _Stage | None):
        super().__init__(name=name, daemon=True)
        self.work, self.out = work, out
        self.inbox: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_CHUNKS)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while (item := self.inbox.get()) is not None:
                if self.error is None:
                    result = self.work(item)
                    if self.out is not None:
                        self.out.inbox.put(result)
        except BaseException as exc:
            self.error = exc
            while self.inbox.get() is not None:
                pass
        finally:
            if self.out is not None:
                self.out.inbox.put(None)


class _Writer:
    """Chunks go through three threads (each step releases the GIL for its heavy part): records
    assembled and checksummed, then hashed, then written; the order is kept."""

    def __init__(self, path: Path):
        self.fh = open(path, "wb")
        self.digest = hashlib.sha256()

        def hash_it(data: bytes | bytearray) -> bytes | bytearray:
            self.digest.update(data)
            return data

        write = _Stage("pcap-write", self.fh.write, None)
        hasher = _Stage("pcap-hash", hash_it, write)
        self.stages = [_Stage("pcap-records", _assemble, hasher), hasher, write]
        for stage in self.stages:
            stage.start()

    @property
    def error(self) -> BaseException | None:
        return next((s.error for s in self.stages if s.error is not None), None)

    def put(self, chunk: Chunk | bytes) -> None:
        if self.error is not None:
            raise self.error
        self.stages[0].inbox.put(chunk)

    def finish(self) -> str:
        self._stop()
        if self.error is not None:
            raise self.error
        return self.digest.hexdigest()

    def abandon(self) -> None:
        for stage in self.stages:
            stage.error = stage.error or RuntimeError("discarded")
        self._stop()

    def _stop(self) -> None:
        if self.stages[0].is_alive():
            self.stages[0].inbox.put(None)
        for stage in self.stages:
            stage.join()
        self.fh.close()


def _assemble(chunk: Chunk | bytes) -> bytes | bytearray:
    return chunk if isinstance(chunk, bytes) else _records(*chunk)


_M_ARENA_MAX = -8  # glibc mallopt parameter
_one_arena: list[bool] = []


def _single_malloc_arena() -> None:
    """One glibc malloc arena for the process: with one arena per writer thread, memory freed in
    one is not reused by another and the peak RSS grows with the trace (measured: 146 -> 201 MB from
    200k to 800k packets of `mixed`; with one arena 150 -> 158 MB, and less system time)."""
    if _one_arena:
        return
    _one_arena.append(True)
    try:
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 1)
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


class PcapStream:
    def __init__(self, path: Path, start_ns: int):
        _single_malloc_arena()
        self.path = path
        self.tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.start_ns = start_ns
        self.ts: list[int] = []
        self.frames: list[bytes] = []
        self.pending_bytes = 0
        self.next_flush = FLUSH_PACKETS
        self.next_flush_bytes = FLUSH_BYTES
        self.peak_pending_bytes = 0
        self.packets = 0
        self.bytes = 0
        self.min_ts: int | None = None
        self.max_ts: int | None = None
        self.last_written = -(1 << 62)
        self.writer = _Writer(self.tmp)
        self.writer.put(PCAP_HEADER)
        self.sha256: str | None = None

    @property
    def span_ns(self) -> int:
        """Time from the first packet written to the last (0 before any was written)."""
        if self.min_ts is None or self.max_ts is None:
            return 0
        return self.max_ts - self.min_ts

    def add(self, ts: list[int], frames: list[bytes]) -> None:
        self.ts.extend(ts)
        self.frames.extend(frames)

    def add_bytes(self, n: int) -> None:
        """Account for `n` bytes of frames just added (the caller knows it cheaply)."""
        self.pending_bytes += n

    def due(self) -> bool:
        return len(self.frames) >= self.next_flush or self.pending_bytes >= self.next_flush_bytes

    def flush(self, watermark: int) -> None:
        """Write every pending packet earlier than `watermark` (no later packet may precede it)."""
        self.peak_pending_bytes = max(self.peak_pending_bytes, self.pending_bytes)
        n = len(self.frames)
        if n == 0:
            return
        ts = np.asarray(self.ts, dtype=np.int64)
        order = np.argsort(ts, kind="stable")
        k = int(np.searchsorted(ts[order], watermark, side="left"))
        if k:
            out = order[:k]
            out_ts = ts[out]
            if int(out_ts[0]) < self.last_written:
                raise AssertionError("a packet earlier than the last watermark was added")
            self._write(out_ts, [self.frames[i] for i in out.tolist()])
            keep = np.sort(order[k:])  # back in the order added: ties keep resolving by it
            keep_l = keep.tolist()
            self.ts = ts[keep].tolist()
            self.frames = [self.frames[i] for i in keep_l]
            self.pending_bytes = sum(map(len, self.frames))
            self.last_written = int(out_ts[-1])
        # what could not be written yet (flows still running) raises the next thresholds, so the
        # pending packets are sorted O(log) times per packet, not once per flow
        self.next_flush = max(FLUSH_PACKETS, 2 * len(self.frames))
        self.next_flush_bytes = self.pending_bytes + max(FLUSH_BYTES, self.pending_bytes // 2)

    def _write(self, ts: np.ndarray, frames: list[bytes]) -> None:
        lens = np.fromiter(map(len, frames), dtype=np.int64, count=len(frames))
        self.packets += len(frames)
        self.bytes += int(lens.sum())
        lo_ts, hi_ts = int(ts[0]), int(ts[-1])
        self.min_ts = lo_ts if self.min_ts is None else min(self.min_ts, lo_ts)
        self.max_ts = hi_ts if self.max_ts is None else max(self.max_ts, hi_ts)
        abs_ts = ts + self.start_ns
        hdr = np.empty((len(frames), 4), dtype="<u4")
        hdr[:, 0] = abs_ts // 1_000_000_000
        hdr[:, 1] = (abs_ts % 1_000_000_000) // 1_000
        hdr[:, 2] = lens
        hdr[:, 3] = lens
        hdr_bytes = hdr.tobytes()
        ends = np.cumsum(lens + 16)
        lo = 0
        while lo < len(frames):
            base = int(ends[lo - 1]) if lo else 0
            hi = max(int(np.searchsorted(ends, base + CHUNK_BYTES, side="right")), lo + 1)
            self.writer.put((hdr_bytes[16 * lo:16 * hi], frames[lo:hi], lens[lo:hi]))
            lo = hi

    def close(self) -> str:
        """Write what is left, rename the file into place; return its sha256."""
        try:
            self.flush(1 << 62)
            self.sha256 = self.writer.finish()
        except BaseException:
            self.discard()
            raise
        os.replace(self.tmp, self.path)
        return self.sha256

    def discard(self) -> None:
        if not self.writer.fh.closed:
            self.writer.abandon()
        self.tmp.unlink(missing_ok=True)


def _records(hdr_bytes: bytes, frames: list[bytes], lens: np.ndarray) -> bytearray:
    """The records (16-byte header, frame) with their checksums filled."""
    n = len(frames)
    pieces: list[bytes] = [b""] * (2 * n)
    pieces[0::2] = [hdr_bytes[k:k + 16] for k in range(0, 16 * n, 16)]
    pieces[1::2] = frames
    out = bytearray().join(pieces)
    frame_off = 16 * np.arange(1, n + 1, dtype=np.int64) + np.concatenate(([0], np.cumsum(lens)[:-1]))
    fill_ipv4_records(out, frame_off)
    return out
