"""Snort 3's capture methods (idsbench.capture): its DAQ modules.

- "afpacket": libdaq's AF_PACKET module (the default), one instance per packet thread in a fanout group;
- "pcap": idsbench's build of libdaq 3.0.25's pcap module (scripts/build-snort.sh, `SnortInstall.pcap_module_dir`):
  its interrupt also breaks libpcap's poll, so Snort stops on a quiet wire (libdaq's own cannot). One packet
  thread: libpcap has no fanout, a second handle would see every packet again.
Snort 3 has no flow bypass to the capture.
"""

from __future__ import annotations

from idsbench.capture import CaptureCatalogue, CaptureMethod, Option

PCAP_DEFAULT_BUFFER = 2 * 1024 * 1024  # libpcap's own default ring (pcap_set_buffer_size unset): 2 MiB

CAPTURE = CaptureCatalogue(
    engine="snort", default="afpacket",
    methods=(CaptureMethod("afpacket", options={"buffer-size-mb": Option("int")}),
             CaptureMethod("pcap", options={"buffer-size": Option("int", minimum=65536)},
                           defaults={"buffer-size": PCAP_DEFAULT_BUFFER})),
    no_bypass="Snort 3 cannot hand flows to the capture to drop")
