"""Benchmark `idsbench trend` over a large result index.

    .venv/bin/python benchmarks/bench_trend.py [--campaigns 500] [--cases 4] [--keep DIR]

Writes an index of N synthetic campaigns (rows as `idsbench index` stores them: 4 cases each, 6
samples per case, the sensor's CPU stepping up 10% at campaign 300 of case r1 where a rule file is
added), then times `trend` for one case (every trend metric, change detection, what changed, JSON):
in process and as the command a user runs (best of 3, wall and CPU time). Target: the command
answers in under 2 s (wall; on a shared machine its CPU time stands for it, both are printed); the
step is found at campaign 300 and nowhere else.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import finish
from idsbench.analysis.trend import TREND_METRICS, build_series
from idsbench.analysis.trend_load import from_index
from idsbench.report.trend_out import to_json
from idsbench.store.casekey import CaseKey
from idsbench.store.index import _insert, connect
from idsbench.store.index_rows import CAMPAIGN_COLUMNS, CASE_COLUMNS
from idsbench.store.schema import CASE_METRICS, CaseParams, CaseResult

TARGET_S = 2.0
T0 = 1_700_000_000.0


def _case(rng: random.Random, i: int, replayers: int) -> tuple[CaseResult, CaseKey]:
    step = 1.10 if replayers == 1 and i >= 300 else 1.0
    values = {m: tuple(40.0 * replayers * step * (1 + rng.gauss(0, 0.01)) for _ in range(6)) if m == "sensor_cpu_pct"
              else tuple(float(20_000 * replayers) for _ in range(6)) if m.endswith("_pkts")
              else tuple(0.0 for _ in range(6)) for m in CASE_METRICS}
    medians = {m: sorted(v)[3] for m, v in values.items()}
    cis = {m: (min(v), max(v)) for m, v in values.items()}
    params = CaseParams(trace="builtin:mixed", replayers=replayers, rate="recorded", cpus=1.0, memory="2g")
    result = CaseResult(case=f"mixed-baremetal-r{replayers}", params=params, samples=6, medians=medians, cis=cis,
                        ci_level=0.97, values=values)
    key = CaseKey(engine="suricata", build="7.0.10/abc", rules_digest="r2" if step > 1 else "r1",
                  rules_count="767" if step > 1 else "367", config_digest="default", set_digest="none",
                  setup="baremetal", cpus="1.0", memory="2g", trace_sha256="ab" * 32,
                  load=f"recorded x{replayers} loops=1 duration=None flows=distinct sender=native", host_digest="h1")
    return result, key


def write_index(root: Path, campaigns: int, cases: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    series = ""
    with connect(root) as con:
        camp_rows, case_rows = [], []
        for i in range(campaigns):
            cid = f"nightly/{i:04d}"
            rules = [{"path": "/etc/suricata/rules/app.rules", "sha256": "11" * 32}]
            if i >= 300:
                rules.append({"path": "/data/costly.rules", "sha256": "22" * 32})
            inputs = {"rules": rules, "rule_load": {"suricata": {"sets": [{"source": r["path"], "rules": 400}
                                                                           for r in rules]}}}
            row = {c: None for c in CAMPAIGN_COLUMNS}
            row.update({"campaign_id": cid, "name": "nightly", "path": cid, "created_unix": T0 + 86400 * i,
                        "created": T0 + 86400 * i, "spec": json.dumps({"name": "nightly"}),
                        "environment": json.dumps({"engines": {"suricata": {"version": "7.0.10"}}}), "warnings": [],
                        "inputs": json.dumps(inputs), "probe": "null", "n_cases": cases, "n_samples": 6 * cases})
            camp_rows.append(row)
            for ordinal in range(cases):
                result, key = _case(rng, i, ordinal + 1)
                rec = {c: None for c in CASE_COLUMNS}
                rec.update({"campaign_id": cid, "campaign": "nightly", "ordinal": ordinal, "case": result.case,
                            "replayers": ordinal + 1, "labels": [], "warnings": [], "row": result.model_dump_json(),
                            "key_id": key.key_id, "series_id": key.series_id, "key": json.dumps(key.fields())})
                case_rows.append(rec)
                if ordinal == 0:
                    series = key.series_id
        _insert(con, "campaigns", camp_rows)
        _insert(con, "cases", case_rows)
    return series


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--campaigns", type=int, default=500)
    ap.add_argument("--cases", type=int, default=4)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    misses: list[str] = []
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-trend-") as tmp:
        root = (args.keep or Path(tmp)) / "results"
        t = time.perf_counter()
        series_id = write_index(root, args.campaigns, args.cases)
        print(f"index of {args.campaigns} campaigns × {args.cases} cases written in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        cases, explain = from_index(root, series_id)
        series = build_series(cases, TREND_METRICS, explain=explain)
        text = to_json(series)
        inproc = time.perf_counter() - t
        walls, cpus = [], []
        for _ in range(3):  # the best of three: a shared machine's neighbours only add to the wall time
            before = os.times()
            t = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "idsbench.cli.main", "trend", "--index", str(root),
                                   "--series", series_id, "--format", "json"], capture_output=True, text=True,
                                  timeout=300)
            walls.append(time.perf_counter() - t)
            after = os.times()
            cpus.append(after.children_user + after.children_system - before.children_user - before.children_system)
        command, cpu_s = min(walls), min(cpus)
        if done.returncode != 0:
            misses.append(f"trend failed: {done.stderr[-500:]}")
            return finish(misses)
        doc = json.loads(done.stdout)
        cpu = next(s for s in doc if s["metric"] == "sensor_cpu_pct" and s["key"]["case"].endswith("r1"))
        changes = [(c["at"], c["kind"], round(c["size_pct"], 1)) for c in cpu["changes"]]
        print(f"trend of one case ({len(cpu['points'])} points, {len(series)} metric series, {len(text) // 1024} KiB "
              f"JSON): in process {inproc:.2f} s; `idsbench trend --series` {command:.2f} s wall, {cpu_s:.2f} s CPU "
              f"(best of 3)   (target < {TARGET_S:.0f} s)")
        print(f"changes of sensor_cpu_pct: {changes}; what changed: {cpu['changes'][0]['what_changed'] if changes else []}")
        if min(command, cpu_s) >= TARGET_S:  # wall on an idle machine; CPU time when neighbours load it
            misses.append(f"trend of one case over {args.campaigns} campaigns took {command:.2f} s wall, {cpu_s:.2f} s "
                          f"CPU (target < {TARGET_S} s)")
        if [c[:2] for c in changes] != [("nightly/0300", "regression")]:
            misses.append(f"expected one regression at nightly/0300, found {changes}")
    return finish(misses)


if __name__ == "__main__":
    sys.exit(main())
