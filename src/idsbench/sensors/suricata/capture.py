"""Suricata's capture methods (idsbench.capture): how it reads the wire, the options each method takes,
the defaults written out into the config and the results, and what each method needs or does differently.

- "af-packet": TPACKET_V3, cluster_flow (the default);
- "af-packet-v2": TPACKET_V2 with mmap;
- "af-xdp": an XDP program redirects to an AF_XDP socket;
- "pcap": libpcap.
Config rendering per method: sensors/suricata/config.capture_section.
"""

from __future__ import annotations

from idsbench.capture import CaptureCatalogue, CaptureMethod, Option

CLUSTER_TYPES = ("cluster_flow", "cluster_qm", "cluster_cpu")
PCAP_DEFAULT_BUFFER = 2 * 1024 * 1024  # libpcap's own default ring (pcap_set_buffer_size unset): 2 MiB
KERNEL_BYPASS = ("xdp", "ebpf")  # Suricata loads its bypass programs through AF_PACKET only (idsbench.bypass)

_AFP = {"cluster-type": Option("choice", CLUSTER_TYPES), "ring-size": Option("int"), "use-mmap": Option("bool")}

AF_PACKET = CaptureMethod(
    "af-packet", options={**_AFP, "block-size": Option("int", minimum=4096)},
    defaults={"tpacket-v3": True, "use-mmap": True, "cluster-type": "cluster_flow"}, kernel_bypass=KERNEL_BYPASS)
AF_PACKET_V2 = CaptureMethod(
    "af-packet-v2", options=dict(_AFP),
    defaults={"tpacket-v3": False, "use-mmap": True, "cluster-type": "cluster_flow"}, kernel_bypass=KERNEL_BYPASS)
AF_XDP = CaptureMethod(
    "af-xdp",
    options={"xdp-mode": Option("choice", ("drv", "skb"), aliases=(("driver", "drv"),)),
             "force-bind-mode": Option("choice", ("copy", "zero")), "enable-busy-poll": Option("bool")},
    defaults={"xdp-mode": "drv", "force-bind-mode": "copy", "enable-busy-poll": True},
    # AF_XDP loads an XDP program with bpf(2), which podman 4.3's default seccomp profile allows only with
    # CAP_SYS_ADMIN (docker's with it or CAP_BPF), also what lets the kernel load it (measured in a podman+runc
    # container without it: libbpf "Couldn't load trivial BPF program", "af-xdp: Failed to create socket:
    # Operation not permitted", Suricata 7.0.10 and 8.0.6 exited 1 before they were ready; with it both exact
    # at 1X and 4X). Only such samples get it (container.json records the list).
    container_capabilities=("SYS_ADMIN",),
    # its UMEM frames are libxdp's default 4096 bytes (source-af-xdp.c), of which the kernel keeps XDP's 256
    # bytes of headroom; a larger frame is dropped at the socket (measured in skb mode on ndpi_pinterest.pcap:
    # its 5 frames of 4,226-12,506 bytes lost in every sample, whatever the load)
    max_frame=4096 - 256,
    max_frame_why="Suricata's AF_XDP socket has 4096-byte frames, 256 of them the kernel's XDP headroom; a "
                  "larger frame is dropped at the socket at any load",
    native_xdp_when=("xdp-mode", "drv"),
    native_xdp_fix="set [sensor.capture_options.af-xdp] xdp-mode = \"skb\" (generic XDP: any device)")
PCAP = CaptureMethod(
    "pcap", options={"buffer-size": Option("int", minimum=65536)}, defaults={"buffer-size": PCAP_DEFAULT_BUFFER},
    # libpcap's TPACKET_V3 block timeout is Suricata's pcap timeout (LIBPCAP_COPYWAIT, 500 ms), and a sensor whose
    # packets sit in a block not yet retired looks quiet until then (measured: a sample let go after the drain's
    # 0.2 s left 1498 packets in libpcap's ring): two of those timeouts and some
    quiet_window_s=1.2,
    cold_trials="Suricata's libpcap capture refreshes its kernel counters only when a packet arrives in a new "
                "second (source-pcap.c), so a warm trial's last drops would show in the next trial (measured: 28 "
                "of 42 warm trials 'did not add up')")

CAPTURE = CaptureCatalogue(
    engine="suricata", default="af-packet", methods=(AF_PACKET, AF_PACKET_V2, AF_XDP, PCAP),
    bypass=("local", "xdp", "ebpf"))
