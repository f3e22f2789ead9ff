"""vm/vm-vfio results: qemu's host memory per sample (peak VmRSS, peak VmLck + VmPin) from monitor.csv,
and the loss waterfall of a setup whose NIC the host cannot count ("wire" invisible)."""

from __future__ import annotations

from idsbench.accounting import WaterfallInput, waterfall
from idsbench.analysis.sample import resources_in_window
from idsbench.metrics import metric
from idsbench.store.schema import CASE_METRICS


def test_host_memory_is_the_peak_of_qemus_columns(tmp_path):
    csv = tmp_path / "monitor.csv"
    csv.write_text("t_unix,sensor_cpu_pct,vm_qemu_rss_bytes,vm_qemu_locked_bytes\n"
                   "1.0,1,100,0\n2.0,1,500,400\n3.0,1,450,400\n")
    res = resources_in_window(csv, 1.0, 3.0)
    assert (res.host_mem_bytes, res.host_mem_locked_bytes) == (500, 400)
    bare = tmp_path / "bare.csv"
    bare.write_text("t_unix,sensor_cpu_pct\n1.0,1\n2.0,1\n")
    assert resources_in_window(bare, 1.0, 2.0).host_mem_bytes is None  # not a VM: no figure, not 0
    assert {"host_mem_bytes", "host_mem_locked_bytes"} <= set(CASE_METRICS)
    assert metric("host_mem_bytes").unit == "MiB" and metric("host_mem_locked_bytes").better == "lower"


def test_a_wire_the_host_cannot_count_lands_in_unaccounted():
    # vm-vfio: the PF's counters do not see what its switch gives the VF; without "wire" the sensor-side
    # NIC's zero would be booked as wire loss of every packet
    w = waterfall(WaterfallInput(sent=100, sender_tx=100, sensor_rx=0, captured=100, decoded=100,
                                 invisible=("wire", "NIC switch", "VF", "guest")))
    assert (w.loss_wire_pkts, w.unaccounted_pkts, w.decoded_pkts) == (0, 0, 100)
    lost = waterfall(WaterfallInput(sent=100, sender_tx=100, sensor_rx=0, captured=90, decoded=90,
                                    invisible=("wire", "guest")))
    assert (lost.loss_wire_pkts, lost.unaccounted_pkts) == (0, 10)
    assert waterfall(WaterfallInput(sent=100, sender_tx=100, sensor_rx=0, captured=0)).loss_wire_pkts == 100
