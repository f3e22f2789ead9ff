"""`idsbench trace info PCAP [--json]`, `idsbench trace synth --profile NAME --out FILE ...` and `idsbench trace
resegment PCAP --mtu N --out FILE`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from idsbench.traffic.pcap import TraceInfo, default_cache_dir, read_info
from idsbench.traffic.synth import PROFILES


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("trace", help="inspect or generate traffic traces",
                                   description="Inspect captures and generate synthetic traffic.")
    sub = parser.add_subparsers(dest="trace_command", metavar="ACTION")
    def usage(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)

    info = sub.add_parser("info", help="what is in a capture (packets, bytes, flows, protocol mix, rate)")
    info.add_argument("pcap", type=Path, help="classic pcap or pcapng file")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.add_argument("--cache-dir", type=Path, default=None,
                      help="cache directory (default $IDSBENCH_CACHE or ~/.cache/idsbench)")
    info.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    info.add_argument("--no-hash", action="store_true",
                      help="skip the file's sha256 (the slowest part on a big capture; nothing is cached)")
    info.set_defaults(func=cmd_info)

    synth = sub.add_parser("synth", help="generate a deterministic capture from a traffic profile")
    synth.add_argument("--profile", required=True, choices=sorted(PROFILES), help="traffic profile")
    synth.add_argument("--out", required=True, type=Path, help="pcap file to write")
    size = synth.add_mutually_exclusive_group()
    size.add_argument("--packets", type=int, help="number of packets (default: rate x duration)")
    size.add_argument("--duration", type=float, help="seconds of traffic (default: the profile's)")
    synth.add_argument("--flows", type=int, help="target number of flows (scales flow sizes)")
    synth.add_argument("--rate", type=float, help="mean packets per second (default: the profile's)")
    synth.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    synth.add_argument("--markers", type=float, default=None,
                       help="share of flows carrying a marker that markers.rules detects (0..1)")
    synth.add_argument("--client-net", default="10.10.0.0/16", help="client address range (CIDR)")
    synth.add_argument("--server-net", default="203.0.113.0/24", help="server address range (CIDR)")
    synth.add_argument("--json", action="store_true", help="print the result as JSON")
    synth.set_defaults(func=cmd_synth)

    reseg = sub.add_parser("resegment", help="split a capture's TCP super-frames (TSO/GRO) to a wire MTU",
                           description="Write the capture with every TCP frame above the MTU split into the "
                                       "segments GSO would send (valid lengths and checksums): a capture with "
                                       "16-64 KB frames then replays at that MTU, which AF_XDP and XDP need "
                                       "(docs/capture.md, 'Large frames').")
    reseg.add_argument("pcap", type=Path, help="classic pcap or pcapng file (Ethernet)")
    reseg.add_argument("--mtu", type=int, default=1500, help="the wire's MTU (default 1500)")
    reseg.add_argument("--out", required=True, type=Path, help="pcap file to write")
    reseg.add_argument("--json", action="store_true", help="print the result as JSON")
    reseg.set_defaults(func=cmd_resegment)


def cmd_info(args: argparse.Namespace) -> int:
    info = read_info(args.pcap, cache_dir=args.cache_dir or default_cache_dir(), use_cache=not args.no_cache,
                     sha256=not args.no_hash)
    if args.json:
        json.dump(info.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_info(info))
    return 0


def render_info(info: TraceInfo) -> str:
    rows = [
        ("file", info.path), ("sha256", info.sha256 or "(not computed)"),
        ("format", f"{info.format}, link type {info.link_type} ({info.link_name})"),
        ("packets", f"{info.packets:,}"), ("bytes (captured)", f"{info.bytes:,}"),
        ("bytes (on the wire)", f"{info.wire_bytes:,}"), ("duration", f"{info.duration_s:.6f} s"),
        ("frame size", f"avg {info.avg_frame:.1f}, min {info.min_frame}, max {info.max_frame} bytes"),
        ("flows", f"{info.flows:,} (" + ", ".join(f"{k} {v:,}" for k, v in info.flows_by_transport.items()) + ")"),
        ("rate", (f"mean {info.mean_pps:,.0f} pkt/s {info.mean_mbps:,.2f} Mbit/s; "
                  f"peak second {info.peak_pps:,.0f} pkt/s {info.peak_mbps:,.2f} Mbit/s")),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    for title, key in (("by transport", "transport"), ("by service port", "port")):
        mix = info.proto_mix.get(key) or {}
        if mix:
            lines.append(f"\n{title}:")
            for name, c in mix.items():
                share = 100.0 * c["packets"] / info.packets if info.packets else 0.0
                lines.append(f"  {name:<12} {c['packets']:>12,} pkts {share:6.2f}%  {c['bytes']:>15,} bytes")
    if info.per_second:
        lines.append("\nper second (packets, bytes):")
        shown = info.per_second if len(info.per_second) <= 20 else (
            *info.per_second[:10], None, *info.per_second[-5:])
        for p in shown:
            lines.append("  ..." if p is None else f"  t={p['t']:>6}  {p['packets']:>10,}  {p['bytes']:>14,}")
    return "\n".join(lines) + "\n"


def cmd_synth(args: argparse.Namespace) -> int:
    from idsbench.traffic.synth import synthesize

    result = synthesize(args.profile, args.out, packets=args.packets, duration_s=args.duration,
                        flows=args.flows, rate_pps=args.rate, seed=args.seed, marker_rate=args.markers,
                        client_net=args.client_net, server_net=args.server_net)
    if args.json:
        json.dump(result.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(
            f"wrote {result.path}: {result.packets:,} packets, {result.bytes:,} bytes, {result.flows:,} flows, "
            f"{result.duration_s:.3f} s, sha256 {result.sha256}\n"
            f"expected marker alerts (markers.rules): {result.markers} "
            f"{ {int(k): v for k, v in result.markers_by_sid.items()} }\n"
            f"ground truth recorded in {result.path}.json\n")
    return 0


def cmd_resegment(args: argparse.Namespace) -> int:
    from idsbench.traffic.resegment import resegment

    if args.out.resolve() == args.pcap.resolve():
        from idsbench.errors import InputError
        raise InputError(f"--out {args.out} is the capture being read.", fix="write the re-segmented capture to another file.")
    result = resegment(args.pcap, args.out, args.mtu)
    if args.json:
        json.dump({"path": str(args.out), **result.to_dict()}, sys.stdout)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(f"wrote {args.out}: {result.packets_out:,} packets ({result.packets_in:,} read; "
                         f"{result.frames_split:,} frames above MTU {result.mtu} split), largest frame "
                         f"{result.max_frame_out:,} bytes (was {result.max_frame_in:,})\n")
    return 0
