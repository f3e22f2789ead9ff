"""The nested VFIO lab (`idsbench lab vfio SPEC --out DIR`): a real VFIO path on a machine without an IOMMU.

This machine has no IOMMU and no SR-IOV NIC; QEMU (8 or newer: Debian 12 backports) emulates both. The
lab boots an OUTER VM under TCG from the vm setup's guest image (plus qemu and tcpreplay inside):

    -machine q35 -device intel-iommu,intremap=on,caching-mode=on     (guest kernel: intel_iommu=on iommu=pt)
    -device pcie-root-port,id=ibrp0 -device igb,bus=ibrp0,netdev=w0  the SR-IOV NIC: PF + up to 7 VFs
    -device virtio-net-pci,netdev=w1                                 the sender's port
    -netdev hubport,id=w0,hubid=0 -netdev hubport,id=w1,hubid=0     their backends joined: the cable

and runs `idsbench.lab.vfio_inner` in it: the spec's cases (e.g. kinds = ["vm", "vm-vfio"]) as a local
campaign of the outer VM with the two ports as its NIC wire (wire/nic.py): the replayers send out of the
virtio port in their namespace; the vm case's macvtap sits on the PF; the vm-vfio case makes a VF of the
PF, binds it to vfio-pci and starts the sensor VM (the same image, TCG inside TCG) on it. Results come
back in OUT/campaign (labelled `emulated`), with OUT/inner.json (what the outer VM saw before and after:
leftovers must be none) and the outer VM's console.log, qemu.txt, output.txt (the campaign's progress) and
guestrun.json (its boot and run times).

Everything runs in a teardown stack: Ctrl-C or an error stops the outer VM; `idsbench cleanup` after a
SIGKILL removes its run dir and process.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from idsbench import settings
from idsbench.errors import SpecError
from idsbench.lab.vfio_inner import InnerReport
from idsbench.proc import Supervisor
from idsbench.setups.vm.guestrun import GuestCommand, GuestRunOptions, GuestRunResult, python_paths, run_in_guest
from idsbench.setups.vm.image import ensure_image
from idsbench.spec import Spec, spec_from_dict
from idsbench.store.layout import CAMPAIGN_FILE, LAB_CAMPAIGN_DIR, LAB_INNER_FILE, QEMU_LOG_FILE
from idsbench.store.writers import write_lab_qemu_events, write_lab_spec
from idsbench.teardown import TeardownStack

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the tomli package
    import tomli as tomllib

# The outer VM's own packages (on top of the vm image's): qemu for the sensor VMs inside, tcpreplay
# for the sender, lspci for whoever debugs it. Suricata comes from backports: so does this qemu.
OUTER_PACKAGES = ("qemu-system-x86", "tcpreplay", "pciutils")
PF_MAC = "52:54:00:69:64:01"
SENDER_MAC = "52:54:00:69:64:02"
PLACEHOLDER_PORT = "lab0"  # the spec's ports before the outer VM names them


def outer_machine_args() -> tuple[str, ...]:
    """The virtual IOMMU, before any PCI device (with interrupt remapping, which VFIO needs)."""
    return ("-device", "intel-iommu,intremap=on,caching-mode=on")


def outer_nic_args() -> tuple[str, ...]:
    """An igb (SR-IOV PF) behind a PCIe root port and a virtio-net port, their backends on one hub."""
    return ("-netdev", "hubport,id=ibw0,hubid=0", "-netdev", "hubport,id=ibw1,hubid=0",
            "-device", "pcie-root-port,id=ibrp0,chassis=1,slot=1",
            "-device", f"igb,bus=ibrp0,netdev=ibw0,mac={PF_MAC}",
            "-device", f"virtio-net-pci,netdev=ibw1,mac={SENDER_MAC}")


OUTER_KERNEL_ARGS = ("intel_iommu=on", "iommu=pt")

# The outer qemu's trace events of the VF's data path (patterns; absent ones are no error): VT-d errors,
# warnings and interrupt remapping, the igb's filter drops and the frames it wrote to a queue, VF resets.
# They land in OUT/qemu.txt (qemu's log backend) and are counted in OUT/qemu-events.json.
OUTER_TRACES = ("vtd_err*", "vtd_warn*", "vtd_fault*", "vtd_frr*", "vtd_ce_not_present*",
                "e1000e_rx_flt_dropped*", "e1000e_rx_not_written_to_guest*", "e1000e_rx_written_to_guest*",
                "igb_core_vf_reset*", "virtio_iommu_translate_out*", "virtio_iommu_*fault*")
IR_TRACE = "vtd_ir_remap_msi*"  # one line per interrupt of any device: the diagnostic's minutes only


def trace_args(patterns: tuple[str, ...] = OUTER_TRACES) -> tuple[str, ...]:
    return tuple(a for t in patterns for a in ("-trace", t))


def trace_counts(qemu_log: Path) -> dict[str, int]:
    """How often each trace event occurs in qemu's log (the log backend: `PID@TIME:event args`)."""
    counts: dict[str, int] = {}
    for line in (qemu_log.read_text(errors="replace").splitlines() if qemu_log.exists() else []):
        m = re.match(r"(?:\d+@[\d.]+:)?([a-z][a-z0-9_]+)[ (]", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


# q35 keeps a guest's RAM below 4 GiB up to 0xb0000000 (2816 MiB). With more, part of it lands above 4 GiB
# and the firmware (SeaBIOS) then opens its large 64-bit PCI window high up (0xc0_0000_0000 here): the VFs'
# BARs (64-bit) land there, and the nested sensor VM's igbvf never reaches them (no VF reset in the outer
# qemu's trace, a random MAC, no carrier) while with the BARs below 4 GiB it does (vfio_diag --outer-mib).
LOW_RAM_MAX_MIB = 2815


@dataclass(frozen=True)
class LabOptions:
    vcpus: int = 2
    memory_mib: int = 2560       # a pinned 1 GiB sensor VM, its qemu, the runner, the page cache (<= LOW_RAM_MAX_MIB)
    boot_timeout_s: float = 900.0
    timeout_s: float = 6 * 3600.0
    tcg_threads: str = "multi"


@dataclass(frozen=True)
class LabRun:
    out_dir: Path
    guest: GuestRunResult
    inner: InnerReport | None    # OUT/inner.json (None when the outer VM wrote none)
    wall_s: float

    problems: tuple[str, ...] = ()  # lab_problems of the campaign
    qemu_events: dict[str, int] | None = None  # the outer qemu's data-path trace events, counted

    @property
    def ok(self) -> bool:
        inner_ok = self.inner is None or (not self.inner.leftovers and self.inner.error is None)
        return self.guest.exit_code == 0 and inner_ok and not self.problems


def lab_problems(campaign_dir: Path) -> list[str]:
    """What the lab must show, per case: exact (decoded = replayers x loops x trace packets, no drops); a
    vm-vfio VM holding >= 90% of its memory size on the host, a vm VM less."""
    from idsbench.analysis.cases import case_table
    from idsbench.spec import parse_size
    from idsbench.store.reader import load_campaign

    out = []
    for row in case_table(load_campaign(campaign_dir)):
        p, m = row.params, row.medians
        expected = p.replayers * p.loops * (m.get("trace_pkts") or 0)
        if row.status != "ok" or m.get("dropped_pkts") or m.get("decoded_pkts") != expected:
            out.append(f"{p.setup}: not exact ({row.status}: decoded {m.get('decoded_pkts')} of {expected:.0f}, "
                       f"dropped {m.get('dropped_pkts')}, unaccounted {m.get('unaccounted_pkts')})")
        held, size = m.get("host_mem_bytes"), parse_size(p.memory) if p.memory else None
        if size and held is not None:
            share = held / size
            if (p.setup == "vm-vfio") != (share >= 0.9):
                out.append(f"{p.setup}: qemu holds {held / 2**20:.0f} MiB on the host, {share:.0%} of its "
                           f"{size / 2**20:.0f} MiB")
    return out


TomlTable = dict[str, object]  # a TOML table as tomllib reads it


def _table(doc: TomlTable, key: str, path: Path) -> TomlTable:
    """doc[key], a table (made empty when absent)."""
    value = doc.setdefault(key, {})
    if not isinstance(value, dict):
        raise SpecError(f"{path}: [{key}] is not a table.", fix=f"write it as a [{key}] section.")
    return value


def lab_spec(path: Path) -> tuple[TomlTable, Spec]:
    """The spec as a document for the outer VM (trace paths made absolute, the ports as placeholders the
    inner side replaces), validated here first so a bad spec fails before the outer VM boots."""
    doc: TomlTable = tomllib.loads(path.read_text())
    base = path.resolve().parent
    traffic = _table(doc, "traffic", path)
    traces = traffic.get("traces", [])
    traffic["traces"] = [t if t.startswith("builtin:") else str((base / t).resolve())
                         for t in (traces if isinstance(traces, list) else [traces]) if isinstance(t, str)]
    _table(doc, "setup", path).setdefault("sriov_pf", PLACEHOLDER_PORT)  # the outer VM names the ports
    _table(doc, "wire", path).setdefault("sender_interface", PLACEHOLDER_PORT)
    return doc, spec_from_dict(doc, source=str(path), base_dir=base)


def run_lab(spec_path: Path, out_dir: Path, *, cache_dir: Path | None = None, state_dir: Path | None = None,
            options: LabOptions | None = None, log: Callable[[str], None] = lambda _l: None) -> LabRun:
    opts = options or LabOptions()
    if opts.memory_mib > LOW_RAM_MAX_MIB:
        raise SpecError(f"the outer VM's {opts.memory_mib} MiB put part of its RAM above 4 GiB, and with it the VFs' "
                        "BARs into the firmware's high 64-bit window, where the nested sensor VM cannot reach them.",
                        fix=f"give the outer VM at most {LOW_RAM_MAX_MIB} MiB (--memory; default "
                            f"{LabOptions().memory_mib}).")
    cache = cache_dir or settings.cache_dir()
    out = out_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    doc, spec = lab_spec(spec_path)
    spec_json = write_lab_spec(out, doc)
    from idsbench.sensors import registry

    packages = tuple(dict.fromkeys((*OUTER_PACKAGES, *(p for name in spec.sensor.engine
                                                       for p in registry.engine(name).image_packages()))))
    log("guest image (debootstrap once, then cached)")
    image = ensure_image(cache, None, packages)
    traces = tuple(Path(t).parent for t in spec.traffic.trace_refs() if not t.startswith("builtin:"))
    env = (("IDSBENCH_VM_IMAGE", str(image.dir)), ("IDSBENCH_CACHE", "/tmp/ibcache"),
           ("IDSBENCH_PREFIX", settings.name_prefix()), ("IDSBENCH_STATE_DIR", "/run/idsbench"),
           ("PYTHONDONTWRITEBYTECODE", "1"), ("HOME", "/root"), ("LC_ALL", "C.UTF-8"),
           ("PATH", f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin"))
    command = GuestCommand(argv=(sys.executable, "-m", "idsbench.lab.vfio_inner", str(spec_json), str(out)),
                           env=env)
    guest_opts = GuestRunOptions(
        name=f"{settings.name_prefix()}-vfiolab", vcpus=opts.vcpus, memory_mib=opts.memory_mib, accel="tcg",
        cgroup_v2=True, tcg_threads="multi" if opts.tcg_threads == "multi" else "single", extra_packages=packages,
        read_only=(image.dir, *traces, *python_paths()), boot_timeout_s=opts.boot_timeout_s,
        timeout_s=opts.timeout_s, machine="q35,kernel-irqchip=split", machine_args=outer_machine_args(),
        qemu_args=(*outer_nic_args(), *trace_args()),
        kernel_args=OUTER_KERNEL_ARGS)
    t0 = time.monotonic()
    log(f"outer VM: {opts.vcpus} vCPUs, {opts.memory_mib} MiB, TCG; the campaign runs inside (its output: "
        f"{out}/output.txt)")
    with TeardownStack(state_dir=state_dir or settings.state_dir()) as td:
        result = run_in_guest(Supervisor(td), command, out, cache_dir=cache, options=guest_opts)
    inner_file = out / LAB_INNER_FILE
    inner = InnerReport.model_validate_json(inner_file.read_text()) if inner_file.exists() else None
    events = trace_counts(out / QEMU_LOG_FILE)
    write_lab_qemu_events(out, events)
    campaign = out / LAB_CAMPAIGN_DIR
    problems = tuple(lab_problems(campaign)) if (campaign / CAMPAIGN_FILE).exists() else \
        ("the outer VM left no campaign",)
    return LabRun(out, result, inner, round(time.monotonic() - t0, 1), problems, events)
