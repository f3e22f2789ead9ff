"""Per-sample overhead of running on hosts over SSH vs on this machine's namespaces.

Run as root: `.venv/bin/python benchmarks/bench_remote.py [--samples N] [--inventory FILE]`.
Without --inventory it brings up a 1-pair lab (`idsbench lab up`, provisioned by Ansible; the lab
image is cached) and takes it down at the end. The same spec (one case: the same trace, rate and
replayers) runs locally and on the pair; per sample it prints the wall time the controller spent:
local = the sample's own start..end; remote = from sending the sample to the summary written
locally (hosts.json `controller_s`: clocks, the sample on the sensor host with the replay on the
sender host, artifacts fetched with checksums, remote files removed). Target: remote - local < 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import finish
from idsbench.run.campaign import run_campaign
from idsbench.spec import spec_from_dict
from idsbench.store.layout import HOSTS_FILE
from idsbench.store.reader import load_campaign

TARGET_S = 3.0


def spec_doc(samples: int, inventory: Path | None) -> dict[str, object]:
    doc: dict[str, object] = {
        "name": "bench-remote", "samples": samples,
        "traffic": {"traces": ["builtin:mixed?packets=3000&rate_pps=1500"], "replayers": [1], "rate": "recorded"},
        "sensor": {"rules": ["builtin:markers"]}, "timing": {"settle_s": 0.5},
    }
    if inventory is not None:
        doc["hosts"] = {"inventory": str(inventory)}
    return doc


def per_sample(campaign_dir: Path, remote: bool) -> list[tuple[float, float]]:
    """(controller wall s, sample wall s on the host that ran it) per ok sample."""
    out = []
    for s in load_campaign(campaign_dir).samples:
        if s.summary.status != "ok":
            print(f"  sample {s.case_id}/s{s.index}: {s.summary.status} ({s.summary.reason})", file=sys.stderr)
            continue
        own = s.summary.finished_unix - s.summary.started_unix
        wall = json.loads((s.path / HOSTS_FILE).read_text())["controller_s"] if remote else own
        out.append((float(wall), own))
    return out


def describe(label: str, rows: list[tuple[float, float]]) -> float:
    walls = [w for w, _ in rows]
    med = statistics.median(walls)
    print(f"{label:<34} n={len(walls)}  median {med:6.2f} s  min {min(walls):6.2f}  max {max(walls):6.2f}   "
          f"[{', '.join(f'{w:.2f}' for w in walls)}]")
    return med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--inventory", type=Path, help="a provisioned inventory with one pair (default: a lab of our own)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_remote: run as root (namespaces, the lab)", file=sys.stderr)
        return 2
    from idsbench.cli.main import main as cli

    with tempfile.TemporaryDirectory(prefix="idsbench-bench-remote-") as tmp:
        work = Path(tmp)
        os.environ.setdefault("IDSBENCH_STATE_DIR", str(work / "state"))
        inventory = args.inventory
        own_lab = inventory is None
        if own_lab:
            inventory = work / "inventory.yml"
            t0 = time.monotonic()
            assert cli(["lab", "up", "--pairs", "1", "--inventory", str(inventory), "--name", "ibbench"]) == 0
            t1 = time.monotonic()
            assert cli(["hosts", "provision", "--inventory", str(inventory)]) == 0
            print(f"lab up {t1 - t0:.1f} s, provision {time.monotonic() - t1:.1f} s (once per lab, not per sample)")
        try:
            local_dir, remote_dir = work / "local", work / "remote"
            t0 = time.monotonic()
            run_campaign(spec_from_dict(spec_doc(args.samples, None)), local_dir)
            t1 = time.monotonic()
            run_campaign(spec_from_dict(spec_doc(args.samples, inventory)), remote_dir)
            t2 = time.monotonic()
            print(f"campaign wall: local {t1 - t0:.1f} s, remote {t2 - t1:.1f} s (remote includes its preflight: "
                  "connect, checks, uploads, config test, probes)")
            local = per_sample(local_dir, remote=False)
            remote = per_sample(remote_dir, remote=True)
            print(f"per sample, {args.samples} samples, builtin:mixed 3000 packets at 1500 pps, 1 replayer:")
            lm = describe("local (namespaces)", local)
            rm = describe("remote (controller wall)", remote)
            describe("  of which on the sensor host", [(own, own) for _, own in remote])
            added = rm - lm
            print(f"added by the remote path: {added:+.2f} s per sample (target < {TARGET_S:.0f} s): "
                  f"{'OK' if added < TARGET_S else 'OVER TARGET'}")
        finally:
            if own_lab:
                cli(["lab", "down", "--name", "ibbench"])
    return finish([] if added < TARGET_S else [f"remote adds {added:+.2f} s per sample (target < {TARGET_S:.0f} s)"])


if __name__ == "__main__":
    sys.exit(main())
