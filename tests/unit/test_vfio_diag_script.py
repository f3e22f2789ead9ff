"""scripts/vfio_diag.py (`make vfio-diag`, outside the package): it imports and parses its arguments with the
venv's python, and its pure parts (the initrd overlay archive, the variants' IOMMU arguments, the nested VM's
devices, reading its console) hold; the lab's memory guard. Nothing in src/ imports it."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from idsbench.errors import SpecError
from idsbench.lab.vfio import LOW_RAM_MAX_MIB, OUTER_KERNEL_ARGS, LabOptions, outer_machine_args, run_lab

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "vfio_diag.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vfio_diag", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


vfio_diag = _load()


def test_the_script_runs_with_the_venvs_python_and_parses_its_arguments():
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    for flag in ("--wire", "--mtu", "--vm-only", "--like-sensor", "--limit-mib", "--outer-mib", "--no-vm"):
        assert flag in done.stdout
    bad = subprocess.run([sys.executable, str(SCRIPT), "no-such-variant"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    missing = subprocess.run([sys.executable, str(SCRIPT), "base"], capture_output=True, text=True, timeout=60,
                             check=False)
    assert missing.returncode == 2 and "--out DIR is needed" in missing.stderr


def test_nothing_in_the_package_imports_it():
    src = Path(__file__).resolve().parents[2] / "src" / "idsbench"
    assert not (src / "lab" / "vfio_diag.py").exists()
    importing = re.compile(r"^\s*(from|import)\s.*vfio_diag", re.MULTILINE)
    assert [p for p in src.rglob("*.py") if importing.search(p.read_text())] == []


def test_the_nested_vms_console_is_read_for_its_last_count():
    console = "IBDIAG boot 1.0\nIBDIAG rx 3 err 0 drop 0 missed 0\nIBDIAG irq 24: eth0\nIBDIAG rx 23 err 0 drop 0\n"
    assert vfio_diag.rx_packets(console) == 23 and vfio_diag.rx_packets("IBDIAG boot 1.0\n") is None
    ticks = iter([False, False, True])
    assert vfio_diag.wait_until(lambda: next(ticks), 5.0, interval_s=0.0)
    assert not vfio_diag.wait_until(lambda: False, 0.0, interval_s=0.0)


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
