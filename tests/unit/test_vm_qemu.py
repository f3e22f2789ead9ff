"""QEMU argv (KVM vs TCG), kernel command line, accelerator choice."""

import json
from pathlib import Path

import pytest

from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.setups.vm import qemu as vm_qemu
from idsbench.setups.vm.image import GUEST_INIT, GuestImage
from idsbench.setups.vm.qemu import AccelChoice, QemuConfig, Share, choose_accel, kernel_cmdline, qemu_argv


def image(tmp_path: Path) -> GuestImage:
    return GuestImage(dir=tmp_path, kernel=tmp_path / "vmlinuz", initrd=tmp_path / "initrd.img",
                      disk=tmp_path / "root.img", kernel_release="6.1.0-1-amd64",
                      suricata_version="7.0.10", key="k", build_s=1.0)


def config(tmp_path: Path, **kw) -> QemuConfig:
    base = dict(name="ibtest-vm", accel="kvm", vcpus=2, memory_mib=1024, image=image(tmp_path),
                console_log=tmp_path / "console.log", ctl_socket=tmp_path / "ctl.sock",
                shares=(Share("ibctl", tmp_path / "ctl", False), Share("ib0", Path("/rules"), True)),
                tap_fd=3, mac="02:00:00:00:00:01", mtu=9000, vhost=True)
    base.update(kw)
    return QemuConfig(**base)


def opt_after(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def test_kvm_argv(tmp_path):
    argv = qemu_argv(config(tmp_path))
    assert argv[0] == "qemu-system-x86_64"
    assert opt_after(argv, "-accel") == ["kvm"]
    assert opt_after(argv, "-cpu") == ["host"]
    assert opt_after(argv, "-smp") == ["2"] and opt_after(argv, "-m") == ["1024M"]
    assert opt_after(argv, "-netdev") == ["tap,id=cap,fd=3,vhost=on"]
    assert opt_after(argv, "-device")[-1] == "virtio-net-pci,netdev=cap,mac=02:00:00:00:00:01,host_mtu=9000"
    assert f"file={tmp_path / 'root.img'},if=virtio,format=raw,snapshot=on,cache=unsafe" in argv
    assert "-no-reboot" in argv and "-nodefaults" in argv


def test_tcg_argv_limits_translation_cache_and_never_uses_vhost(tmp_path):
    argv = qemu_argv(config(tmp_path, accel="tcg", vhost=False))
    assert opt_after(argv, "-accel") == [f"tcg,thread=multi,tb-size={vm_qemu.TCG_TB_MIB}"]
    assert opt_after(argv, "-cpu") == ["max"]
    assert opt_after(argv, "-netdev") == ["tap,id=cap,fd=3,vhost=off"]
    assert vm_qemu.HOST_OVERHEAD_BYTES["tcg"] > vm_qemu.HOST_OVERHEAD_BYTES["kvm"]


def test_shares_control_port_and_console(tmp_path):
    argv = qemu_argv(config(tmp_path))
    fsdevs = opt_after(argv, "-fsdev")
    assert fsdevs == [f"local,id=fs0,path={tmp_path / 'ctl'},security_model=passthrough",
                      "local,id=fs1,path=/rules,security_model=passthrough,readonly=on"]
    devices = opt_after(argv, "-device")
    assert "virtio-9p-pci,fsdev=fs1,mount_tag=ib0" in devices
    assert f"virtserialport,bus=vser.0,chardev=ctl,name={vm_qemu.CTL_PORT}" in devices
    assert f"socket,id=ctl,path={tmp_path / 'ctl.sock'},server=on,wait=off" in opt_after(argv, "-chardev")
    assert f"file,id=con,path={tmp_path / 'console.log'}" in opt_after(argv, "-chardev")


def test_probe_argv_has_no_devices_beyond_disk_and_console(tmp_path):
    cfg = config(tmp_path, ctl_socket=None, shares=(), tap_fd=None, probe=True)
    argv = qemu_argv(cfg)
    assert not opt_after(argv, "-netdev") and not opt_after(argv, "-fsdev") and not opt_after(argv, "-device")
    assert "idsbench.probe=1" in opt_after(argv, "-append")[0].split()


def test_kernel_cmdline(tmp_path):
    words = kernel_cmdline(config(tmp_path)).split()
    assert f"init={GUEST_INIT}" in words and "root=/dev/vda" in words and "console=ttyS0" in words
    assert "ipv6.disable=1" in words and "net.ifnames=0" in words and "panic=-1" in words
    assert "idsbench.probe=1" not in words


@pytest.mark.parametrize("bad", [{"vcpus": 0}, {"memory_mib": 32}])
def test_too_small_vm_is_a_spec_error(tmp_path, bad):
    with pytest.raises(SpecError):
        qemu_argv(config(tmp_path, **bad))


def test_comma_in_a_path_is_refused(tmp_path):
    with pytest.raises(SpecError, match="comma"):
        qemu_argv(config(tmp_path, shares=(Share("ib0", Path("/a,b"), True),)))


def test_accel_tcg_needs_no_probe(tmp_path):
    choice = choose_accel(sup=None, want="tcg", image=image(tmp_path), cache_dir=tmp_path, workdir=tmp_path)
    assert choice.accel == "tcg"


def test_accel_kvm_without_kvm_is_an_environment_error(tmp_path, monkeypatch):
    monkeypatch.setattr(vm_qemu, "kvm_usable_reason", lambda: "/dev/kvm does not exist")
    with pytest.raises(EnvironmentMissing, match="/dev/kvm does not exist"):
        choose_accel(sup=None, want="kvm", image=image(tmp_path), cache_dir=tmp_path, workdir=tmp_path)


def test_accel_auto_falls_back_to_tcg_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(vm_qemu, "kvm_usable_reason", lambda: "/dev/kvm cannot be opened")
    choice = choose_accel(sup=None, want="auto", image=image(tmp_path), cache_dir=tmp_path, workdir=tmp_path)
    assert choice.accel == "tcg" and "/dev/kvm cannot be opened" in choice.reason


def test_accel_auto_uses_the_cached_probe(tmp_path, monkeypatch):
    monkeypatch.setattr(vm_qemu, "kvm_usable_reason", lambda: None)
    monkeypatch.setattr(vm_qemu, "qemu_version", lambda: "7.2.0")
    img = image(tmp_path)
    path = vm_qemu.probe_cache_path(tmp_path, img)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"accel": "kvm", "reason": "KVM boots the guest"}))

    def no_probe(*a, **k):
        raise AssertionError("the cached verdict must be used")

    monkeypatch.setattr(vm_qemu, "probe_kvm", no_probe)
    assert choose_accel(None, "auto", img, tmp_path, tmp_path) == AccelChoice("kvm", "KVM boots the guest")
    path.write_text(json.dumps({"accel": "tcg", "reason": "the guest did not boot under KVM"}))
    assert choose_accel(None, "auto", img, tmp_path, tmp_path).accel == "tcg"


def test_a_guest_without_capture_nic_keeps_ipv6_and_gets_extra_words(tmp_path):
    words = kernel_cmdline(config(tmp_path, tap_fd=None, extra_cmdline=("cgroup_no_v1=all",))).split()
    assert "ipv6.disable=1" not in words  # the runner inside quiets its namespaces through net.ipv6
    assert words[-1] == "cgroup_no_v1=all"


def test_tcg_thread_mode(tmp_path):
    assert opt_after(qemu_argv(config(tmp_path, accel="tcg", tcg_threads="single")), "-accel") == [
        f"tcg,thread=single,tb-size={vm_qemu.TCG_TB_MIB}"]
    assert opt_after(qemu_argv(config(tmp_path, accel="kvm", tcg_threads="single")), "-accel") == ["kvm"]
