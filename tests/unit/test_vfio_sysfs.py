"""vm-vfio's host checks on fake sysfs trees: IOMMU on/off (and why), vfio-pci, IOMMU group viability,
SR-IOV capacity, hugepages; the errors name what is missing and how to enable it."""

from __future__ import annotations

import pytest

from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.probe.iommu import (
    device_problems,
    hugepage_problems,
    interface_bdf,
    iommu_facts,
    iommu_problems,
    parse_cmdline,
    pci_device,
    sriov_problems,
)
from idsbench.setups.vfio.checks import passthrough_problems, require_passthrough
from idsbench.spec import spec_from_dict
from tests.unit.fake_sysfs import FakeHost

PF = "0000:01:00.0"


def vfio_spec(**setup: object) -> object:
    return spec_from_dict({"name": "v", "setup": {"kinds": ["vm", "vm-vfio"], **setup},
                           "wire": {"sender_interface": "eth1"}})


def test_no_iommu_at_all_says_enable_vtd_in_firmware_and_intel_iommu_on(tmp_path):
    host = FakeHost(tmp_path).base(iommu=False, dmar=False, vfio_loaded=False)
    host.device(PF, driver="igb", netdev="eth0", totalvfs=7)
    facts = iommu_facts(tmp_path)
    assert not facts.enabled and facts.groups == 0 and not facts.vfio_pci_available
    problems = iommu_problems(facts)
    assert [p.what for p in problems] == ["IOMMU", "vfio-pci"]
    assert "no IOMMU" in problems[0].detail and "DMAR" in problems[0].detail
    assert "Intel VT-d" in problems[0].fix and "firmware" in problems[0].fix and "intel_iommu=on" in problems[0].fix
    assert "CONFIG_VFIO_PCI" in problems[1].fix


def test_firmware_on_but_kernel_off_names_the_kernel_parameter(tmp_path):
    FakeHost(tmp_path).base(iommu=False, dmar=True, cmdline="root=/dev/sda1 quiet")
    problems = iommu_problems(iommu_facts(tmp_path))
    assert len(problems) == 1
    assert "does not use it" in problems[0].detail and "no IOMMU parameters" in problems[0].detail
    assert "`intel_iommu=on iommu=pt`" in problems[0].fix


def test_amd_hosts_are_told_about_amd_vi(tmp_path):
    FakeHost(tmp_path).base(iommu=False, dmar=True, vendor="AuthenticAMD", cmdline="quiet amd_iommu=off")
    facts = iommu_facts(tmp_path)
    assert facts.amd and facts.ivrs_table and facts.cmdline == {"amd_iommu": "off"}
    problem = iommu_problems(facts)[0]
    assert "AMD-Vi" in problem.detail and "amd_iommu=off" in problem.detail
    assert "amd_iommu=on iommu=pt" in problem.fix


def test_vfio_module_present_but_not_loaded(tmp_path):
    host = FakeHost(tmp_path).base(vfio_loaded=False)
    host.device(PF, driver="igb")
    mods = tmp_path / "lib/modules/6.1.0-fake/kernel/drivers/vfio/pci"
    mods.mkdir(parents=True)
    (mods / "vfio-pci.ko.xz").write_text("")
    facts = iommu_facts(tmp_path)
    assert facts.enabled and facts.vfio_pci_available and not facts.vfio_pci_loaded
    assert [(p.what, p.fix) for p in iommu_problems(facts)] == [
        ("vfio-pci", "`modprobe vfio-pci` (add vfio-pci to /etc/modules to load it at boot)")]


def test_a_ready_host_has_no_problem(tmp_path):
    host = FakeHost(tmp_path).base()
    host.device(PF, driver="igb", netdev="eth0", totalvfs=7)
    assert iommu_problems(iommu_facts(tmp_path)) == []
    assert passthrough_problems(vfio_device=PF, sriov_pf=None, memory_bytes=1 << 30, hugepages=False,
                                root=tmp_path) == []
    assert passthrough_problems(vfio_device=None, sriov_pf="eth0", memory_bytes=1 << 30, hugepages=False,
                                root=tmp_path) == []


def test_group_viability_every_other_member_unbound_or_vfio(tmp_path):
    host = FakeHost(tmp_path).base()
    host.device("0000:00:01.0", driver="pcieport", pci_class="0x060400", group=5)
    host.device(PF, driver="igb", group=5)
    host.device("0000:01:00.1", driver=None, group=5)
    dev = pci_device(PF, tmp_path)
    assert dev.iommu_group == 5 and [m.bdf for m in dev.group] == ["0000:00:01.0", PF, "0000:01:00.1"]
    assert dev.group[0].bridge and dev.blockers() == ()  # a bridge's port driver and an unbound function
    assert device_problems(dev, what="x") == []
    host.device("0000:01:00.2", driver="snd_hda_intel", pci_class="0x040300", group=5)
    problems = device_problems(pci_device(PF, tmp_path), what="x")
    assert len(problems) == 1 and problems[0].what == "IOMMU group 5"
    assert "0000:01:00.2 (snd_hda_intel)" in problems[0].detail and "vfio-pci or to no driver" in problems[0].detail


def test_missing_device_and_no_group(tmp_path):
    host = FakeHost(tmp_path).base(iommu=False)
    assert "no PCI device 0000:09:00.0" in device_problems(pci_device("0000:09:00.0", tmp_path), what="x")[0].detail
    host.device(PF, driver="igb")
    assert "in no IOMMU group" in device_problems(pci_device(PF, tmp_path), what="x")[0].detail


def test_sriov_capacity_and_the_interface_behind_a_pf(tmp_path):
    host = FakeHost(tmp_path).base()
    host.device(PF, driver="igb", netdev="eth0", totalvfs=7)
    host.device("0000:02:00.0", driver="e1000e", netdev="eth1")
    assert interface_bdf("eth0", tmp_path) == PF and interface_bdf("nope", tmp_path) is None
    pf = pci_device(PF, tmp_path)
    assert (pf.sriov_totalvfs, pf.sriov_numvfs, pf.sriov_autoprobe, pf.netdevs) == (7, 0, True, ("eth0",))
    assert sriov_problems(pf, "eth0") == []
    problem = sriov_problems(pci_device("0000:02:00.0", tmp_path), "eth1")[0]
    assert "no SR-IOV capability" in problem.detail and "sriov_numvfs" in problem.fix


def test_hugepages_where_asked(tmp_path):
    FakeHost(tmp_path).base(hugepages=(128, 100))
    facts = iommu_facts(tmp_path)
    assert (facts.hugepages_total, facts.hugepages_free, facts.hugepage_bytes) == (128, 100, 2 * 1024**2)
    assert hugepage_problems(facts, 200 * 1024**2) == []
    problem = hugepage_problems(facts, 512 * 1024**2)[0]
    assert "the VM needs 512 MiB" in problem.detail
    assert "echo 284 > /proc/sys/vm/nr_hugepages" in problem.fix  # 28 in use + 256 for the VM


def test_cmdline_ignores_init_arguments():
    assert parse_cmdline("ro intel_iommu=on iommu=pt quiet -- amd_iommu=on") == {"intel_iommu": "on", "iommu": "pt"}


def test_spec_needs_exactly_one_passthrough_target():
    with pytest.raises(SpecError, match="exactly one of setup.vfio_device"):
        spec_from_dict({"name": "v", "setup": {"kinds": ["vm-vfio"]}})
    with pytest.raises(SpecError, match="exactly one of setup.vfio_device"):
        spec_from_dict({"name": "v", "setup": {"kinds": ["vm-vfio"], "vfio_device": PF, "sriov_pf": "eth0"}})
    with pytest.raises(SpecError, match="vfio_device"):
        spec_from_dict({"name": "v", "setup": {"kinds": ["vm-vfio"], "vfio_device": "3b:00.1"}})
    spec = vfio_spec(sriov_pf="eth0", sriov_vlan=100)
    assert spec.setup.sriov_mac == "02:69:64:73:00:01" and spec.setup.sriov_vlan == 100


def test_preflight_error_on_a_host_without_iommu_or_sriov(tmp_path):
    host = FakeHost(tmp_path).base(iommu=False, dmar=False, vfio_loaded=False)
    host.device("0000:00:03.0", driver="virtio-pci", netdev="eth0")  # this machine: virtio, no IOMMU
    with pytest.raises(EnvironmentMissing) as err:
        require_passthrough(vfio_spec(sriov_pf="eth0"), root=tmp_path)
    text = str(err.value)
    assert "setup kind 'vm-vfio' cannot run on this host" in text
    for needle in ("IOMMU: no IOMMU", "vfio-pci: the vfio-pci driver", "SR-IOV: eth0", "no SR-IOV capability",
                   "Intel VT-d", "intel_iommu=on", "sriov_numvfs"):
        assert needle in text, needle


def test_preflight_refuses_a_veth_wire_and_passes_other_kinds():
    with pytest.raises(SpecError, match="sender_interface"):
        require_passthrough(spec_from_dict({"name": "v", "setup": {"kinds": ["vm-vfio"], "sriov_pf": "eth0"}}))
    require_passthrough(spec_from_dict({"name": "v", "setup": {"kinds": ["vm"]}}))  # nothing to check
