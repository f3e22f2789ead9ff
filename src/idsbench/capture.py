"""Capture methods as an axis (`sensor.capture`, `sensor.capture_options`): which methods each engine
reads the wire with, which options each method takes, and the effective options a run uses with the
engine's defaults written out (so that a version comparison compares like with like: Suricata 8
changed its AF_PACKET defaults).

A leaf (imports only errors): the plan checks a spec's methods and options with it before anything
starts, the engine adapters render their config from `effective_options`.

Methods (docs/capture.md):
- Suricata: "af-packet" (TPACKET_V3, cluster_flow: the default), "af-packet-v2" (TPACKET_V2 with mmap),
  "af-xdp" (an XDP program redirects to an AF_XDP socket), "pcap" (libpcap);
- Snort 3: its DAQ modules "afpacket" (the default) and "pcap" (idsbench's build of libdaq's: its
  interrupt also breaks libpcap's poll, so Snort stops on a quiet wire);
- the capture-only engine: "afpacket" (ibcapture) and "libpcap" (tcpdump).

`sensor.capture_options`: a plain key applies to every method of the axis (and must belong to each);
a table named after a method (`[sensor.capture_options.af-xdp]`) to that method only, winning over a
plain key of the same name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from idsbench.errors import SpecError

Scalar = str | int | float | bool

METHODS: dict[str, tuple[str, ...]] = {
    "suricata": ("af-packet", "af-packet-v2", "af-xdp", "pcap"),
    "snort": ("afpacket", "pcap"),
    "capture": ("afpacket", "libpcap"),
}
# Methods an engine has but that cannot run a sample here yet, and why (a SpecError before anything starts).
# None now: Snort's pcap DAQ, refused until libdaq 3.0.25's module could be stopped on a quiet wire, runs
# idsbench's build of it (scripts/build-snort.sh; SnortInstall.pcap_module_dir).
REFUSED: dict[tuple[str, str], str] = {}
DEFAULT_METHOD = {"suricata": "af-packet", "snort": "afpacket", "capture": "afpacket"}
CLUSTER_TYPES = ("cluster_flow", "cluster_qm", "cluster_cpu")
XDP_MODES = {"drv": "drv", "driver": "drv", "skb": "skb"}
BIND_MODES = ("copy", "zero")
# libpcap's own default ring (pcap_set_buffer_size unset): 2 MiB
PCAP_DEFAULT_BUFFER = 2 * 1024 * 1024


# How long a sensor must look quiet before the drain lets it go (run/drain.QuietWatch; default QUIET_S, 0.2 s:
# several of AF_PACKET's 10-ms block timeouts): libpcap's TPACKET_V3 block timeout is Suricata's pcap timeout
# (LIBPCAP_COPYWAIT, 500 ms), and a sensor whose packets sit in a block not yet retired looks quiet until then
# (measured: a sample let go after 0.2 s left 1498 packets in libpcap's ring).
QUIET_WINDOW_S: dict[tuple[str, str], float] = {("suricata", "pcap"): 1.2}
# Methods whose live counters a search's warm trials cannot rely on, and why: the search runs them cold (a
# fresh sensor per trial, counted by its exit statistics).
COLD_TRIALS: dict[tuple[str, str], str] = {
    ("suricata", "pcap"): "Suricata's libpcap capture refreshes its kernel counters only when a packet arrives "
                          "in a new second (source-pcap.c), so a warm trial's last drops would show in the next "
                          "trial (measured: 28 of 42 warm trials 'did not add up')",
}


def family(engine: str) -> str:
    """The engine an engine name runs: `suricata@8.0.6+profiling` -> `suricata` (the catalogues' key)."""
    return engine.split("+", 1)[0].split("@", 1)[0]


def cold_trials_reason(engine: str, method: str) -> str | None:
    """Why a search runs `engine`'s `method` with cold trials (COLD_TRIALS), or None."""
    return COLD_TRIALS.get((family(engine), method))


def quiet_window_s(engine: str, method: str, default: float) -> float:
    """How long `engine`'s `method` must look quiet before a drain lets it go (QUIET_WINDOW_S)."""
    return QUIET_WINDOW_S.get((family(engine), method), default)


@dataclass(frozen=True)
class Option:
    """One option of a method: its kind ("int", "bool" or "choice") and the accepted choices."""

    kind: str
    choices: tuple[str, ...] = ()
    minimum: int = 1


_AFP = {"cluster-type": Option("choice", CLUSTER_TYPES), "ring-size": Option("int"), "use-mmap": Option("bool")}
OPTIONS: dict[tuple[str, str], dict[str, Option]] = {
    ("suricata", "af-packet"): {**_AFP, "block-size": Option("int", minimum=4096)},
    ("suricata", "af-packet-v2"): dict(_AFP),
    ("suricata", "af-xdp"): {"xdp-mode": Option("choice", tuple(XDP_MODES)),
                             "force-bind-mode": Option("choice", BIND_MODES),
                             "enable-busy-poll": Option("bool")},
    ("suricata", "pcap"): {"buffer-size": Option("int", minimum=65536)},
    ("snort", "afpacket"): {"buffer-size-mb": Option("int")},
    ("snort", "pcap"): {"buffer-size": Option("int", minimum=65536)},
    ("capture", "afpacket"): {},
    ("capture", "libpcap"): {},
}


# Linux capabilities a method needs inside a container beyond the container setups' own (NET_ADMIN, NET_RAW,
# SYS_NICE, IPC_LOCK: setups/container/runtime.CAPABILITIES). AF_XDP loads an XDP program with bpf(2), which
# podman 4.3's default seccomp profile allows only with CAP_SYS_ADMIN (docker's with it or CAP_BPF), also what
# lets the kernel load it (measured in a podman+runc container without it: libbpf "Couldn't load trivial BPF
# program", "af-xdp: Failed to create socket: Operation not permitted", Suricata 7.0.10 and 8.0.6 exited 1 before
# they were ready; with it both exact at 1X and 4X). Only such samples get it (container.json records the list).
CONTAINER_CAPABILITIES: dict[tuple[str, str], tuple[str, ...]] = {("suricata", "af-xdp"): ("SYS_ADMIN",)}


def container_capabilities(engine: str, method: str) -> tuple[str, ...]:
    """The capabilities `method` needs in a container beyond the setup's own (CONTAINER_CAPABILITIES)."""
    return CONTAINER_CAPABILITIES.get((family(engine), method), ())


def method_of(engine: str, capture: str | None, legacy: str | None = None) -> str:
    """The method a case runs: the axis value, else (capture engine) `sensor.capture_method`, else the
    engine's default."""
    if capture is not None:
        return capture
    if family(engine) == "capture" and legacy is not None:
        return legacy
    return DEFAULT_METHOD.get(family(engine), "")


def options_for(method: str, options: Mapping[str, Scalar | Mapping[str, Scalar]]) -> dict[str, Scalar]:
    """The `sensor.capture_options` that apply to `method`: the plain keys, then its own table."""
    out: dict[str, Scalar] = {k: v for k, v in options.items() if not isinstance(v, Mapping)}
    own = options.get(method)
    if isinstance(own, Mapping):
        out.update(own)
    return out


def _bool(value: Scalar) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in ("yes", "true", "on") else False if text in ("no", "false", "off") else None


def check_value(engine: str, method: str, key: str, value: Scalar) -> Scalar:
    """The option's value as the engine takes it; SpecError naming the fix."""
    known = OPTIONS.get((engine, method), {})
    if key not in known:
        accepted = ", ".join(sorted(known)) or "none"
        raise SpecError(f"sensor.capture_options: {key!r} is not an option of {engine}'s {method!r} capture.",
                        fix=f"{method} takes {accepted}; put a method's own option in "
                            f"[sensor.capture_options.{method}] when the capture axis has several methods.")
    opt = known[key]
    if opt.kind == "bool":
        flag = _bool(value)
        if flag is None:
            raise SpecError(f"sensor.capture_options: {key} = {value!r} is not a yes/no value.",
                            fix=f"write {key} = true or false.")
        return flag
    if opt.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < opt.minimum:
            raise SpecError(f"sensor.capture_options: {key} = {value!r} is not a whole number >= {opt.minimum}.",
                            fix=f"write {key} as an integer (e.g. {max(opt.minimum, 2048)}).")
        return value
    text = str(value)
    if text not in opt.choices:
        raise SpecError(f"sensor.capture_options: {key} = {value!r} is not one of {', '.join(opt.choices)}.",
                        fix=f"use {key} = \"{opt.choices[0]}\" or another of those.")
    return XDP_MODES.get(text, text) if key == "xdp-mode" else text


def check(engines: list[str], captures: list[str | None],
          options: Mapping[str, Scalar | Mapping[str, Scalar]], legacy: str | None = None,
          kinds: Sequence[str] = ()) -> None:
    """SpecError for a method an engine does not have, an unknown option, an option that does not
    belong to a method it applies to (the spec's `sensor.capture`, `sensor.capture_options`), or native
    XDP on a setup whose capture device has none (`kinds`: the spec's setup kinds)."""
    all_methods = {m for ms in METHODS.values() for m in ms}
    tables = [k for k, v in options.items() if isinstance(v, Mapping)]
    for name in tables:
        if name not in all_methods:
            raise SpecError(f"[sensor.capture_options.{name}] names no capture method.",
                            fix=f"use one of {', '.join(sorted(all_methods))}.")
    for name in engines:
        engine = family(name)  # a build (suricata@8.0.6) has its engine's methods
        if engine not in METHODS:
            continue  # an engine without a capture catalogue reads the wire its own way
        for capture in captures:
            method = method_of(engine, capture, legacy)
            if method not in METHODS[engine]:
                raise SpecError(f"sensor.capture = {capture!r}: {engine} has no such capture method.",
                                fix=f"{engine} captures with {', '.join(METHODS[engine])}.")
            if (engine, method) in REFUSED:
                usable = [m for m in METHODS[engine] if (engine, m) not in REFUSED]
                raise SpecError(f"sensor.capture = {capture!r}: {engine}'s {method!r} does not run here yet: "
                                f"{REFUSED[engine, method]}.", fix=f"use {', '.join(usable)} for {engine}.")
            for key, value in options_for(method, options).items():
                check_value(engine, method, key, value)
            if (engine, method) == ("suricata", "af-xdp"):
                _check_xdp_mode(effective_options(engine, method, options_for(method, options)), kinds)


# Setups whose sensor captures on a device without native (driver) XDP: AF_XDP there needs xdp-mode skb.
NO_NATIVE_XDP: dict[str, str] = {
    "container-vtap": "a macvtap's device has no native XDP (measured: Suricata 7.0.10 exits with \"af-xdp: "
                      "Failed to create socket: Operation not supported\"; in skb mode exact, 572 of 572)",
}


def _check_xdp_mode(effective: Mapping[str, Scalar], kinds: Sequence[str]) -> None:
    if effective.get("xdp-mode") != "drv":
        return
    for kind in kinds:
        if kind in NO_NATIVE_XDP:
            raise SpecError(f"sensor.capture = \"af-xdp\" in xdp-mode drv (the default) on setup {kind!r}: "
                            f"{NO_NATIVE_XDP[kind]}.",
                            fix="set [sensor.capture_options.af-xdp] xdp-mode = \"skb\" (generic XDP: any "
                                "device), or run af-xdp on another setup kind.")


def effective_options(engine: str, method: str, options: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """The options a run uses, the engine's defaults written out (what results and the report record).
    Suricata's AF_PACKET block size and threads depend on the run (MTU, CPUs): the config renderer
    completes them."""
    given = {k: check_value(engine, method, k, v) for k, v in options.items()}
    defaults: dict[str, Scalar] = {}
    if (engine, method) == ("suricata", "af-packet"):
        defaults = {"tpacket-v3": True, "use-mmap": True, "cluster-type": "cluster_flow"}
    elif (engine, method) == ("suricata", "af-packet-v2"):
        defaults = {"tpacket-v3": False, "use-mmap": True, "cluster-type": "cluster_flow"}
    elif (engine, method) == ("suricata", "af-xdp"):
        defaults = {"xdp-mode": "drv", "force-bind-mode": "copy", "enable-busy-poll": True}
    elif method == "pcap":
        defaults = {"buffer-size": PCAP_DEFAULT_BUFFER}
    return {**defaults, **given}


def xdp_drops_at_nic(engine: str, method: str, options: Mapping[str, Scalar]) -> bool:
    """Whether the socket's drops are also the interface's rx_dropped: AF_XDP in native (driver) mode,
    where a redirect that finds the socket's ring full is counted by the driver too (veth: measured,
    26728 of 26728). The waterfall books those packets once, at the capture."""
    return (engine, method) == ("suricata", "af-xdp") and options.get("xdp-mode", "drv") == "drv"
