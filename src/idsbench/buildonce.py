"""A file in a cache built once per machine: callers that race wait on the cache folder's lock file, and
the file appears whole (built under a temporary name, then renamed). A leaf (standard library only): the
native helpers (idsbench.native) and Suricata's eBPF programs (bypass/suricata.py) are built with it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """`target`, made by `build(tmp)` (which writes the file `tmp` or raises) when it is not there yet."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():  # another caller built it while this one waited
            return target
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        try:
            build(tmp)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target
