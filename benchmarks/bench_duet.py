"""Duet mode against the sequential methods, for the same wall-time budget (issue 29).

Run as root: `.venv/bin/python benchmarks/bench_duet.py [--part all|mirror|placement|aa|diff|engines]
[--reps N] [--samples N]`. Every part prints its figures beside the references:

- mirror: what copying the wire costs and who pays it — the sender's cgroup CPU per packet at top speed
  (where the NET_RX softirq of the copies is charged on this kernel), each CPU's softirq ticks and NET_RX
  softirq count, through one veth, the eBPF hub (random copy order), tc mirred and the bridge hub; and
  exactness (every frame on both ends).
- placement: an A/A duet (6 samples) with both sensors sharing CPU 1 (sender on CPU 0)
  and with one CPU each (sender floating): the ratio's CI width decides `duet_place.TWO_CPU_DEFAULT`.
- aa: an A/A pair, `--reps` repetitions of three methods with the same wall-time budget: sequential
  unpaired (two identical cases one after the other, `compare`'s effect), sequential interleaved-paired
  (per-round ratios b/a, their median and its CI) and the duet (per-sample ratios): CI width of the ratio,
  and how often each declares a difference. Targets: the duet's CI within [0.98, 1.02], verdict "same",
  every sample exact on both sides.
- diff: side b with an added rule file of content-less PCRE rules (`--costly` rules, sized to cost 5–10%
  more CPU per packet): the same three methods. Targets: duet verdict "higher" with its CI above 1.0,
  the duet campaign <= 5 minutes.
- engines: `engine = ["suricata", "suricata@8.0.6"]` as a duet: both exact, their ratio with its CI.

The sides' per-sample cost is the duet's (CPU over the common span, nothing subtracted); the sequential
methods use the single sample's `sensor_us_per_pkt`. The machine is shared with other work: the load
average at each part's start is printed with its figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common import finish
from idsbench import settings
from idsbench.analysis import case_table
from idsbench.analysis.duet import duet_results, ratio_effect
from idsbench.analysis.effect import Effect, effect
from idsbench.dispatch import run_campaign
from idsbench.infra import cgroups
from idsbench.proc import Supervisor
from idsbench.run.drain import iface_counters
from idsbench.run.duet.campaign import run_duet_campaign
from idsbench.run.duet.session import DuetDeps
from idsbench.spec import Rate, spec_from_dict
from idsbench.store.reader import load_campaign
from idsbench.teardown import TeardownStack
from idsbench.traffic.pcap import read_info
from idsbench.traffic.sender import ReplayJob, get_sender, run_senders
from idsbench.wire.mirror import MirrorWire
from idsbench.wire.netns import NamespaceWire

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TRACE = SHARED / "pcaps" / "sv_base64-decode-5885.pcap"
PREFIX = "ibkb"


@dataclass
class Outcome:
    method: str
    wall_s: float
    ratios: list[float]
    effect: Effect
    exact: str = ""

    @property
    def width_pct(self) -> float | None:
        ci = self.effect.effect_ci
        return None if ci is None else ci[1] - ci[0]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f}"


def base_doc(args: argparse.Namespace, name: str, samples: int) -> dict[str, object]:
    return {"name": name, "samples": samples, "timing": {"settle_s": 0.3},
            "traffic": {"traces": [str(args.trace)], "rate": {"pps": args.pps}, "duration_s": args.duration},
            "sensor": {"ground_truth": False, "set": {"af-packet.0.threads": 1, "af-packet.0.ring-size": 16384}}}


def with_rules(doc: dict[str, object], rules: dict[str, list[str]]) -> dict[str, object]:
    return {**doc, "sensor": {**doc["sensor"], "rules": rules}}  # type: ignore[dict-item]


def run_duet(args: argparse.Namespace, out: Path, rules: dict[str, list[str]] | None = None,
             placement: str | None = None, engines: list[str] | None = None) -> Outcome:
    doc = {**base_doc(args, out.name, args.samples), "mode": "duet"}
    if rules:
        doc = with_rules(doc, rules)
    if engines:
        doc["sensor"] = {**doc["sensor"], "engine": engines, "ready_timeout_s": 300}  # type: ignore[dict-item]
    t0 = time.monotonic()
    run_duet_campaign(spec_from_dict(doc), out, state_dir=settings.state_dir(), cache_dir=settings.cache_dir(),
                      name_prefix=PREFIX, deps=DuetDeps(placement=placement))  # type: ignore[arg-type]
    wall = time.monotonic() - t0
    (r,) = duet_results(load_campaign(out))
    ratios = [s.ratio for s in r.samples if s.ratio is not None]
    return Outcome("duet", wall, ratios, r.effect, f"{r.exact}/{len(r.samples)} exact")


def run_sequential(args: argparse.Namespace, out: Path, rules: dict[str, list[str]], samples: int,
                   order: str) -> tuple[Outcome, Outcome | None]:
    """Two cases in single mode: unpaired effect, and (interleaved) the per-round paired ratios."""
    doc = with_rules({**base_doc(args, out.name, samples), "order": order}, rules)
    t0 = time.monotonic()
    run_campaign(spec_from_dict(doc), out, state_dir=settings.state_dir(), cache_dir=settings.cache_dir(),
                 name_prefix=PREFIX)
    wall = time.monotonic() - t0
    campaign = load_campaign(out)
    rows = {r.params.rules: r for r in case_table(campaign)}
    a, b = (rows[name] for name in rules)
    va, vb = a.values.get("sensor_us_per_pkt", ()), b.values.get("sensor_us_per_pkt", ())
    unpaired_effect = effect(va, vb)
    exact = f"{a.samples + b.samples}/{2 * samples} ok"
    unpaired = Outcome(f"sequential {order}", wall, [], unpaired_effect, exact)
    if order != "interleaved":
        return unpaired, None
    per: dict[tuple[str, int], float] = {(s.case_id, s.index): s.summary.cost.us_per_pkt for s in campaign.samples
                                         if s.status == "ok" and s.summary.cost is not None
                                         and s.summary.cost.us_per_pkt is not None}
    ratios = [per[(b.case, k)] / per[(a.case, k)] for k in range(samples)
              if (a.case, k) in per and (b.case, k) in per]
    return unpaired, Outcome("interleaved paired", wall, ratios, ratio_effect(ratios), exact)


def show(outcomes: list[Outcome]) -> None:
    print(f"  {'method':<24} {'wall s':>7} {'effect %':>9} {'CI %':>18} {'width pp':>9} {'verdict':<13} samples")
    for o in outcomes:
        e = o.effect
        ci = f"[{e.effect_ci[0]:+.2f}, {e.effect_ci[1]:+.2f}]" if e.effect_ci else "–"
        width = f"{o.width_pct:.2f}" if o.width_pct is not None else "–"
        eff = f"{e.effect_pct:+.2f}" if e.effect_pct is not None else "–"
        print(f"  {o.method:<24} {o.wall_s:7.0f} {eff:>9} {ci:>18} {width:>9} {e.verdict:<13} {o.exact}")


def budget_samples(args: argparse.Namespace, tmp: Path, duet_wall: float) -> int:
    """Samples per case that give two single-mode cases the duet's wall time (from a 2-sample calibration)."""
    if args.seq_samples:
        return int(args.seq_samples)
    rules = {"a": ["builtin:events"], "b": ["builtin:events"]}
    o, _ = run_sequential(args, tmp / "calibrate", rules, 1, "cases")
    per_sample = o.wall_s / 2
    k = max(2, round(duet_wall / (2 * per_sample)))
    print(f"  budget: duet {duet_wall:.0f} s; a single sample ~{per_sample:.1f} s -> {k} samples per case")
    return k


def part_methods(args: argparse.Namespace, tmp: Path, rules: dict[str, list[str]], label: str,
                 reps: int) -> list[list[Outcome]]:
    print(f"\n== {label} ({load()}): {args.samples} duet samples of {args.duration:g} s at {args.pps} pps, "
          f"{args.trace.name}")
    k = None
    out = []
    for rep in range(reps):
        duet = run_duet(args, tmp / f"{label}-duet{rep}", rules)
        k = k or budget_samples(args, tmp, duet.wall_s)
        unpaired, _ = run_sequential(args, tmp / f"{label}-seq{rep}", rules, k, "cases")
        _, paired = run_sequential(args, tmp / f"{label}-int{rep}", rules, k, "interleaved")
        assert paired is not None
        print(f" repetition {rep + 1}/{reps} ({load()}):")
        show([unpaired, paired, duet])
        out.append([unpaired, paired, duet])
    print(f" over {reps} repetitions:")
    for i, name in enumerate(("sequential unpaired", "interleaved paired", "duet")):
        widths = sorted(w for o in out if (w := o[i].width_pct) is not None)
        declared = sum(o[i].effect.verdict in ("higher", "lower") for o in out)
        verdicts = ", ".join(o[i].effect.verdict for o in out)
        print(f"  {name:<22} CI width median {widths[len(widths) // 2] if widths else float('nan'):.2f} pp, "
              f"a difference declared {declared}/{reps} ({verdicts}), wall {sum(o[i].wall_s for o in out) / reps:.0f} s")
    return out


def costly_rules(path: Path, count: int) -> Path:
    """Content-less PCRE rules (tests/integration/conftest.py `costly_rules`), `count` of them."""
    path.write_text("".join(
        f'alert tcp any any -> any any (msg:"idsbench cost {i}"; pcre:"/[a-z]{{3}}[0-9]{{2}}q{i}x/i"; '
        f"sid:{1999000 + i}; rev:1;)\n" for i in range(count)))
    return path


def part_mirror(args: argparse.Namespace) -> list[str]:
    """Sender CPU per packet and each CPU's softirq time through each wire (no sensor)."""
    print(f"\n== mirror cost ({load()}): ~{args.mirror_pkts} packets at top speed from CPU 0 (no sensor)")
    misses = []
    for method in ("single", "bpf", "mirred", "bridge"):
        with TeardownStack(settings.state_dir()) as stack:
            sup = Supervisor(stack)
            if method == "single":
                w = NamespaceWire(sup, prefix=PREFIX, mtu=1500).up()
                ends = [(w.sensor_holder_pid, w.sensor_if)]
                sender_ns, sender_if = w.sender_ns, w.sender_if
            else:
                m = MirrorWire(sup, prefix=PREFIX, mtu=1500, method=method).up()
                ends = [(s.sensor_holder_pid, s.sensor_if) for s in m.slots]
                sender_ns, sender_if = m.sender_ns, m.sender_if
            group = cgroups.create(f"{PREFIX}-mirror-{method}", realtime=True)
            stack.push(cgroups.CgroupResource.of(group))
            before_rx = [rx_pkts(pid, ifname) for pid, ifname in ends]
            soft0, net0 = softirq_jiffies(), net_rx_counts()
            cpu0 = group.cpu_usage_ns()
            info = read_info(args.trace, cache_dir=settings.cache_dir())
            job = ReplayJob(sender_if, (args.trace,), Rate(kind="topspeed"), max(1, args.mirror_pkts // info.packets),
                            None, info.packets, info.duration_s, info.bytes, cpus=(0,))
            run = run_senders(sup, get_sender("native"), job, Path(tempfile.mkdtemp(prefix="ibk-mirror-")),
                              netns=sender_ns, timeout_s=120, cgroup_procs=group.procs_files)
            sent = sum(r.pkts_sent for r in run.results)
            cpu_s = (group.cpu_usage_ns() - cpu0) / 1e9
            soft = [b - a for a, b in zip(soft0, softirq_jiffies())]
            net = [b - a for a, b in zip(net0, net_rx_counts())]
            pps = max((r.pps for r in run.results), default=0.0)
            got = [rx_pkts(pid, ifname) - before for (pid, ifname), before in zip(ends, before_rx)]
        exact = all(g == sent for g in got)
        print(f"  {method:<7} sent {sent:>8,}  received {'/'.join(f'{g:,}' for g in got):<18} "
              f"{pps / 1e3:6.0f}k pps, sender cgroup {cpu_s / sent * 1e6 if sent else 0:6.3f} us/pkt; per CPU: "
              f"softirq ticks {soft}, NET_RX softirqs {net}"
              f"{'' if exact else '  NOT EXACT'}")
        if method in ("bpf", "mirred") and not exact:
            misses.append(f"the {method} hub lost frames ({got} of {sent})")
    return misses


def rx_pkts(pid: int, ifname: str) -> int:
    counters = iface_counters(pid, ifname)
    return counters.rx_pkts + counters.rx_dropped if counters else -1


def net_rx_counts() -> list[int]:
    """Per CPU, how many NET_RX softirqs ran (/proc/softirqs)."""
    for line in Path("/proc/softirqs").read_text().splitlines():
        if line.strip().startswith("NET_RX:"):
            return [int(x) for x in line.split()[1:]]
    return []


def softirq_jiffies() -> list[int]:
    """Per CPU, the softirq column of /proc/stat (USER_HZ ticks)."""
    out = []
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            out.append(int(line.split()[7]))
    return out


def part_placement(args: argparse.Namespace, tmp: Path) -> list[str]:
    print(f"\n== placement on {os.cpu_count()} CPUs ({load()}): A/A duet, {args.samples} samples each")
    for kind in ("shared", "split"):
        o = run_duet(args, tmp / f"place-{kind}", None, placement=kind)
        e = o.effect
        spread = (max(o.ratios) / min(o.ratios) - 1) * 100 if o.ratios else float("nan")
        print(f"  {kind:<7} ratio CI {e.effect_ci} % (width {o.width_pct or float('nan'):.2f} pp), max/min "
              f"{spread:.2f}%, {o.exact}, {o.wall_s:.0f} s; ratios {[round(r, 4) for r in o.ratios]}")
    return []


def part_engines(args: argparse.Namespace, tmp: Path) -> list[str]:
    print(f"\n== engines ({load()}): suricata vs suricata@8.0.6 as a duet")
    o = run_duet(args, tmp / "engines", None, engines=["suricata", "suricata@8.0.6"])
    show([o])
    (r,) = duet_results(load_campaign(tmp / "engines"))
    print(f"  ratio b/a (8.0.6 / installed) {r.ratio} CI {r.ratio_ci}; position effect {r.position}")
    return [] if r.exact == len(r.samples) and r.ratio_ci else [f"engines duet: {r.exact}/{len(r.samples)} exact"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="all", choices=("all", "mirror", "placement", "aa", "diff", "engines"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--diff-reps", type=int, default=3)
    ap.add_argument("--samples", type=int, default=6)
    ap.add_argument("--seq-samples", type=int, default=0, help="samples per case for the sequential methods "
                    "(default: as many as fit in the duet's wall time)")
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--pps", type=int, default=50000)
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--costly", type=int, default=12, help="PCRE rules side b adds in the diff part")
    ap.add_argument("--mirror-pkts", type=int, default=500000)
    ap.add_argument("--keep", type=Path, help="keep the campaigns in this directory (default: a temporary one)")
    args = ap.parse_args()
    misses: list[str] = []
    parts = ("mirror", "placement", "aa", "diff", "engines") if args.part == "all" else (args.part,)
    with tempfile.TemporaryDirectory(prefix="idsbench-bench-duet-") as tmp_name:
        tmp = args.keep or Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        if "mirror" in parts:
            misses += part_mirror(args)
        if "placement" in parts:
            misses += part_placement(args, tmp)
        if "aa" in parts:
            for reps in part_methods(args, tmp, {"a": ["builtin:events"], "b": ["builtin:events"]}, "aa", args.reps):
                duet = reps[2]
                ci = duet.effect.effect_ci
                if ci is None or ci[0] < -2.0 or ci[1] > 2.0 or duet.effect.verdict != "same":
                    misses.append(f"A/A duet: CI {ci} % (target within ±2%), verdict {duet.effect.verdict}")
                if not duet.exact.startswith(f"{args.samples}/"):
                    misses.append(f"A/A duet: {duet.exact}")
        if "diff" in parts:
            costly = costly_rules(tmp / "costly.rules", args.costly)
            rules = {"bundled": ["builtin:events"], "costly": ["builtin:events", str(costly)]}
            for reps in part_methods(args, tmp, rules, "diff", args.diff_reps):
                duet = reps[2]
                ci = duet.effect.effect_ci
                if duet.effect.verdict != "higher" or ci is None or ci[0] <= 0:
                    misses.append(f"known difference: duet verdict {duet.effect.verdict}, CI {ci} %")
                if duet.wall_s > 300:
                    misses.append(f"known difference: the duet campaign took {duet.wall_s:.0f} s (target <= 300)")
        if "engines" in parts:
            misses += part_engines(args, tmp)
    return finish(misses)


if __name__ == "__main__":
    sys.exit(main())
