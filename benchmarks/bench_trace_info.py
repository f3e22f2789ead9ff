"""Benchmark `read_info` on a big capture, beside `capinfos` on the same file.

    .venv/bin/python benchmarks/bench_trace_info.py [--size-mb 1100] [--profile mixed] [--keep DIR]

Synthesizes a capture (the `mixed` profile by default) and concatenates copies of it, shifted in
time, into one classic pcap of at least --size-mb MB in a temp dir. Then times: read_info without
the cache (cold: walk, dissect, hash), read_info again with the cache, and `capinfos` (packets,
bytes, duration). Targets: >= 500,000 packets/s and >= 150 MB/s cold.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from idsbench.traffic.pcap import read_info
from idsbench.traffic.pcapfmt import index_capture
from idsbench.traffic.synth import synthesize


def build(out: Path, size_mb: int, profile: str) -> None:
    unit = synthesize(profile, out.with_suffix(".unit.pcap"), packets=200_000, seed=1)
    raw = bytearray(unit.path.read_bytes())
    buf = np.frombuffer(raw, dtype=np.uint8)
    idx = index_capture(buf, memoryview(raw), unit.path)
    sec = np.ndarray((buf.size - 3,), dtype="<u4", buffer=raw, strides=(1,))  # writable, unaligned
    rec = idx.data_off - 16
    base = sec[rec].astype(np.int64)
    step = int(unit.duration_s) + 1
    with open(out, "wb") as fh:
        fh.write(raw[:24])
        k = 0
        while fh.tell() < size_mb * 1_000_000:
            sec[rec] = base + k * step
            fh.write(memoryview(raw)[24:])
            k += 1
    unit.path.unlink()


def timed(fn):
    t = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1100)
    ap.add_argument("--profile", default="mixed")
    ap.add_argument("--keep", type=Path, help="build the capture in this directory and keep it")
    args = ap.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="idsbench-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    pcap = workdir / "big.pcap"
    try:
        if not pcap.exists():
            _, t_build = timed(lambda: build(pcap, args.size_mb, args.profile))
            print(f"built {pcap} in {t_build:.1f} s")
        size = pcap.stat().st_size
        pcap.read_bytes()  # warm the page cache so both tools read from memory
        cache = workdir / "cache"
        info, t_cold = timed(lambda: read_info(pcap, cache_dir=cache, use_cache=False))
        _, t_write = timed(lambda: read_info(pcap, cache_dir=cache))
        _, t_warm = timed(lambda: read_info(pcap, cache_dir=cache))
        print(f"capture: {info.packets:,} packets, {size / 1e6:,.0f} MB, {info.duration_s:.1f} s, "
              f"{info.flows:,} flows, avg frame {info.avg_frame:.0f} B")
        print(f"read_info (cold)   {t_cold:7.2f} s  {info.packets / t_cold:>12,.0f} packets/s  "
              f"{size / t_cold / 1e6:8,.0f} MB/s")
        print(f"read_info (cached) {t_warm:7.4f} s  (first cached call {t_write:.2f} s)")
        if shutil.which("capinfos"):
            proc, t_cap = timed(lambda: subprocess.run(
                ["capinfos", "-M", "-T", "-r", "-c", "-d", "-u", str(pcap)], capture_output=True, text=True))
            fields = proc.stdout.strip().split("\t")
            print(f"capinfos           {t_cap:7.2f} s  {info.packets / t_cap:>12,.0f} packets/s  "
                  f"{size / t_cap / 1e6:8,.0f} MB/s")
            agree = (int(fields[1]), int(fields[2])) == (info.packets, info.bytes) and \
                abs(float(fields[3]) - info.duration_s) < 1e-5
            print(f"capinfos agrees on packets, bytes, duration: {agree}")
        else:
            print("capinfos not installed: no comparison")
        ok = info.packets / t_cold >= 500_000 and size / t_cold / 1e6 >= 150
        print(f"targets (>= 500,000 packets/s and >= 150 MB/s): {'met' if ok else 'NOT met'}")
        return 0 if ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
