"""The nodetect engine's capture methods (idsbench.capture): its two readers.

- "afpacket": ibcapture (native/src/ibcapture.c), TPACKET_V3 rings in a fanout group — the ring reader alone
  (the default);
- "libpcap": tcpdump writing to /dev/null (libpcap's own TPACKET_V3 ring and drop counters).
Neither takes `sensor.capture_options`: their rings are set with `[sensor.set.nodetect]`. No flow bypass:
the engine inspects nothing.
"""

from __future__ import annotations

from idsbench.capture import CaptureCatalogue, CaptureMethod

AFPACKET, LIBPCAP = "afpacket", "libpcap"

CAPTURE = CaptureCatalogue(engine="nodetect", default=AFPACKET,
                           methods=(CaptureMethod(AFPACKET), CaptureMethod(LIBPCAP)),
                           no_bypass="it inspects nothing")
