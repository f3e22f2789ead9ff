"""vm-vfio on real hosts: inventory variables, `hosts check` items from the sensor's IOMMU facts (the
facts script runs standalone, as on a host without idsbench), and the probe's IOMMU/SR-IOV per NIC."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import asdict

from idsbench.hosts.check import facts_script, vfio_items
from idsbench.hosts.inventory import load_inventory
from idsbench.hosts.protocol import HostFacts
from idsbench.hostspec import HostEntry
from idsbench.probe.iommu import interface_bdf, iommu_facts, pci_device
from idsbench.probe.netif import passthrough
from idsbench.probe.render import passthrough_text
from tests.unit.fake_sysfs import FakeHost

PF = "0000:01:00.0"


def sensor(**kw: object) -> HostEntry:
    return HostEntry(name="s1", role="sensor", address="198.18.0.12", capture_interface="eth1", **kw)


def facts_of(root, *, device: str | None = None, pf_if: str | None = None) -> HostFacts:
    vfio: dict[str, object] = {"iommu": asdict(iommu_facts(root))}
    if device:
        vfio["device"] = asdict(pci_device(device, root))
    if pf_if:
        vfio.update(pf_interface=pf_if, pf=asdict(pci_device(interface_bdf(pf_if, root) or "x", root)))
    return HostFacts.model_validate({"role": "sensor", "vfio": vfio})


def test_inventory_names_the_sensors_vfio_nic(tmp_path):
    inv = tmp_path / "inv.yml"
    inv.write_text("all:\n  children:\n    sensor:\n      hosts:\n        s1:\n          ansible_host: 198.18.0.12\n"
                   "          idsbench_capture_interface: eth1\n          idsbench_sriov_pf: ens2f0\n"
                   "          idsbench_hugepages: 2g\n    sender:\n      hosts:\n        t1:\n"
                   "          ansible_host: 198.18.0.11\n          idsbench_transmit_interface: eth1\n"
                   "          idsbench_vfio_device: \"0000:3b:00.1\"\n")
    hosts = {h.name: h for h in load_inventory(inv).hosts}
    assert (hosts["s1"].sriov_pf, hosts["s1"].hugepages, hosts["s1"].vfio_device) == ("ens2f0", "2g", None)
    assert hosts["t1"].vfio_device == "0000:3b:00.1"


def test_check_items_name_what_is_missing_and_the_fix(tmp_path):
    host = FakeHost(tmp_path).base(iommu=False, dmar=True, vfio_loaded=False)
    host.device(PF, driver="e1000e", netdev="ens2f0")
    items = vfio_items(sensor(sriov_pf="ens2f0", hugepages="1g"), facts_of(tmp_path, pf_if="ens2f0"))
    bad = {i.what: i for i in items if not i.ok}
    assert set(bad) == {"IOMMU", "vfio-pci", "SR-IOV", "hugepages"}
    assert "intel_iommu=on" in bad["IOMMU"].fix and "sriov_numvfs" in bad["SR-IOV"].fix
    assert "/proc/sys/vm/nr_hugepages" in bad["hugepages"].fix


def test_check_items_of_a_ready_sensor(tmp_path):
    host = FakeHost(tmp_path).base(hugepages=(1024, 1024))
    host.device(PF, driver="igb", netdev="ens2f0", totalvfs=7)
    host.device("0000:3b:00.1", driver="vfio-pci")
    items = vfio_items(sensor(sriov_pf="ens2f0", vfio_device="0000:3b:00.1", hugepages="1g"),
                       facts_of(tmp_path, device="0000:3b:00.1", pf_if="ens2f0"))
    assert all(i.ok for i in items), [i for i in items if not i.ok]
    assert [i.what for i in items] == ["IOMMU", "device 0000:3b:00.1", "SR-IOV ens2f0", "hugepages"]
    assert "0 of 7 VFs in use" in items[2].detail


def test_the_facts_script_runs_standalone():
    done = subprocess.run([sys.executable, "-I", "-", "sensor", "lo", "", "0000:00:00.0", "lo"], input=facts_script(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    facts = HostFacts.model_validate_json(done.stdout.strip().splitlines()[-1])
    assert facts.vfio is not None and facts.vfio.pf_interface == "lo" and facts.vfio.pf is None  # lo: not PCI
    assert facts.vfio.device is not None and facts.vfio.device.bdf == "0000:00:00.0"


def test_probe_reports_iommu_group_and_sriov_per_nic(tmp_path):
    host = FakeHost(tmp_path).base()
    host.device(PF, driver="igb", netdev="ens2f0", totalvfs=7, group=3)
    host.device("0000:01:00.1", driver="snd_hda_intel", group=3)
    t = passthrough(PF, tmp_path)
    assert t is not None and (t.iommu_group, t.group_size, t.vfio_viable, t.sriov_totalvfs) == (3, 2, False, 7)
    assert passthrough_text(t) == ("passthrough: IOMMU group 3 (2 function(s), NOT viable: another member has a "
                                   "driver), SR-IOV 0/7 VFs")
    assert passthrough("virtio0", tmp_path) is None and passthrough(None, tmp_path) is None
