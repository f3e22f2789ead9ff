"""Flow bypass as an axis (`sensor.bypass`, issue 30 item 3): which bypass a campaign's engines can do, with
which capture method, on which setup — checked before anything starts.

The package is the bypass's one room:
- here, the axis: the modes and the spec check, which reads what each engine declares in its capture
  catalogue (idsbench.capture: `CaptureCatalogue.bypass`, `CaptureMethod.kernel_bypass`);
- `bypass.suricata`: Suricata's settings per mode and the eBPF programs of its kernel-side modes;
- `bypass.counting`: what the kernel-side filters dropped (the interface's XDP drops, the socket filter's maps).

Modes (docs/capture.md, "Bypass"):
- "off": nothing bypassed;
- "local": the stream engine's bypass: once a flow's reassembly reaches the stream depth its further packets
  are still captured and decoded, then skipped;
- "xdp": an XDP filter program on the capture interface drops a bypassed flow's packets in the driver;
- "ebpf": an eBPF socket filter drops them at the socket, before the capture ring.

A leaf here (imports only errors and the capture axis' types).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from idsbench.capture import VETH_NATIVE_XDP_MAX_MTU, VETH_SETUPS, CaptureCatalogue
from idsbench.errors import SpecError

MODES = ("off", "local", "xdp", "ebpf")
KERNEL_MODES = ("xdp", "ebpf")  # loaded into the kernel: they need a capture method that loads them
# setup kinds where the kernel-side bypass runs: its eBPF programs and the memlock shim are host files
KERNEL_SETUPS = ("baremetal",)


def mode_of(bypass: str | None) -> str:
    """The mode a case runs: the axis value, else "off"."""
    return bypass if bypass is not None else "off"


def check(catalogues: Mapping[str, CaptureCatalogue], bypasses: Sequence[str | None],
          captures: Sequence[str | None], kinds: Sequence[str] = ("baremetal",)) -> None:
    """SpecError (naming the fix) for an unknown mode, an engine that cannot bypass, a capture method the
    mode cannot work with, or a setup the kernel-side bypass does not run in. `catalogues`: each engine
    of the spec by name (sensors.registry.capture_methods)."""
    modes = [mode_of(b) for b in bypasses]
    for mode in modes:
        if mode not in MODES:
            raise SpecError(f"sensor.bypass = {mode!r} is not a bypass mode.",
                            fix=f"use one of {', '.join(MODES)}.")
    asked = [m for m in modes if m != "off"]
    if not asked:
        return
    able = [name for name, cat in catalogues.items() if cat.bypass]
    for name, catalogue in catalogues.items():
        missing = [m for m in asked if m not in catalogue.bypass]
        if missing:
            has = f"{catalogue.engine} has no flow bypass ({catalogue.no_bypass})" if not catalogue.bypass else \
                f"{catalogue.engine} has no {missing[0]!r} bypass (it has {', '.join(catalogue.bypass)})"
            raise SpecError(f"sensor.bypass = {missing[0]!r}: {has}.",
                            fix=f"use bypass = \"off\" for {name}"
                                + (f", or run {', '.join(able)} for the bypass axis." if able else "."))
    for mode in (m for m in asked if m in KERNEL_MODES):
        for catalogue in catalogues.values():
            for capture in captures:
                method = catalogue.method(capture)
                if mode not in method.kernel_bypass:
                    loaders = [m.name for m in catalogue.methods if mode in m.kernel_bypass]
                    raise SpecError(f"sensor.bypass = {mode!r} cannot work with sensor.capture = {method.name!r}: "
                                    f"{catalogue.engine} loads its {mode} program through "
                                    f"{' or '.join(loaders) or 'no capture method'} only.",
                                    fix=f"use capture = \"{loaders[0] if loaders else catalogue.default}\" with bypass "
                                        f"= \"{mode}\", or bypass = \"local\" (the stream engine's bypass works with "
                                        "every capture method).")
        other = [k for k in kinds if k not in KERNEL_SETUPS]
        if other:
            raise SpecError(f"sensor.bypass = {mode!r} does not run in setup {other[0]!r} yet: its eBPF program "
                            "and the memlock shim are host files the sensor loads by path.",
                            fix=f"run bypass = \"{mode}\" with setup.kinds = [\"baremetal\"], or use bypass = "
                                "\"local\" there.")


def frame_problem(bypass: str | None, kind: str, max_frame: int, mtu: int) -> str | None:
    """Why the bypass mode cannot work on setup `kind` for a trace whose largest frame is `max_frame` bytes on
    a wire of `mtu`; None when it can. The "xdp" mode loads its filter in the driver (bypass.suricata): a
    veth takes it only up to VETH_NATIVE_XDP_MAX_MTU, and above it Suricata goes on without it (measured on
    ndpi_pinterest.pcap at MTU 12,506: "Unable to set XDP on 'ibrx0': Numerical result out of range",
    every flow_bypassed counter 0)."""
    if mode_of(bypass) == "xdp" and kind in VETH_SETUPS and mtu > VETH_NATIVE_XDP_MAX_MTU:
        return (f"sensor.bypass = \"xdp\" loads its filter into the veth's driver, which takes an MTU of at most "
                f"{VETH_NATIVE_XDP_MAX_MTU:,} (above it Suricata runs without the filter and bypasses nothing), and "
                f"the trace's largest frame ({max_frame:,} bytes) needs a wire MTU of {mtu:,}")
    return None
