"""Flow bypass as an axis (`sensor.bypass`, issue 30 item 3): which bypass each engine can do, with which
capture method, and the settings a run uses written out.

A leaf (imports only errors): the plan checks a spec's bypass values with it before anything starts, the
Suricata adapter renders its config from `settings`.

Modes (docs/capture.md, "Bypass"):
- "off": nothing bypassed (`stream.bypass: no`, Suricata's default);
- "local": Suricata's stream engine bypass: once a flow's reassembly reaches `stream.reassembly.depth`
  (`stream.bypass: yes`), its further packets are still captured and decoded, then skipped
  (flow_bypassed.local_pkts);
- "xdp": AF_PACKET with the XDP filter program on the capture interface (`xdp-filter-file`,
  `bypass: yes`): a bypassed flow's packets are dropped in the driver, before the capture;
- "ebpf": AF_PACKET with the eBPF socket filter (`ebpf-filter-file`, `bypass: yes`): dropped at the socket,
  before the capture ring.
"""

from __future__ import annotations

from collections.abc import Sequence

from idsbench.errors import SpecError

Scalar = str | int | float | bool

MODES = ("off", "local", "xdp", "ebpf")
# engines that can bypass at all (Snort 3 has no flow bypass to the capture; the capture engine inspects nothing)
ENGINES = ("suricata",)
# the capture methods each kernel-side bypass needs (Suricata loads its programs through AF_PACKET only)
CAPTURES: dict[str, tuple[str, ...]] = {"xdp": ("af-packet", "af-packet-v2"), "ebpf": ("af-packet", "af-packet-v2")}
# setup kinds where the kernel-side bypass runs: its eBPF programs and the memlock shim are host files
KERNEL_SETUPS = ("baremetal",)
# the stream depth every mode runs with (Suricata's default, written out so off and on compare like with like)
STREAM_DEPTH = "1mb"
PROGRAMS = {"xdp": "xdp_filter.bpf", "ebpf": "bypass_filter.bpf"}


def mode_of(bypass: str | None) -> str:
    """The mode a case runs: the axis value, else "off"."""
    return bypass if bypass is not None else "off"


def check(engines: Sequence[str], bypasses: Sequence[str | None], captures: Sequence[str | None],
          kinds: Sequence[str] = ("baremetal",)) -> None:
    """SpecError (naming the fix) for an unknown mode, an engine that cannot bypass, a capture method the
    mode cannot work with, or a setup the kernel-side bypass does not run in."""
    modes = [mode_of(b) for b in bypasses]
    for mode in modes:
        if mode not in MODES:
            raise SpecError(f"sensor.bypass = {mode!r} is not a bypass mode.",
                            fix=f"use one of {', '.join(MODES)}.")
    asked = [m for m in modes if m != "off"]
    if not asked:
        return
    for engine in engines:
        if engine not in ENGINES:
            raise SpecError(f"sensor.bypass = {asked[0]!r}: {engine} has no flow bypass "
                            f"({'Snort 3 cannot hand flows to the capture to drop' if engine == 'snort' else 'it inspects nothing'}).",
                            fix=f"use bypass = \"off\" for {engine}, or run {', '.join(ENGINES)} for the bypass axis.")
    for mode in asked:
        need = CAPTURES.get(mode)
        if need is None:
            continue
        for capture in captures:
            method = capture if capture is not None else "af-packet"
            if method not in need:
                raise SpecError(f"sensor.bypass = {mode!r} cannot work with sensor.capture = {method!r}: Suricata "
                                f"loads its {PROGRAMS[mode]} through AF_PACKET only.",
                                fix=f"use capture = \"af-packet\" with bypass = \"{mode}\", or bypass = \"local\" "
                                    f"(the stream engine's bypass works with every capture method).")
        other = [k for k in kinds if k not in KERNEL_SETUPS]
        if other:
            raise SpecError(f"sensor.bypass = {mode!r} does not run in setup {other[0]!r} yet: its eBPF program "
                            "and the memlock shim are host files the sensor loads by path.",
                            fix=f"run bypass = \"{mode}\" with setup.kinds = [\"baremetal\"], or use bypass = "
                                "\"local\" there.")


def settings(mode: str, program: str | None = None, xdp_mode: str = "driver") -> dict[str, Scalar]:
    """The settings a run uses for `mode`, every one written out (what results record). `program`: the
    path of the eBPF object the kernel-side modes load."""
    if mode not in MODES:
        raise ValueError(f"unknown bypass mode {mode!r}")
    out: dict[str, Scalar] = {"stream.bypass": mode != "off", "stream.reassembly.depth": STREAM_DEPTH}
    if mode == "xdp":
        out.update({"af-packet.bypass": True, "af-packet.xdp-filter-file": program or PROGRAMS[mode],
                    "af-packet.xdp-mode": xdp_mode, "af-packet.use-percpu-hash": True})
    elif mode == "ebpf":
        out.update({"af-packet.bypass": True, "af-packet.ebpf-filter-file": program or PROGRAMS[mode],
                    "af-packet.use-percpu-hash": True})
    return out
