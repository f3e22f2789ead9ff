"""Every environment variable idsbench reads, in one place (docs/architecture.md, "Environment").

- IDSBENCH_CACHE      cache directory: synthesized traces, rewritten copies, rootfs, images, native
                      builds, offline ground truths (default ~/.cache/idsbench)
- IDSBENCH_STATE_DIR  where each run's teardown state file lives (default /run/idsbench)
- IDSBENCH_PREFIX     first letters of every namespace/container/cgroup name a run creates (default ib)
- IDSBENCH_STRICT     1: tests that cannot run (no root, a missing program or data) fail instead of
                      skipping; CI=true implies it
- IDSBENCH_VM_IMAGE   a built VM guest image directory the vm setups boot instead of building their own
                      (the nested lab's outer VM hands its own image to the sensor VMs inside it)
- IDSBENCH_BUILDS_PENDING
                      1: the source builds (Suricata, Snort) are being made in the background; a built
                      engine is refused instead of read half-made or built a second time (`make test` sets
                      it for the tests that run beside the builds)
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_STATE_DIR = Path("/run/idsbench")
DEFAULT_PREFIX = "ib"


def cache_dir() -> Path:
    value = os.environ.get("IDSBENCH_CACHE")
    return Path(value) if value else Path.home() / ".cache" / "idsbench"


def state_dir() -> Path:
    return Path(os.environ.get("IDSBENCH_STATE_DIR") or DEFAULT_STATE_DIR)


def name_prefix() -> str:
    return os.environ.get("IDSBENCH_PREFIX") or DEFAULT_PREFIX


def strict() -> bool:
    """True when a test that cannot run must fail (CI, or IDSBENCH_STRICT=1)."""
    ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    return ci or os.environ.get("IDSBENCH_STRICT", "") == "1"


def builds_pending() -> bool:
    """True while `make test` builds Suricata and Snort beside the tests that do not need them."""
    return os.environ.get("IDSBENCH_BUILDS_PENDING", "") == "1"


def vm_image() -> Path | None:
    value = os.environ.get("IDSBENCH_VM_IMAGE")
    return Path(value) if value else None
