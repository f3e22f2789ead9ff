"""[profile] with the real perf and Suricata: top functions, per-thread CPU, in the summary and report."""

from __future__ import annotations

import os
import shutil

import pytest

from idsbench.report import write_report
from idsbench.run.campaign import run_campaign
from idsbench.settings import strict
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")


def test_a_profiled_sample_names_suricata_functions_and_threads(tmp_path, state_dir, cache_dir):
    if shutil.which("perf") is None:
        (pytest.fail if strict() else pytest.skip)("perf is not installed (apt-get install linux-perf)")
    spec = spec_from_dict({
        "name": "prof", "samples": 2, "timing": {"settle_s": 1},
        "traffic": {"traces": ["builtin:mixed?packets=40000"], "replayers": [1], "rate": {"pps": 20000}},
        "setup": {"cpus": 1.0}, "profile": {"perf": True, "record_samples": 1}})
    out = tmp_path / "p"
    result = run_campaign(spec, out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    assert result.failed == []
    first, second = sorted(load_campaign(out).samples, key=lambda s: s.index)
    p = first.summary.profile
    assert p is not None and p.recorded and p.event == "cpu-clock" and not p.notes, p
    assert p.functions and any(f.dso == "suricata" for f in p.functions), p.functions
    assert sum(f.self_pct for f in p.functions) > 30  # the top functions hold a good part of the samples
    workers = [t for t in p.threads if t.role == "worker"]
    assert workers and all(t.name.startswith("W#") for t in workers)
    assert any(t.name == "Suricata-Main" for t in p.threads)
    assert sum(t.cpu_s for t in workers) > 0
    assert p.counters.get("task-clock") and p.counters["task-clock"] > 0  # perf stat counted the window
    assert (first.path / "perf.data").is_file() and (first.path / "perf-report.txt").stat().st_size > 0
    # the second sample: perf stat and threads, no perf record
    q = second.summary.profile
    assert q is not None and not q.recorded and not q.functions and q.threads
    assert not (second.path / "perf.data").exists()
    html = write_report(out).read_text()
    assert 'id="profile"' in html and p.functions[0].symbol.replace("&", "&amp;") in html and "W#01" in html
    # no perf process outlived its sample
    mine = [pid for pid in os.listdir("/proc") if pid.isdigit() and _is_perf_in(pid, str(out))]
    assert mine == []


def _is_perf_in(pid: str, out: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return False
    return bool(argv) and argv[0].endswith(b"perf") and any(out.encode() in a for a in argv)
