"""lab/vfio_diag: the pure parts (the initrd overlay archive, the variants' IOMMU arguments); the lab's memory guard."""

from __future__ import annotations

import pytest

from idsbench.errors import SpecError
from idsbench.lab import vfio_diag
from idsbench.lab.vfio import LOW_RAM_MAX_MIB, OUTER_KERNEL_ARGS, LabOptions, outer_machine_args, run_lab


def parse_newc(data: bytes) -> dict[str, tuple[int, bytes]]:
    out, off = {}, 0
    while True:
        assert data[off:off + 6] == b"070701"
        fields = [int(data[off + 6 + 8 * i: off + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = data[off + 110: off + 110 + namesize - 1].decode()
        start = (off + 110 + namesize + 3) & ~3
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, data[start:start + size])
        off = (start + size + 3) & ~3


def test_the_overlay_is_a_newc_archive_with_the_init():
    data = vfio_diag.newc({"init": (0o100755, b"#!/bin/sh\necho hi\n"), "x": (0o100644, b"abc")})
    assert len(data) % 4 == 0
    assert parse_newc(data) == {"init": (0o100755, b"#!/bin/sh\necho hi\n"), "x": (0o100644, b"abc")}


def test_the_base_variant_is_the_labs_configuration():
    machine_args, kernel_args = vfio_diag.VARIANTS["base"]
    assert machine_args == outer_machine_args() and kernel_args == OUTER_KERNEL_ARGS
    for name, (args, kargs) in vfio_diag.VARIANTS.items():
        assert args[0] == "-device", name
        if "intremap=off" in args[1] or "virtio-iommu" in args[1]:  # no interrupt remapping: vfio must be told
            assert "vfio_iommu_type1.allow_unsafe_interrupts=1" in kargs, name


def test_like_sensor_puts_a_sensor_vms_other_devices_ahead_of_the_vf(tmp_path):
    argv = vfio_diag.sensor_devices(tmp_path)
    devices = [argv[i + 1].split(",")[0] for i, a in enumerate(argv) if a == "-device"]
    assert devices == ["virtio-serial-pci", "virtio-9p-pci", "virtio-9p-pci", "virtio-9p-pci"]
    drive = argv[argv.index("-drive") + 1]
    assert "if=virtio" in drive and "snapshot=on" in drive
    assert (tmp_path / "blank.img").stat().st_size == 64 << 20


def test_the_lab_refuses_an_outer_vm_with_ram_above_4_gib_before_booting_anything(tmp_path):
    assert LabOptions().memory_mib <= LOW_RAM_MAX_MIB
    with pytest.raises(SpecError) as err:
        run_lab(tmp_path / "missing.toml", tmp_path / "out", options=LabOptions(memory_mib=3584))
    assert "above 4 GiB" in str(err.value) and str(LOW_RAM_MAX_MIB) in err.value.fix
    assert not (tmp_path / "out").exists()
