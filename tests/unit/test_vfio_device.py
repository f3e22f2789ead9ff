"""vm-vfio's host changes and their undo, on a fake sysfs with a fake kernel: a VF made (autoprobe off),
bound to vfio-pci, and everything given back on close and by `idsbench cleanup` after a SIGKILL; the
qemu argv, the VF settings and the sender port's rewrite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idsbench.errors import EnvironmentMissing
from idsbench.setups.vfio import device
from idsbench.setups.vfio.setup import deliver_argv
from idsbench.setups.vm.image import GuestImage
from idsbench.setups.vm.qemu import QemuConfig, qemu_argv
from idsbench.teardown import TeardownStack, cleanup_stale
from tests.unit.fake_sysfs import FakeHost, FakeKernel

PF = "0000:01:00.0"
VF = "0000:01:10.0"


@pytest.fixture
def host(tmp_path, monkeypatch):
    h = FakeHost(tmp_path / "root").base()
    h.device(PF, driver="igb", netdev="eth0", totalvfs=7)
    kernel = FakeKernel(h)
    monkeypatch.setattr(device, "make_sysfs", lambda root: kernel)
    h.kernel = kernel  # type: ignore[attr-defined]
    return h


def test_vf_made_without_host_driver_bound_to_vfio_and_all_restored(host, tmp_path):
    stack = TeardownStack(state_dir=tmp_path / "state")
    vf = device.make_vf(stack, PF, root=host.root)
    assert vf == VF and host.read(f"sys/bus/pci/devices/{PF}/sriov_numvfs") == "1"
    assert host.driver(VF) is None  # autoprobe was off: igbvf never took it on the host
    dev = device.bind_vfio(stack, VF, root=host.root)
    assert dev.driver == "vfio-pci" and dev.driver_override == "vfio-pci" and dev.physfn == PF
    assert [r.kind for r in stack.resources()] == ["sriov-vfs", "vfio-bind"]
    assert stack.close() == []
    assert host.read(f"sys/bus/pci/devices/{PF}/sriov_numvfs") == "0"
    assert host.read(f"sys/bus/pci/devices/{PF}/sriov_drivers_autoprobe") == "1"
    assert not (host.root / "sys/bus/pci/devices" / VF).exists()
    assert host.driver(PF) == "igb"


def test_a_whole_nic_is_given_back_to_its_driver(host, tmp_path):
    stack = TeardownStack(state_dir=tmp_path / "state")
    device.bind_vfio(stack, PF, root=host.root)
    assert host.driver(PF) == "vfio-pci"
    writes = [w for w in host.kernel.writes]
    assert (f"sys/bus/pci/devices/{PF}/driver/unbind", PF) in writes
    assert (f"sys/bus/pci/devices/{PF}/driver_override", "vfio-pci") in writes
    stack.close()
    assert host.driver(PF) == "igb" and host.read(f"sys/bus/pci/devices/{PF}/driver_override") == "(null)"


def test_cleanup_after_a_sigkill_restores_from_the_state_file(host, tmp_path):
    state = tmp_path / "state"
    stack = TeardownStack(state_dir=state)
    device.bind_vfio(stack, device.make_vf(stack, PF, root=host.root), root=host.root)
    doc = json.loads(stack.state_file.read_text())
    doc["owner_pid"] = 999_999_999  # the run that wrote it is gone
    stack.state_file.write_text(json.dumps(doc))
    removed, failures = cleanup_stale(state)
    assert failures == [] and len(removed) == 2
    assert host.read(f"sys/bus/pci/devices/{PF}/sriov_numvfs") == "0" and host.driver(PF) == "igb"


def test_an_existing_vf_is_reused_and_the_count_left_alone(host, tmp_path):
    host.kernel.write(f"sys/bus/pci/devices/{PF}/sriov_numvfs", "2")  # someone's VFs, probed by igbvf
    assert host.driver(VF) == "igbvf"
    stack = TeardownStack(state_dir=tmp_path / "state")
    assert device.make_vf(stack, PF, root=host.root) == VF
    device.bind_vfio(stack, VF, root=host.root)
    stack.close()
    assert host.read(f"sys/bus/pci/devices/{PF}/sriov_numvfs") == "2" and host.driver(VF) == "igbvf"
    with pytest.raises(EnvironmentMissing, match="does not remove VFs it did not make"):
        device.make_vf(stack, PF, index=3, root=host.root)


def test_a_pf_without_sriov_is_refused(host, tmp_path):
    host.device("0000:02:00.0", driver="igb")
    with pytest.raises(EnvironmentMissing, match="cannot have VF 0"):
        device.make_vf(TeardownStack(state_dir=tmp_path / "s"), "0000:02:00.0", root=host.root)


def test_vf_settings_argv_and_parsing():
    s = device.VfSettings("eth0", "ibx-sen", 0, "02:69:64:73:00:01", vlan=100)
    assert device.vf_argv(s) == ["ip", "-n", "ibx-sen", "link", "set", "dev", "eth0", "vf", "0", "mac",
                                 "02:69:64:73:00:01", "vlan", "100", "spoofchk", "off", "trust", "on"]
    shown = json.dumps([{"ifname": "eth0", "vfinfo_list": [
        {"vf": 0, "address": "00:00:00:00:00:00", "vlan_list": [{"vlan": 0}], "spoofchk": True, "trust": False}]}])
    assert device.parse_vf(shown, "eth0", None, 0) == device.VfSettings("eth0", None, 0, "00:00:00:00:00:00",
                                                                        None, True, False)
    assert device.parse_vf(shown, "eth0", None, 1) is None and device.parse_vf("", "eth0", None, 0) is None


def test_sender_port_addresses_the_vf():
    assert deliver_argv("ns", "eth1", "02:69:64:73:00:01", None) == [
        "tc", "-n", "ns", "filter", "add", "dev", "eth1", "egress", "pref", "49", "matchall", "action", "pedit",
        "ex", "munge", "eth", "dst", "set", "02:69:64:73:00:01"]
    assert deliver_argv("ns", "eth1", "02:69:64:73:00:01", 7)[-6:] == ["pipe", "action", "vlan", "push", "id", "7"]


def test_qemu_argv_passes_the_function_through(tmp_path):
    image = GuestImage(dir=tmp_path, kernel=tmp_path / "k", initrd=tmp_path / "i", disk=tmp_path / "d",
                       kernel_release="6.1", suricata_version="7.0.10", key="k", build_s=0)
    cfg = QemuConfig(name="ib-x", accel="tcg", vcpus=1, memory_mib=512, image=image,
                     console_log=tmp_path / "c.log", vfio_host=VF, machine="q35", mem_path=Path("/dev/hugepages"))
    argv = qemu_argv(cfg)
    assert argv[argv.index("-machine") + 1] == "q35"
    assert argv[argv.index("-device", argv.index("-serial")) + 1] == f"vfio-pci,host={VF}"
    assert argv[argv.index("-mem-path") + 1] == "/dev/hugepages" and "-mem-prealloc" in argv
    assert "ipv6.disable=1" in argv[argv.index("-append") + 1] and "virtio-net-pci" not in " ".join(argv)
    plain = qemu_argv(QemuConfig(name="ib-x", accel="tcg", vcpus=1, memory_mib=512, image=image,
                                 console_log=tmp_path / "c.log"))
    assert plain[plain.index("-machine") + 1] == "pc" and "-mem-path" not in plain


def test_a_virtual_iommu_comes_before_every_pci_device(tmp_path):
    from idsbench.lab.vfio import OUTER_KERNEL_ARGS, outer_machine_args, outer_nic_args

    image = GuestImage(dir=tmp_path, kernel=tmp_path / "k", initrd=tmp_path / "i", disk=tmp_path / "d",
                       kernel_release="6.1", suricata_version="7.0.10", key="k", build_s=0)
    argv = qemu_argv(QemuConfig(name="ib-outer", accel="tcg", vcpus=2, memory_mib=3584, image=image,
                                console_log=tmp_path / "c.log", ctl_socket=tmp_path / "ctl.sock",
                                machine="q35,kernel-irqchip=split", machine_args=outer_machine_args(),
                                extra_args=outer_nic_args(), extra_cmdline=OUTER_KERNEL_ARGS))
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    assert devices[0] == "intel-iommu,intremap=on,caching-mode=on"
    assert "igb,bus=ibrp0,netdev=ibw0,mac=52:54:00:69:64:01" in devices and devices[-1].startswith("virtio-net-pci")
    assert "intel_iommu=on iommu=pt" in argv[argv.index("-append") + 1]


def test_nic_port_state_parsing():
    from idsbench.wire.nic import PortState, parse_port_state

    line = ("3: eth1: <BROADCAST,MULTICAST,PROMISC,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group "
            "default qlen 1000\\    link/ether 52:54:00:69:64:01 brd ff:ff:ff:ff:ff:ff")
    assert parse_port_state(line) == PortState(mtu=1500, up=True, promisc=True)
    assert parse_port_state("2: eth0: <BROADCAST,MULTICAST> mtu 9000 qdisc noop") == PortState(9000, False, False)
    assert parse_port_state("Device \"eth9\" does not exist.") is None
