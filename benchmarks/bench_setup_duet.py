"""The studies' comparisons as duets (issue 42), measured against their targets.

Run as root: `.venv/bin/python benchmarks/bench_setup_duet.py [--part all|aa|precision|matrix|capture]`.
Each part prints its figures beside the targets (the machine is shared: the load average is printed too):

- aa: A/A duets in baremetal, container and container-vtap, 6 samples each, at a lossless load. Targets:
  every `duet_ratio_ci` within [0.99, 1.01], every sample exact on both sides. Also: each CPU's softirq
  time over the samples' spans (does /proc/stat's softirq column move on this kernel, with
  CONFIG_IRQ_TIME_ACCOUNTING off?) and `duet_unattributed_us_per_pkt`.
- precision: an A/A duet at 8k pps with `[duet] precision = 0.01`. Targets: a CI within [0.99, 1.01] (or
  the plan says in advance that the budget cannot), in the time the plan printed ± 20%.
- matrix: `kinds = [baremetal, container, container-vtap]` x `replayers = [1, 2]`, one campaign with
  `precision = 0.01`. Targets: four pair rows, every side exact, each ratio's CI no wider than 2% of the
  ratio, the campaign <= 15 min. Beside it: the sequential single-mode answer of the same budget (the
  six cases one after another in interleaved rounds, as many samples as fit): each ratio's CI width.
- capture: Suricata's af-packet (v3), af-packet-v2 and pcap as the side axis. Targets: two pairs, every
  sample exact, each with its CI.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from common import finish
from idsbench import settings
from idsbench.analysis import case_table
from idsbench.analysis.duet import DuetResult, duet_results, pair_row
from idsbench.analysis.effect import effect
from idsbench.dispatch import run_campaign
from idsbench.report import duet_out, export
from idsbench.run.duet.campaign import run_duet_campaign
from idsbench.spec import spec_from_dict
from idsbench.store.duet import duet_samples, read_plan
from idsbench.store.reader import load_campaign

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TRACE = SHARED / "pcaps" / "sv_base64-decode-5885.pcap"
PREFIX = "ibks"
KINDS = ["baremetal", "container", "container-vtap"]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f}"


def doc(name: str, args: argparse.Namespace, *, pps: float, replayers: list[int] | None = None,
        samples: int = 6, **extra: object) -> dict[str, object]:
    base: dict[str, object] = {
        "name": name, "mode": "duet", "samples": samples, "timing": {"settle_s": 0.3},
        "traffic": {"traces": [str(args.trace)], "rate": {"pps": pps}, "duration_s": args.duration,
                    "replayers": replayers or [1], "sender": "native"},
        "sensor": {"ground_truth": False, "set": {"af-packet.0.threads": 1, "af-packet.0.ring-size": 16384}},
        "setup": {"kinds": ["baremetal"], "runtime": "podman"}}
    for key, value in extra.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) and isinstance(base.get(key), dict) else value  # type: ignore[dict-item]
    return base


def run(out: Path, spec_doc: dict[str, object]) -> tuple[list[DuetResult], float]:
    t0 = time.monotonic()
    run_duet_campaign(spec_from_dict(spec_doc), out, state_dir=settings.state_dir(), cache_dir=settings.cache_dir(),
                      name_prefix=PREFIX)
    return duet_results(load_campaign(out)), time.monotonic() - t0


def show(results: list[DuetResult]) -> None:
    print(f"  {'pair':<22} {'b vs ref':<28} {'cell':<14} {'ratio':>7} {'CI':>19} {'width %':>8} {'exact':>6} "
          f"{'Δloss pp':>9} {'mem':>6} {'unattr us':>9} verdict")
    for r in results:
        row = pair_row(r)
        ci = r.ratio_ci
        width = (ci[1] - ci[0]) / r.ratio * 100 if ci and r.ratio else float("nan")
        mem = row["duet_mem_ratio"]
        un = row["duet_unattributed_us_per_pkt"]
        print(f"  {r.pair_id:<22} {f'{r.b_value} vs {r.ref}':<28} {duet_out.cell_label(r.cell):<14} "
              f"{r.ratio or float('nan'):7.4f} {f'[{ci[0]:.4f}, {ci[1]:.4f}]' if ci else '–':>19} {width:8.2f} "
              f"{f'{r.exact}/{len(r.samples)}':>6} {row['duet_loss_diff_pp'] if row['duet_loss_diff_pp'] is not None else '–':>9} "
              f"{f'{mem:.3f}' if isinstance(mem, float) else '–':>6} {f'{un:.3f}' if isinstance(un, float) else '–':>9} "
              f"{r.verdict}")


def softirq_lines(out: Path) -> list[str]:
    """Each sample's per-CPU softirq seconds over its span and the packets sent (does the column move?)."""
    lines = []
    for pair_id, records in duet_samples(out).items():
        for rec in records:
            a = rec.side("a")
            lines.append(f"    {pair_id}/s{rec.sample}: softirq per CPU {rec.softirq_s} s over "
                         f"{(rec.span_end_unix or 0) - (rec.span_start_unix or 0):.1f} s, {a.sent_pkts if a else 0:,} "
                         f"packets; isolation CPU a {a.isolation_cpu_s if a else None} s, "
                         f"b {s.isolation_cpu_s if (s := rec.side('b')) else None} s")
    return lines


def part_aa(args: argparse.Namespace, tmp: Path) -> list[str]:
    print(f"\n== A/A per setup ({load()}): 6 samples of {args.duration:g} s at {args.pps:g} pps, {args.trace.name}")
    misses = []
    for kind in args.kinds:
        results, wall = run(tmp / f"aa-{kind}", doc(f"aa-{kind}", args, pps=args.pps, setup={"kinds": [kind]}))
        (r,) = results
        print(f" {kind} ({wall:.0f} s):")
        show(results)
        for line in softirq_lines(tmp / f"aa-{kind}")[:6]:
            print(line)
        ci = r.ratio_ci
        if ci is None or ci[0] < 0.99 or ci[1] > 1.01:
            misses.append(f"A/A {kind}: duet_ratio_ci {ci} (target within [0.99, 1.01])")
        if r.exact != len(r.samples):
            misses.append(f"A/A {kind}: {r.exact}/{len(r.samples)} samples exact")
    return misses


def part_precision(args: argparse.Namespace, tmp: Path) -> list[str]:
    print(f"\n== precision 1% at 8k pps ({load()}): A/A bare metal, budget {args.budget:g} s")
    out = tmp / "precision"
    spec_doc = doc("precision", args, pps=8000, duet={"precision": 0.01, "budget_s": args.budget})
    t0 = time.time()
    results, wall = run(out, spec_doc)
    plan = read_plan(out)
    (r,) = results
    show(results)
    misses = []
    if plan is None:
        return ["precision: no plan written"]
    for line in plan.lines:
        print(f"  printed: {line}")
    actual = time.time() - plan.planned_unix
    print(f"  calibration {plan.calibration_s:.0f} s; planned samples {plan.total_s:.0f} s printed, {actual:.0f} s "
          f"taken ({(actual / plan.total_s - 1) * 100:+.1f}%); campaign {wall:.0f} s in all (started {t0:.0f})")
    print(f"  samples {r.n}, replay {r.replay_s} s each, half-width ±{(r.half_width or 0) * 100:.2f}%")
    ci = r.ratio_ci
    if plan.feasible:
        if ci is None or ci[0] < 0.99 or ci[1] > 1.01:
            misses.append(f"precision: CI {ci} (target within [0.99, 1.01])")
        if abs(actual / plan.total_s - 1) > 0.2:
            misses.append(f"precision: {actual:.0f} s taken, {plan.total_s:.0f} s printed (target ± 20%)")
    else:
        print("  the plan said in advance that the budget cannot")
    return misses


def part_matrix(args: argparse.Namespace, tmp: Path) -> list[str]:
    print(f"\n== setups x load ({load()}): {KINDS} x replayers [1, 2] at {args.matrix_pps:g} pps per replayer, "
          f"precision 1%, budget {args.matrix_budget:g} s")
    out = tmp / "matrix"
    spec_doc = doc("matrix", args, pps=args.matrix_pps, replayers=[1, 2], setup={"kinds": KINDS},
                   duet={"precision": 0.01, "budget_s": args.matrix_budget})
    results, wall = run(out, spec_doc)
    show(results)
    plan = read_plan(out)
    for line in plan.lines if plan else ():
        print(f"  printed: {line}")
    print(export.to_text(duet_out.study_table(results)))
    print(f"  campaign {wall:.0f} s")
    misses = []
    if len(results) != 4:
        misses.append(f"matrix: {len(results)} pair rows (target 4)")
    for r in results:
        ci = r.ratio_ci
        if ci is None or r.ratio is None or (ci[1] - ci[0]) > 0.02 * r.ratio:
            misses.append(f"matrix {r.pair_id} ({r.b_value}, {duet_out.cell_label(r.cell)}): CI {ci} wider than "
                          "2% of the ratio")
        if r.exact != len(r.samples):
            misses.append(f"matrix {r.pair_id}: {r.exact}/{len(r.samples)} exact")
    if wall > 900:
        misses.append(f"matrix: the campaign took {wall:.0f} s (target <= 900)")
    sequential(args, tmp, wall)
    return misses


def sequential(args: argparse.Namespace, tmp: Path, budget_s: float) -> None:
    """The same six cases in single mode, interleaved rounds, as many samples as fit the duet's wall time:
    each container's CPU per packet against bare metal's at the same load (unpaired: compare's effect)."""
    probe = tmp / "seq-probe"
    single = doc("seq-probe", args, pps=args.matrix_pps, replayers=[1], samples=1, setup={"kinds": KINDS})
    single = {k: v for k, v in single.items() if k != "mode"}
    t0 = time.monotonic()
    run_campaign(spec_from_dict(single), probe, state_dir=settings.state_dir(), cache_dir=settings.cache_dir(),
                 name_prefix=PREFIX)
    per_sample = (time.monotonic() - t0) / len(KINDS)
    n = max(2, int(budget_s / (per_sample * 2 * len(KINDS))))
    print(f"\n  sequential single mode, the same budget ({budget_s:.0f} s): ~{per_sample:.0f} s a sample -> {n} "
          f"samples per case, 6 cases")
    out = tmp / "seq"
    full = {**single, "name": "seq", "samples": n, "order": "interleaved",
            "traffic": {**single["traffic"], "replayers": [1, 2]}}  # type: ignore[dict-item]
    t0 = time.monotonic()
    run_campaign(spec_from_dict(full), out, state_dir=settings.state_dir(), cache_dir=settings.cache_dir(),
                 name_prefix=PREFIX)
    wall = time.monotonic() - t0
    rows = {(r.params.setup, r.params.replayers): r for r in case_table(load_campaign(out))}
    for replayers in (1, 2):
        base = rows[("baremetal", replayers)].values.get("sensor_us_per_pkt", ())
        for kind in KINDS[1:]:
            other = rows[(kind, replayers)].values.get("sensor_us_per_pkt", ())
            e = effect(base, other)
            ci = e.effect_ci
            width = f"{ci[1] - ci[0]:.2f} pp" if ci else "–"
            print(f"    {kind} vs baremetal, replayers={replayers}: effect {e.effect_pct:+.2f}% CI "
                  f"{f'[{ci[0]:+.2f}, {ci[1]:+.2f}]' if ci else '–'} (width {width}), verdict {e.verdict}")
    print(f"  sequential campaign {wall:.0f} s")


def part_capture(args: argparse.Namespace, tmp: Path) -> list[str]:
    print(f"\n== capture methods as the side axis ({load()}): af-packet (ref), af-packet-v2, pcap at "
          f"{args.pps:g} pps")
    out = tmp / "capture"
    spec_doc = doc("capture", args, pps=args.pps,
                   sensor={"ground_truth": False, "capture": ["af-packet", "af-packet-v2", "pcap"],
                           "set": {"af-packet.0.threads": 1}})
    results, wall = run(out, spec_doc)
    show(results)
    print(f"  campaign {wall:.0f} s")
    misses = []
    if len(results) != 2:
        misses.append(f"capture: {len(results)} pairs (target 2)")
    for r in results:
        if r.exact != len(r.samples) or r.ratio_ci is None:
            misses.append(f"capture {r.b_value}: {r.exact}/{len(r.samples)} exact, CI {r.ratio_ci}")
    return misses


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="all", choices=("all", "aa", "precision", "matrix", "capture"))
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--pps", type=float, default=50000)
    ap.add_argument("--matrix-pps", type=float, default=25000, help="per replayer in the matrix part")
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--budget", type=float, default=900.0, help="budget_s of the precision part")
    ap.add_argument("--matrix-budget", type=float, default=840.0)
    ap.add_argument("--keep", type=Path, help="keep the campaigns in this directory")
    ap.add_argument("--kinds", nargs="+", default=KINDS, choices=KINDS, help="the setups of the aa part")
    args = ap.parse_args()
    parts = ("aa", "precision", "matrix", "capture") if args.part == "all" else (args.part,)
    misses: list[str] = []
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-setup-duet-") as tmp_name:
        tmp = args.keep or Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        for part in parts:
            misses += {"aa": part_aa, "precision": part_precision, "matrix": part_matrix,
                       "capture": part_capture}[part](args, tmp)
        if args.keep:
            (tmp / "misses.json").write_text(json.dumps(misses))
    return finish(misses)


if __name__ == "__main__":
    sys.exit(main())
