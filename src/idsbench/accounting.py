"""The loss waterfall: where every packet the replayers sent ended up (pure arithmetic).

    sent ─(sender loss: the replayers counted it, the sender NIC did not transmit it)─►
    sender tx ─(wire loss: transmitted, never received: a lossy tap/SPAN, netem)─►
    sensor rx ─(NIC loss: rx_dropped of the sensor-side interface)─►
    softnet ─(softnet backlog drops, host-wide /proc/net/softnet_stat)─►
    captured ─(capture loss: the capture ring was full, capture.kernel_drops; per method: AF_PACKET's
               ring drops, AF_XDP's socket drops, libpcap's ps_drop, Snort's daq.dropped)─►
    decoded  (+ unprocessed: captured, still in the ring when the sensor stopped)

Bypass (idsbench.bypass) is its own line, dropped by design, neither lost nor inspected: packets the XDP or
eBPF filter dropped for a bypassed flow never reach the capture (between the NIC and `captured`), packets
the stream engine skipped (local bypass) were captured and decoded, then not inspected; `decoded_pkts`
here is what was inspected (decoded − locally bypassed). So sent = every loss + bypassed + unprocessed +
decoded (+ unaccounted).

`unaccounted` = sent − every loss − unprocessed − decoded: 0 on a setup where every counter is
visible. A point that cannot be seen from the host (inside a VM guest, the path between the
macvtap and the guest's capture) is listed in `invisible` and its loss lands in `unaccounted`.

The result is the stored record `store.waterfall.Waterfall` (a search trial's `waterfall` in search.json).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from idsbench.store.waterfall import Waterfall

if TYPE_CHECKING:
    from idsbench.counters import Counters
    from idsbench.store.schema import WireRecord


@dataclass(frozen=True)
class WaterfallInput:
    sent: int
    sender_tx: int | None          # None: interface counters not read
    sensor_rx: int | None
    impaired: bool = False         # an emulated lossy tap: what the sender NIC did not transmit is wire loss
    sensor_rx_dropped: int = 0
    softnet_dropped: int = 0
    captured: int = 0
    dropped: int = 0
    decoded: int = 0
    invisible: tuple[str, ...] = ()
    dropped_at_nic: int = 0        # of `dropped`, those the interface's rx_dropped counted too (native XDP)
    bypassed: int = 0              # packets of bypassed flows not inspected (kernel filter + local)
    bypassed_local: int = 0        # of `bypassed`, those captured and decoded first (local bypass)


def waterfall(w: WaterfallInput) -> Waterfall:
    """Attribute every packet of `w.sent` to a drop point; see the module docstring."""
    unprocessed = w.captured - w.decoded - w.dropped
    # AF_XDP in native mode: a redirect that found the socket's ring full is the interface's rx_dropped AND
    # the socket's drop; the interface's receive count holds it too. Booked once, at the capture.
    overlap = min(max(0, w.sensor_rx_dropped), max(0, w.dropped_at_nic))
    rx_dropped = w.sensor_rx_dropped - overlap
    if w.sender_tx is None or w.sensor_rx is None or "wire" in w.invisible:  # "wire": a setup's own NIC
        loss_sender = loss_wire = loss_nic = 0
        invisible = tuple(dict.fromkeys((*w.invisible, "wire")))
    else:
        untransmitted = max(0, w.sent - w.sender_tx)
        loss_sender = 0 if w.impaired else untransmitted
        loss_wire = (untransmitted if w.impaired else 0) + max(0, w.sender_tx - w.sensor_rx - rx_dropped)
        loss_nic = rx_dropped
        invisible = w.invisible
    # Softnet drops are host-wide: count only what the sensor side is missing.
    arrived = w.sent - loss_sender - loss_wire - loss_nic
    # Bypassed before the capture (the XDP/eBPF filter dropped them): arrived, never captured, not lost.
    before_capture = max(0, w.bypassed - w.bypassed_local)
    loss_softnet = min(max(0, w.softnet_dropped), max(0, arrived - before_capture - w.captured))
    unaccounted = arrived - loss_softnet - before_capture - w.captured
    return Waterfall(
        sent=w.sent, loss_sender_pkts=loss_sender, loss_wire_pkts=loss_wire, loss_nic_pkts=loss_nic,
        loss_softnet_pkts=loss_softnet, loss_capture_pkts=w.dropped, unprocessed_pkts=unprocessed,
        decoded_pkts=w.decoded - w.bypassed_local, bypassed_pkts=w.bypassed, unaccounted_pkts=unaccounted,
        invisible=invisible,
    )


def waterfall_of(sent: int, wire: WireRecord | None, counters: Counters, invisible: tuple[str, ...]) -> Waterfall:
    """The waterfall of a sample or trial from its sent count, wire record and sensor counters."""
    return waterfall(WaterfallInput(
        sent=sent, sender_tx=wire.sender_tx_pkts if wire else None, sensor_rx=wire.sensor_rx_pkts if wire else None,
        impaired=wire.impaired if wire else False, sensor_rx_dropped=wire.sensor_rx_dropped if wire else 0,
        softnet_dropped=wire.softnet_dropped if wire else 0, captured=counters.captured_pkts,
        dropped=counters.dropped_pkts, decoded=counters.decoded_pkts, invisible=invisible,
        dropped_at_nic=counters.dropped_at_nic_pkts, bypassed=counters.bypassed_pkts,
        bypassed_local=counters.bypassed_local_pkts))
