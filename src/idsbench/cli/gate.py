"""`idsbench gate BASE HEAD` and `idsbench gate --bisect GOOD BAD --repo DIR`: what a change costs and
whether any alert changed (idsbench.gate). Exit 0 same or improvement, 1 regression beyond the threshold
or an alert difference, 2 unknown, 3 error."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from idsbench.errors import IdsbenchError, SpecError
from idsbench.gate.plan import DEFAULT_BUDGET_S, DEFAULT_DURATION_S, DEFAULT_THRESHOLD_PCT, GateOptions

EXIT_ERROR = 3


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "gate", help="a per-change gate: two Suricata builds as a duet on your traffic, a verdict and its files",
        description="Build BASE and HEAD (each a Suricata source tree, REPO@REF of a local git repository, or an "
                    "engine name such as 'suricata' or 'suricata@8.0.6'), read every trace offline on both "
                    "(alerts per signature, eve event types), then measure the cost per packet as duets base "
                    "against head with an A/A arm (base against base) in the same rounds, adding samples until "
                    "each trace's CI lies inside ±threshold or clear of it, or the budget ends. Writes "
                    "DIR/gate.json, DIR/gate.md and the campaigns' report.html. Exit 0 same or improvement, "
                    "1 regression or an alert difference, 2 unknown, 3 error.")
    p.add_argument("sides", nargs="*", metavar="SIDE",
                   help="BASE HEAD; with --bisect: GOOD BAD (refs of --repo)")
    p.add_argument("--traffic", action="append", default=[], metavar="PCAP",
                   help="a trace (pcap/pcapng, or builtin:NAME), or a spec file (.toml) whose traffic.traces to take; "
                        "repeat for several (default builtin:mixed)")
    p.add_argument("--rules", action="append", default=[], metavar="R",
                   help="a rule file or directory (repeat); default builtin:events, each side's bundled rules")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD_PCT, metavar="PCT",
                   help=f"a change within ±PCT%% is 'same' (default {DEFAULT_THRESHOLD_PCT:g})")
    p.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S, metavar="S",
                   help=f"stop adding samples once this many seconds passed (default {DEFAULT_BUDGET_S:g})")
    p.add_argument("--rate", type=float, metavar="PPS",
                   help="the load, packets per second (default: probed, 30%% of a CPU at the base's cost)")
    p.add_argument("--duration-s", type=float, default=DEFAULT_DURATION_S, metavar="S",
                   help=f"each sample's replay (default {DEFAULT_DURATION_S:g})")
    p.add_argument("--allow-alert-changes", action="store_true",
                   help="an alert difference is listed but does not fail the gate")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="where the gate writes (a new directory)")
    p.add_argument("--bisect", action="store_true",
                   help="find the first commit after GOOD whose cost differs from GOOD's beyond the threshold")
    p.add_argument("--repo", type=Path, metavar="DIR", help="the git repository --bisect walks")
    p.add_argument("--no-report", action="store_true", help="skip the campaigns' HTML reports")
    p.set_defaults(func=run)


def _options(args: argparse.Namespace) -> GateOptions:
    return GateOptions(traffic=tuple(args.traffic) or ("builtin:mixed",), rules=tuple(args.rules) or ("builtin:events",),
                       threshold_pct=args.threshold, budget_s=args.budget_s, rate_pps=args.rate,
                       duration_s=args.duration_s, allow_alert_changes=args.allow_alert_changes)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    try:
        if len(args.sides) != 2:
            raise SpecError(f"idsbench gate takes two sides, got {len(args.sides)}.",
                            fix="idsbench gate BASE HEAD --out DIR, or idsbench gate --bisect GOOD BAD --repo DIR --out DIR.")
        if args.bisect:
            return _bisect(args)
        return _gate(args)
    except IdsbenchError as exc:
        print(f"idsbench gate: {exc.who}: {exc}", file=sys.stderr)
        print("idsbench gate: no verdict (exit 3)", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("idsbench gate: interrupted; no verdict (exit 3)", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # any other failure is an error too: exit 1 would read as a regression
        import traceback

        traceback.print_exc()
        print(f"idsbench gate: internal error: {type(exc).__name__}: {exc}; no verdict (exit 3)", file=sys.stderr)
        return EXIT_ERROR


def _gate(args: argparse.Namespace) -> int:
    from idsbench.gate.outputs import write_outputs, write_reports
    from idsbench.gate.render import MARKS
    from idsbench.gate.run import run_gate

    result = run_gate(args.sides[0], args.sides[1], args.out, _options(args), log=_say)
    json_path, md_path = write_outputs(args.out.resolve(), result.doc)
    if not args.no_report:
        write_reports(result.campaigns, _say)
    d = result.doc
    floor = f"±{d.noise_floor_pct:.2f}%" if d.noise_floor_pct is not None else "not measured"
    print(f"gate: {MARKS[d.verdict]}: {d.reason}; {len(d.alerts_diff)} alert difference(s), "
          f"{len(d.counters_diff)} counter(s) beyond the A/A arm; noise floor {floor}")
    for t in d.traces:
        eff = f"{t.effect_pct:+.2f}%" if t.effect_pct is not None else "–"
        ci = f" [{(t.ratio_ci[0] - 1) * 100:+.2f}%, {(t.ratio_ci[1] - 1) * 100:+.2f}%]" if t.ratio_ci else ""
        print(f"  {t.trace}: {eff}{ci}, {t.samples} samples: {t.verdict}")
    for a in d.alerts_diff[:20]:
        print(f"  alert sid {a.sid} ({a.trace}): base {a.base}, head {a.head}")
    print(f"gate: {json_path}, {md_path}; exit {d.exit_status}")
    return d.exit_status


def _bisect(args: argparse.Namespace) -> int:
    from idsbench.gate.bisect import bisect
    from idsbench.store.layout import BISECT_FILE
    from idsbench.store.writers import write_bisect

    if args.repo is None:
        raise SpecError("--bisect needs --repo DIR (the git repository whose commits it walks).",
                        fix="idsbench gate --bisect GOOD BAD --repo DIR --out OUT.")
    out = args.out.resolve()
    if out.exists() and any(out.iterdir()):
        raise SpecError(f"{out} is not empty.", fix="give a new --out directory.")
    result = bisect(args.repo.resolve(), args.sides[0], args.sides[1], out, _options(args), _say)
    write_bisect(out, json.loads(json.dumps(asdict(result), default=str)))
    print(f"gate bisect: {result.message}")
    if result.culprit:
        print(f"gate bisect: caveat: {result.caveat}")
    print(f"gate bisect: {out / BISECT_FILE}; exit {result.exit_status}")
    return result.exit_status
