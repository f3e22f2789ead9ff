"""`idsbench run SPEC` (or the short path `idsbench run --trace PCAP …`): run a campaign and write its results
(and the report) to a directory."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from idsbench import quickspec
from idsbench.analysis.warnings import ci_warning
from idsbench.errors import SpecError
from idsbench.spec import Spec, load_spec, spec_from_dict
from idsbench.store.layout import QUICK_SPEC_FILE

SHORT_FLAGS = ("trace", "rules", "engine", "rate", "duet_rules", "samples")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "run", help="run a benchmark campaign from a TOML spec (or from --trace and a few flags)",
        description="Run every case × sample of SPEC on the embedded wire and write the results to DIR. "
                    "Without a spec file, --trace PCAP (and --rules, --engine, --rate, --duet-rules, --samples) "
                    "make one: the same spec, written into the campaign as spec.toml (--print-spec prints it "
                    "and runs nothing), for a spec file of your own.",
    )
    p.add_argument("spec", type=Path, nargs="?", help="experiment spec (TOML), e.g. examples/quick.toml")
    p.add_argument("--out", type=Path, help="campaign directory (default results/<name>-<timestamp>)")
    p.add_argument("--resume", action="store_true",
                   help="complete the campaign in --out, skipping samples that already finished")
    p.add_argument("--require-quiet", action="store_true",
                   help="refuse to start when the host's noise (steal time, a CPU-bound loop's CV, frequency "
                        "changes) is larger than search.precision")
    p.add_argument("--no-report", action="store_true", help="do not write report.html at the end")
    p.add_argument("--ask-become-pass", action="store_true",
                   help="[hosts] specs: prompt for the hosts' sudo password (hosts with ansible_become)")
    short = p.add_argument_group("the short path: a spec made from flags, without a spec file")
    short.add_argument("--trace", action="append", metavar="PCAP",
                       help="a capture to replay (pcap or pcapng; repeat for several: an axis)")
    short.add_argument("--rules", action="append", metavar="FILE",
                       help="a rule file (repeat for several, loaded together; default: the engine's bundled event "
                            "rules, builtin:events)")
    short.add_argument("--engine", action="append", metavar="NAME",
                       help="suricata (the default), snort, capture, or a build such as suricata@8.0.6 (repeat: "
                            "an axis)")
    short.add_argument("--rate", metavar="R",
                       help="recorded (the default: the capture's own timing), topspeed, 2x, 20000pps or 100mbps")
    short.add_argument("--duet-rules", nargs=2, metavar=("A", "B"),
                       help="a duet: two sensors side by side on the same packets, one with rule file A, one with B; "
                            "their CPU per packet judged as a paired ratio")
    short.add_argument("--samples", type=int, metavar="N", help="samples per case (default 6: a 95%% CI of the median)")
    short.add_argument("--print-spec", action="store_true",
                       help="print the spec the flags make (TOML) and run nothing")
    p.set_defaults(func=run)


def _flags_given(args: argparse.Namespace) -> list[str]:
    return ["--" + f.replace("_", "-") for f in SHORT_FLAGS if getattr(args, f) is not None]


def spec_of(args: argparse.Namespace) -> tuple[Spec, str | None]:
    """The spec to run and, for one made from flags, its TOML (None for a spec file); checked before work."""
    given = _flags_given(args)
    if args.spec is not None:
        if given:
            raise SpecError(f"{', '.join(given)} {'makes' if len(given) == 1 else 'make'} a spec; {args.spec} is one "
                            "already: give one of the two.",
                            fix=f"put those settings in {args.spec}, or drop the spec file.")
        if args.print_spec:
            raise SpecError(f"--print-spec prints the spec --trace and its flags make; {args.spec} is a spec already.",
                            fix=f"read {args.spec}, or drop it and give --trace.")
        return load_spec(args.spec), None
    if args.trace is None:
        if given or args.print_spec:
            raise SpecError(f"{', '.join(given) or '--print-spec'} without --trace: the short path starts from a "
                            "capture.", fix="add --trace my.pcap, or give a spec file.")
        raise SpecError("give a spec file, or a capture with --trace.",
                        fix="e.g. `idsbench run examples/quick.toml`, or `idsbench run --trace my.pcap --rules my.rules "
                            "--out results/mine`.")
    if args.samples is not None and args.samples < 1:
        raise SpecError(f"--samples {args.samples}: a case needs at least one sample.",
                        fix="give --samples 6 (95% CIs of the medians) or more; 1 for a first look.")
    flags = quickspec.QuickFlags(traces=tuple(args.trace), rules=tuple(args.rules or ()),
                                 engines=tuple(args.engine or ()), rate=args.rate,
                                 duet_rules=tuple(args.duet_rules) if args.duet_rules else None, samples=args.samples)
    doc = quickspec.spec_doc(flags, Path.cwd())
    spec = spec_from_dict(doc, source="the spec --trace and its flags make", base_dir=Path.cwd())
    typed = [a for a in sys.argv[2:] if a != "--print-spec"]
    command = " ".join(["idsbench run", *typed]) if sys.argv[1:2] == ["run"] else "idsbench run --trace …"
    return spec, quickspec.to_toml(doc, comment=f"made by: {command}\nrun it again with: idsbench run spec.toml")


def run(args: argparse.Namespace) -> int:
    spec, toml = spec_of(args)
    if args.print_spec:
        sys.stdout.write(toml or "")
        return 0
    if args.resume and not args.out:
        print("idsbench: --resume needs --out DIR (the campaign to complete)", file=sys.stderr)
        return 2
    from idsbench.dispatch import run_campaign  # heavy imports only when running

    out = args.out or Path("results") / f"{spec.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if (warning := ci_warning(spec.samples)) is not None:
        print(f"idsbench: warning: {warning}", file=sys.stderr)
    if toml is not None:
        _keep_spec(out, toml)
    password = None
    if args.ask_become_pass:
        import getpass

        password = getpass.getpass("BECOME (sudo) password: ")
    result = run_campaign(spec, out, resume=args.resume, become_password=password, require_quiet=args.require_quiet)
    print(f"campaign: {out} ({result.ran} samples run, {result.skipped} already complete)")
    if toml is not None:
        print(f"spec: {out / QUICK_SPEC_FILE} (run it again with `idsbench run {out / QUICK_SPEC_FILE}`)")
    for line in result.failed:
        print(f"  failed: {line}")
    for line in result.warnings[:20]:
        print(f"  warning: {line}")
    if len(result.warnings) > 20:
        print(f"  … {len(result.warnings) - 20} more warnings in the sample summaries")
    if not args.no_report:
        from idsbench.report import write_report

        print(f"report: {write_report(out)}")
    return 0 if not result.failed else 1


def _keep_spec(out: Path, toml: str) -> None:
    """spec.toml in the campaign: the spec the flags made (kept as first written when resumed)."""
    from idsbench.store.writers import write_quick_spec

    if not (out / QUICK_SPEC_FILE).exists():
        write_quick_spec(out, toml)
